"""The frame codec: bytes <-> typed values. No clocks, no I/O."""
