"""One fixed world snapshot for the ROS 2 and Zenoh tests: a vehicle, a located PROCEED target
and a HOLD one (built by hand, so the expected messages are known without the code under test)."""

from __future__ import annotations

import math
from typing import Any

from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from fusion import SourceState, TargetState, WorldSnapshot
from fusion.ranging import RangeSource
from fusion.snapshot import SourceStatus, VehicleState
from gizmo_core import Decision, HoldReason

HOST_NS = 5_000_000_000
WALL_NS = 1_780_000_000_123_456_789
CAPTURE_NS = HOST_NS - 40_000_000  # 40 ms before the snapshot
POSE_NS = HOST_NS - 10_000_000
YAW_45 = (math.cos(math.pi / 8), 0.0, 0.0, math.sin(math.pi / 8))  # FRD in NED: nose north-east


def snapshot(wall_ns: int | None = WALL_NS) -> WorldSnapshot:
    vehicle = VehicleState(1, POSE_NS, 10.0, 1, (10.0, 20.0, -30.0), YAW_45, None)
    proceed = TargetState(
        "0:5:11", 5, 11, "PEDESTRIAN", 87, True, CAPTURE_NS, 40.0, Decision.PROCEED, (),
        (1.0, 0.0, 0.0), (0.6, 0.8, 0.0), 53.13, 0.0, (2.0, 3.0), (16.0, 28.0, 0.0), 10.0,
        RangeSource.GROUND_PLANE,
    )  # fmt: skip
    hold = TargetState(
        "0:5:12", 5, 12, "CAT", 50, False, CAPTURE_NS, 40.0, Decision.HOLD,
        (HoldReason.STALE,), None, None, None, None, None, None, None, None,
    )  # fmt: skip
    return WorldSnapshot(
        seq=7,
        host_ns=HOST_NS,
        valid_until_ns=HOST_NS + 200_000_000,
        verdict=Decision.PROCEED,
        reasons=(),
        selected="0:5:11",
        vehicle=vehicle,
        sources={"vision": SourceStatus(SourceState.OK, 40.0)},
        targets=(proceed, hold),
        wall_ns=wall_ns,
    )


def vision_store() -> Any:
    """vision_msgs registered here from the .msg texts, not through the module under test."""
    store = get_typestore(Stores.ROS2_JAZZY)
    texts = {
        "vision_msgs/msg/ObjectHypothesis": "string class_id\nfloat64 score",
        "vision_msgs/msg/ObjectHypothesisWithPose": "vision_msgs/ObjectHypothesis hypothesis\n"
        "geometry_msgs/PoseWithCovariance pose",
        "vision_msgs/msg/BoundingBox3D": "geometry_msgs/Pose center\ngeometry_msgs/Vector3 size",
        "vision_msgs/msg/Detection3D": "std_msgs/Header header\n"
        "vision_msgs/ObjectHypothesisWithPose[] results\nvision_msgs/BoundingBox3D bbox\nstring id",
        "vision_msgs/msg/Detection3DArray": "std_msgs/Header header\n"
        "vision_msgs/Detection3D[] detections",
    }
    types = {}
    for name, text in texts.items():
        types.update(get_types_from_msg(text, name))
    store.register(types)
    return store
