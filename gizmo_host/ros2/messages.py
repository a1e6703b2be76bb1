"""World snapshots as ROS 2 messages (CDR bytes through rosbags' Jazzy typestore).

``vision_msgs`` is not in rosbags' stores: its five definitions (vision_msgs 4.1, Jazzy's) are
registered from their ``.msg`` field lists, which is all a RIHS01 hash is computed from.

- ``Detection3DArray`` (``/gizmo/<vehicle>/detections``): the PROCEED targets that are located
  (a position); HOLD targets and bearing-only ones are left out (a ROS consumer reading a pose
  must not act on a target the host says not to). Each detection's ``id`` is the target's key,
  its hypothesis the label with ``score`` = confidence / 100; its pose (and box centre) is the
  position in ``map`` with the orientation of the line of sight (x along the bearing); the box
  size and the covariance are zeros (not estimated).
- ``PoseStamped`` (``/gizmo/<vehicle>/pose``): the vehicle (FLU body in ENU).

Stamps are on the wall clock: the array's is the snapshot's ``wall_ns``, a detection's its
capture time, the pose's the pose time, each mapped by the snapshot's own ``host_ns`` ->
``wall_ns`` offset. A snapshot without ``wall_ns`` gives no message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from fusion import TargetState, WorldSnapshot
from gizmo_core import Decision
from gizmo_host.ros2.frames import enu_flu_from_ned_frd, enu_from_ned, line_of_sight

FRAME_ID = "map"
DETECTIONS = "vision_msgs/msg/Detection3DArray"
POSE = "geometry_msgs/msg/PoseStamped"
_VISION_MSGS = {
    "vision_msgs/msg/ObjectHypothesis": "string class_id\nfloat64 score\n",
    "vision_msgs/msg/ObjectHypothesisWithPose": (
        "vision_msgs/ObjectHypothesis hypothesis\ngeometry_msgs/PoseWithCovariance pose\n"
    ),
    "vision_msgs/msg/BoundingBox3D": "geometry_msgs/Pose center\ngeometry_msgs/Vector3 size\n",
    "vision_msgs/msg/Detection3D": (
        "std_msgs/Header header\nvision_msgs/ObjectHypothesisWithPose[] results\n"
        "vision_msgs/BoundingBox3D bbox\nstring id\n"
    ),
    DETECTIONS: "std_msgs/Header header\nvision_msgs/Detection3D[] detections\n",
}


def typestore() -> Any:
    """Jazzy's message types with vision_msgs registered (a new store each call: no global)."""
    store = get_typestore(Stores.ROS2_JAZZY)
    types: dict[str, Any] = {}
    for name, text in _VISION_MSGS.items():
        types.update(get_types_from_msg(text, name))
    store.register(types)
    return store


@dataclass(frozen=True, slots=True)
class Ros2Messages:
    """One snapshot's messages as CDR bytes (None: none to publish: no wall clock, or, for
    the pose, no vehicle)."""

    detections: bytes | None
    pose: bytes | None


class MessageBuilder:
    """Builds and serializes the messages (about 40 µs a snapshot with two targets)."""

    def __init__(self, store: Any = None) -> None:
        self.store = store if store is not None else typestore()
        t = self.store.types
        self._time, self._header = t["builtin_interfaces/msg/Time"], t["std_msgs/msg/Header"]
        self._point, self._quat = t["geometry_msgs/msg/Point"], t["geometry_msgs/msg/Quaternion"]
        self._pose, self._vector = t["geometry_msgs/msg/Pose"], t["geometry_msgs/msg/Vector3"]
        self._pose_cov = t["geometry_msgs/msg/PoseWithCovariance"]
        self._pose_stamped = t[POSE]
        self._hypothesis = t["vision_msgs/msg/ObjectHypothesis"]
        self._with_pose = t["vision_msgs/msg/ObjectHypothesisWithPose"]
        self._box = t["vision_msgs/msg/BoundingBox3D"]
        self._detection = t["vision_msgs/msg/Detection3D"]
        self._array = t[DETECTIONS]

    def hash_rihs01(self, type_name: str) -> str:
        return str(self.store.hash_rihs01(type_name))

    def build(self, snapshot: WorldSnapshot) -> Ros2Messages:
        if snapshot.wall_ns is None:
            return Ros2Messages(None, None)
        return Ros2Messages(self.detections_cdr(snapshot), self.pose_cdr(snapshot))

    def detections_cdr(self, snapshot: WorldSnapshot) -> bytes:
        return bytes(self.store.serialize_cdr(self.detections(snapshot), DETECTIONS))

    def pose_cdr(self, snapshot: WorldSnapshot) -> bytes | None:
        message = self.pose(snapshot)
        return None if message is None else bytes(self.store.serialize_cdr(message, POSE))

    # -- messages --------------------------------------------------------------------------

    def detections(self, snapshot: WorldSnapshot) -> Any:
        offset = _offset(snapshot)
        detections = [
            self._target(t, t.capture_ns + offset)
            for t in snapshot.targets
            if t.verdict is Decision.PROCEED and t.position_ned_m is not None
        ]
        return self._array(header=self._stamped(snapshot.host_ns + offset), detections=detections)

    def pose(self, snapshot: WorldSnapshot) -> Any:
        vehicle = snapshot.vehicle
        if vehicle is None:
            return None
        pose = self._pose(
            position=self._point(*enu_from_ned(vehicle.position_ned_m)),
            orientation=self._quaternion(enu_flu_from_ned_frd(vehicle.quaternion_wxyz)),
        )
        return self._pose_stamped(
            header=self._stamped(vehicle.time_ns + _offset(snapshot)), pose=pose
        )

    def _target(self, target: TargetState, wall_ns: int) -> Any:
        assert target.position_ned_m is not None
        position = self._point(*enu_from_ned(target.position_ned_m))
        bearing = target.bearing_ned
        orientation = self._quaternion(
            (1.0, 0.0, 0.0, 0.0) if bearing is None else line_of_sight(enu_from_ned(bearing))
        )
        pose = self._pose(position=position, orientation=orientation)
        hypothesis = self._hypothesis(class_id=target.label, score=target.confidence / 100.0)
        result = self._with_pose(
            hypothesis=hypothesis,
            pose=self._pose_cov(pose=pose, covariance=np.zeros(36, dtype=np.float64)),
        )
        return self._detection(
            header=self._stamped(wall_ns),
            results=[result],
            bbox=self._box(center=pose, size=self._vector(0.0, 0.0, 0.0)),
            id=target.key,
        )

    def _stamped(self, wall_ns: int) -> Any:
        sec, nanosec = divmod(wall_ns, 1_000_000_000)
        return self._header(stamp=self._time(sec=sec, nanosec=nanosec), frame_id=FRAME_ID)

    def _quaternion(self, q: tuple[float, float, float, float]) -> Any:
        w, x, y, z = q
        return self._quat(x=x, y=y, z=z, w=w)


def _offset(snapshot: WorldSnapshot) -> int:
    """Host time -> wall clock, by the snapshot's own pair."""
    assert snapshot.wall_ns is not None
    return snapshot.wall_ns - snapshot.host_ns
