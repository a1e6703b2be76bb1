"""ROS 2 messages from world snapshots, without a ROS install (the ``ros2`` extra: rosbags).

- ``frames``: NED/FRD to ROS' ENU/FLU, done once, here;
- ``messages``: ``vision_msgs/Detection3DArray`` and ``geometry_msgs/PoseStamped`` in the
  ``map`` frame, stamped on the wall clock, as CDR (rosbags' typestore, Jazzy's definitions);
- ``keys``: the key expressions of zenoh-bridge-ros2dds and of rmw_zenoh (Jazzy), and
  rmw_zenoh's mandatory attachment.

Only this package imports ``rosbags``; it imports no ``zenoh`` (``gizmo_host.zenoh`` puts).
"""
