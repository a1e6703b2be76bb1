"""The Foxglove view (the ``foxglove`` extra; the only importer of ``foxglove``).

One contract (``topics``, ``schemas``) for the live WebSocket server (``server``), the
channels a capture records (``capture``) and the shipped layout (``layout``). ``scene`` and
``camera`` are pure: a world line (``WorldSnapshot.to_dict()``) or a result in, Foxglove
messages out; ``render`` turns every message the host publishes into ``(topic, message,
log_ns)`` for any of those sinks; ``rfly_images`` receives RflySim's camera image for it.
See docs/foxglove.md.
"""
