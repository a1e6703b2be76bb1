"""The application layer: the settings table and ``HostConfig``, and the ``Host`` that every
command builds (``run``, ``record``, ``demo``, ``replay --offline``). The CLI parses arguments,
calls in here and returns an exit status; the layers below know nothing of either."""
