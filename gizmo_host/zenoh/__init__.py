"""A fleet over Zenoh: the host's JSON lines on ``gizmo/<vehicle>/<type>``, a fleet view, and
ROS 2 messages on the same sessions (the ``zenoh`` and ``ros2`` extras).

- ``config``: ``[zenoh]`` (``ZenohConfig``), the key expressions, the session's settings;
- ``session``: opening a session from them (and a router session for the demo and tests);
- ``sink``: ``ZenohOutput``, a ``Host`` output publishing every line on its type's key (and, with
  ``ros2``, each world snapshot as ROS 2 messages) from a thread of its own behind a bounded
  queue, and answering ``gizmo/<vehicle>/world/latest``;
- ``fleet``: the fleet view's pure logic (fresh or stale by the viewer's own receive time);
- ``watch``: the fleet view's subscriber and its output (``gizmo-host fleet``).

Only this package imports ``zenoh`` (an import-linter contract), and nothing imports it unless
``[zenoh] enabled`` or a fleet command asks for it.
"""
