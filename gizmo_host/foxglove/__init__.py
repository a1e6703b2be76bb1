"""The Foxglove view (the ``foxglove`` extra; the only importer of ``foxglove``).

One contract (``topics``) for the live WebSocket server (``server``), the channels a capture
records (``capture``) and the shipped layout (``layout``). ``scene`` and ``camera`` are pure:
a world line (``WorldSnapshot.to_dict()``) in, Foxglove messages out; ``render`` turns every
message the host publishes into ``(topic, message, log_ns)`` for any of those sinks.
See docs/foxglove.md.
"""
