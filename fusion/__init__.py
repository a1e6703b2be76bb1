"""World model joining Gizmo UART results with RflySim pose, gimbal and range streams.

Pure: inputs are frozen host-stamped values (:mod:`fusion.inputs`), time is passed in, and
nothing here does I/O or imports ``gizmo_host`` or ``rfly_link``. The app layer adapts the
live link's results and rfly_link's messages into inputs and publishes the snapshots. The
verdict's vocabulary (``Decision``, ``HoldReason``, ``Selector``, ``LinkState``) and the
``ConfigError`` its settings raise are the leaf ``gizmo_core``'s, shared with the host.

Modules: ``geometry`` (the tree's one quaternion and rotation module), ``inputs``,
``simclock`` (sim time -> host time per pose stream), ``timeline`` (pose history and
interpolation), ``camera``, ``ranging``, ``verdicts``, ``targets``, ``sources``, ``snapshot``,
and the model in three layers: ``intake`` (its state and inputs), ``verdict_check`` (the
verdict, its memo and the deadlines) and ``world`` (:class:`WorldModel`, the snapshot).
"""

from .camera import CameraConfig, CameraModel
from .config import WorldConfig
from .errors import FusionError, InvalidInput
from .inputs import (
    GimbalLaserRange,
    GimbalSample,
    ImuSample,
    Input,
    LaserRange,
    LidarPoints,
    LinkStatus,
    PointFrame,
    PoseLinkStatus,
    PoseSample,
    SensorMount,
    SourceConflict,
    VisionObservation,
)
from .observation_build import vision_observation
from .ranging import RangeSource
from .simclock import SimClockEstimator
from .snapshot import SourceState, TargetState, WorldSnapshot, world_schema
from .world import WorldModel

# What a user needs: the model, its settings, every input it takes (with the enums they
# carry) and the snapshot. Its parts (the pose history, the snapshot's
# pieces, the clock samples) are in their modules.
__all__ = [
    "CameraConfig",
    "CameraModel",
    "FusionError",
    "GimbalLaserRange",
    "GimbalSample",
    "ImuSample",
    "Input",
    "InvalidInput",
    "LaserRange",
    "LidarPoints",
    "LinkStatus",
    "PointFrame",
    "PoseLinkStatus",
    "PoseSample",
    "RangeSource",
    "SensorMount",
    "SimClockEstimator",
    "SourceConflict",
    "SourceState",
    "TargetState",
    "VisionObservation",
    "WorldConfig",
    "WorldModel",
    "WorldSnapshot",
    "vision_observation",
    "world_schema",
]
