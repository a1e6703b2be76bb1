"""Record and replay in MCAP: the serial bytes, the RflySim datagrams and the host's output.

``channels`` defines the topics, encodings and schemas; ``writer`` and ``reader`` put them in
and take them out of an MCAP file; ``background`` writes from a thread behind a bounded queue;
``settings`` is what a capture carries so that its replay computes what the live host did.
Recording a running host, playing into a pty and UDP and the offline replay through the live
``Host`` are the application layer's (``gizmo_host.app.recorder``, ``player``, ``replay``).
"""
