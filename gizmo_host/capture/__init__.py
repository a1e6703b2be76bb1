"""Record and replay in MCAP: the serial bytes, the RflySim datagrams and the host's output.

``channels`` defines the topics, encodings and schemas; ``writer`` and ``reader`` put them in
and take them out of an MCAP file; ``background`` writes from a thread behind a bounded queue;
``offline`` replays a capture's inputs through the host's own pipeline on the recorded times.
The live ends (recording a running link, playing into a pty and UDP) are ``gizmo-host record``
and ``gizmo-host replay`` (``gizmo_host.cli``).
"""
