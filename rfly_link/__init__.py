"""RflySim UDP protocols: sans-I/O codecs, fragment reassembly, endpoints and clients."""
