"""World model joining Gizmo UART results with RflySim pose, gimbal and range streams.

Pure: inputs are frozen host-stamped values (:mod:`fusion.inputs`), time is passed in, and
nothing here does I/O or imports ``gizmo_host`` or ``rfly_link``. The app layer adapts the
live link's results and rfly_link's messages into inputs and publishes the snapshots.

Modules: ``geometry`` (the tree's one quaternion and rotation module), ``inputs``,
``simclock`` (sim time -> host time per pose stream), ``timeline`` (pose history and
interpolation), ``camera``, ``ranging``, ``verdicts``, ``targets``, ``sources``, ``snapshot``
and ``world`` (:class:`WorldModel`).
"""

from clockcore import ClockStatus

from .camera import CameraConfig, CameraModel
from .config import WorldConfig
from .errors import ConfigError, FusionError, InvalidInput
from .inputs import (
    GimbalLaserRange,
    GimbalSample,
    ImuSample,
    Input,
    LaserRange,
    LidarPoints,
    LinkState,
    LinkStatus,
    PointFrame,
    PoseLinkStatus,
    PoseSample,
    SensorMount,
    SourceConflict,
    VisionObservation,
)
from .ranging import RangeSource
from .simclock import SimClockEstimator
from .snapshot import SourceState, TargetState, WorldSnapshot, world_schema
from .verdicts import Decision, HoldReason, Selector
from .world import WorldModel

# What a user needs: the model, its settings, every input it takes (with the enums they
# carry), the snapshot and the verdict vocabulary. Its parts (the pose history, the snapshot's
# pieces, the clock samples) are in their modules.
__all__ = [
    "CameraConfig",
    "CameraModel",
    "ClockStatus",
    "ConfigError",
    "Decision",
    "FusionError",
    "GimbalLaserRange",
    "GimbalSample",
    "HoldReason",
    "ImuSample",
    "Input",
    "InvalidInput",
    "LaserRange",
    "LidarPoints",
    "LinkState",
    "LinkStatus",
    "PointFrame",
    "PoseLinkStatus",
    "PoseSample",
    "RangeSource",
    "Selector",
    "SensorMount",
    "SimClockEstimator",
    "SourceConflict",
    "SourceState",
    "TargetState",
    "VisionObservation",
    "WorldConfig",
    "WorldModel",
    "WorldSnapshot",
    "world_schema",
]
