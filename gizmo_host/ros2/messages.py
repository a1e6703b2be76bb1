"""World snapshots as ROS 2 messages (CDR bytes through rosbags' Jazzy typestore).

``vision_msgs`` is not in rosbags' stores: its five definitions (vision_msgs 4.1, Jazzy's) are
registered from their ``.msg`` field lists, which is all a RIHS01 hash is computed from.

- ``Detection3DArray`` (``/gizmo/<vehicle>/detections``): the PROCEED targets that are located
  (a position); HOLD targets and bearing-only ones are left out (a ROS consumer reading a pose
  must not act on a target the host says not to). Each detection's ``id`` is the target's key
  (``<key>/<track_id>`` for a track), its hypothesis the label with ``score`` = confidence /
  100; its pose (and box centre) is the position in ``map`` with the orientation of the line
  of sight (x along the bearing). A track's ``pose.covariance`` is its position covariance in
  ENU with ``UNOBSERVED_VAR`` on the rotation (a bearing is not an orientation); the per-frame
  path estimates none (zeros). The box size is zero (not estimated).
- ``Odometry`` (``/gizmo/<vehicle>/tracks``), one per PROCEED track beside its detection:
  ``child_frame_id`` the detection's ``id`` (a frame on the target, its axes those of
  ``map``), the pose and position covariance as the detection's, the twist the track's
  velocity in ENU with its covariance (``UNOBSERVED_VAR`` on the angular rates). The estimate
  is at the header's stamp, the capture: predict with position + velocity × (t - stamp).
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
TRACKS = "nav_msgs/msg/Odometry"
UNOBSERVED_VAR = 1e6  # rad² or (rad/s)²: what the line does not observe
# NED -> ENU for a 3-vector's covariance: P C P' with P the axis swap (n, e, d) -> (e, n, -d)
_NED_TO_ENU = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
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
    tracks: tuple[bytes, ...] = ()  # one Odometry per PROCEED track


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
        self._odometry = t[TRACKS]
        self._twist, self._twist_cov = (
            t["geometry_msgs/msg/Twist"],
            t["geometry_msgs/msg/TwistWithCovariance"],
        )

    def hash_rihs01(self, type_name: str) -> str:
        return str(self.store.hash_rihs01(type_name))

    def build(self, snapshot: WorldSnapshot) -> Ros2Messages:
        if snapshot.wall_ns is None:
            return Ros2Messages(None, None)
        tracks = tuple(bytes(self.store.serialize_cdr(m, TRACKS)) for m in self.tracks(snapshot))
        return Ros2Messages(self.detections_cdr(snapshot), self.pose_cdr(snapshot), tracks)

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

    def tracks(self, snapshot: WorldSnapshot) -> list[Any]:
        """An Odometry per PROCEED track with an estimate (position, velocity, covariance)."""
        offset = _offset(snapshot)
        out = []
        for t in snapshot.targets:
            if (
                t.verdict is not Decision.PROCEED
                or t.position_ned_m is None
                or t.velocity_ned_m_s is None
                or t.covariance_ned is None
            ):
                continue
            cov = np.array(t.covariance_ned).reshape(6, 6)
            twist = self._twist(
                linear=self._vector(*enu_from_ned(t.velocity_ned_m_s)),
                angular=self._vector(0.0, 0.0, 0.0),
            )
            out.append(
                self._odometry(
                    header=self._stamped(t.capture_ns + offset),
                    child_frame_id=_detection_id(t),
                    pose=self._pose_cov(pose=self._target_pose(t), covariance=_pose_covariance(t)),
                    twist=self._twist_cov(twist=twist, covariance=_enu_covariance(cov[3:, 3:])),
                )
            )
        return out

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

    def _target_pose(self, target: TargetState) -> Any:
        assert target.position_ned_m is not None
        position = self._point(*enu_from_ned(target.position_ned_m))
        bearing = target.bearing_ned
        orientation = self._quaternion(
            (1.0, 0.0, 0.0, 0.0) if bearing is None else line_of_sight(enu_from_ned(bearing))
        )
        return self._pose(position=position, orientation=orientation)

    def _target(self, target: TargetState, wall_ns: int) -> Any:
        pose = self._target_pose(target)
        hypothesis = self._hypothesis(class_id=target.label, score=target.confidence / 100.0)
        result = self._with_pose(
            hypothesis=hypothesis,
            pose=self._pose_cov(pose=pose, covariance=_pose_covariance(target)),
        )
        return self._detection(
            header=self._stamped(wall_ns),
            results=[result],
            bbox=self._box(center=pose, size=self._vector(0.0, 0.0, 0.0)),
            id=_detection_id(target),
        )

    def _stamped(self, wall_ns: int) -> Any:
        sec, nanosec = divmod(wall_ns, 1_000_000_000)
        return self._header(stamp=self._time(sec=sec, nanosec=nanosec), frame_id=FRAME_ID)

    def _quaternion(self, q: tuple[float, float, float, float]) -> Any:
        w, x, y, z = q
        return self._quat(x=x, y=y, z=z, w=w)


def _detection_id(target: TargetState) -> str:
    return target.key if target.track_id is None else f"{target.key}/{target.track_id}"


def _enu_covariance(block_ned: Any) -> Any:
    """A 3×3 NED covariance as the 6×6 ROS covariance (row-major) of (x, y, z) in ENU and a
    rotation (or angular rate) it does not observe."""
    out = np.zeros((6, 6))
    out[:3, :3] = _NED_TO_ENU @ block_ned @ _NED_TO_ENU.T
    out[3, 3] = out[4, 4] = out[5, 5] = UNOBSERVED_VAR
    return out.ravel()


def _pose_covariance(target: TargetState) -> Any:
    """A track's position covariance in ENU; zeros without one (the per-frame path)."""
    if target.covariance_ned is None:
        return np.zeros(36, dtype=np.float64)
    return _enu_covariance(np.array(target.covariance_ned).reshape(6, 6)[:3, :3])


def _offset(snapshot: WorldSnapshot) -> int:
    """Host time -> wall clock, by the snapshot's own pair."""
    assert snapshot.wall_ns is not None
    return snapshot.wall_ns - snapshot.host_ns
