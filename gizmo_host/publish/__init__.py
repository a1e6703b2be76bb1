"""Publishing: JSON Lines to every sink (``lines``), each sink with its own bounded queue so a
stalled reader holds up nobody else (``sinks``)."""
