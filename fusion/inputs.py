"""The values the world model takes in: host-stamped, frozen, validated when built.

Adapters in the app layer build these, so a ROS node or a replay can feed the world model too.
All ``*_ns`` fields are host ``time.monotonic_ns()`` values. A value that exists is valid: a bad
field raises :class:`~fusion.errors.InvalidInput` naming it, so the adapter can count the drop.
Vectors are stored as float tuples whatever sequence (list, numpy array) they were built from.

What an adapter maps (one :class:`~fusion.simclock.SimClockEstimator` per RflySim stream):

- ``ReceivedResult`` -> :class:`VisionObservation`: ``tracked``/``lost`` from flags bits 0/1,
  ``has_box`` from ``results.is_target``, the box from x/y/w/h, ``host_capture_ns`` from
  ``reference_ns()``, ``clock_locked`` when the clock status is LOCKED;
- ``LinkEvent`` -> :class:`LinkStatus`; a device reset (sequence tracker or clock) ->
  ``LinkStatus(rx_ns, state, device_reset=True)``;
- CopterSim state or odometry -> ``observe(sim_time_ns, rx_ns, discontinuity=...)`` on the
  stream's estimator, then :class:`PoseSample` with its ``host_ns``, ``epoch`` and ``status``
  (skip samples whose position or attitude is invalid; an invalid velocity is ``None``);
- the IMU reply -> :class:`ImuSample`; TypeID 5 -> :class:`LaserRange` with the Config.json
  mount; the gimbal status (port 20006) -> :class:`GimbalSample` and
  :class:`GimbalLaserRange`; point clouds -> :class:`LidarPoints` in body FRD or world NED.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
import numpy.typing as npt

from gizmo_core import HoldReason, LinkState
from gizmo_core.clock import ClockStatus

from .errors import InvalidInput
from .geometry import Quat, Vec3, quat_from_euler_zyx_deg

_UNIT_TOLERANCE = 1e-3
# A vehicle's pose from a wire, each axis: numbers beyond these are no vehicle's (a local frame
# origin 10,000 km away, three times the speed of sound, an IMU ten times past its saturation).
MAX_POSITION_M = 1e7
MAX_SPEED_M_S = 1e3
MAX_RATE_RAD_S = 100.0
_ANY_FINITE = sys.float_info.max
_BOX_CENTRE = 1000
_BOX_SIZE = 2000
# A capture is mapped at most this long after its frame's arrival (the device clock's tick
# midpoint, 0.5 ms, against a transport delay a fast line makes shorter): anything later is
# not a capture time. One 20 s ahead once made every later frame of its key "late" for 20 s.
MAX_CAPTURE_AFTER_RX_NS = 5_000_000


def _fail(owner: object, name: str, expected: str, value: object) -> InvalidInput:
    return InvalidInput(f"{type(owner).__name__}.{name}: expected {expected}, got {value!r}")


def _finite(
    owner: object,
    name: str,
    value: Any,
    *,
    minimum: float = -math.inf,
    maximum: float = _ANY_FINITE,
) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise _fail(owner, name, "a number", value) from None
    if not (math.isfinite(x) and minimum <= x <= maximum):
        raise _fail(owner, name, f"a finite number in {minimum}..{maximum}", value)
    return x


def _vec3(owner: object, name: str, value: Any, limit: float = _ANY_FINITE) -> Vec3:
    """``value`` as 3 floats, each within ``±limit`` (a NaN or an infinity never is)."""
    if type(value) is tuple and len(value) == 3:  # the adapters' own: kept, once checked
        x, y, z = value
        if type(x) is float and type(y) is float and type(z) is float:
            if not (-limit <= x <= limit and -limit <= y <= limit and -limit <= z <= limit):
                raise _out_of_range(owner, name, value, limit)
            return value
    try:
        x, y, z = (float(v) for v in value)
    except (TypeError, ValueError):
        raise _fail(owner, name, "3 numbers", value) from None
    if not (-limit <= x <= limit and -limit <= y <= limit and -limit <= z <= limit):
        raise _out_of_range(owner, name, value, limit)
    return (x, y, z)


def _out_of_range(owner: object, name: str, value: Any, limit: float) -> InvalidInput:
    if all(math.isfinite(float(v)) for v in value):
        return _fail(owner, name, f"3 numbers within ±{limit:g}", value)
    return _fail(owner, name, "3 finite numbers", value)


def _set(owner: object, name: str, value: object) -> None:
    object.__setattr__(owner, name, value)


@dataclass(frozen=True, slots=True)
class VisionObservation:
    """One board result. ``center_*`` are in -1000..1000 and ``width``/``height`` in 0..2000
    (the UART spec's box units); they are checked only when the result is tracked and
    ``has_box`` (the adapter's ``results.is_target``: a colour blob, QR code, motion, bright
    spot or detection; never line or brightness statistics). ``host_capture_ns`` is at most
    :data:`MAX_CAPTURE_AFTER_RX_NS` after ``host_rx_ns``: an image is taken before it is read."""

    source_id: int
    result_type: int
    id: int
    label: str
    confidence: int  # 0..100, as the board sends it
    tracked: bool
    lost: bool
    has_box: bool
    center_x: int
    center_y: int
    width: int
    height: int
    host_capture_ns: int  # capture time mapped to the host clock (receive time when unmapped)
    host_rx_ns: int  # host time the frame was read
    epoch: int  # device clock epoch: changes on every device reset
    clock_locked: bool
    # The mapping is converging on the link's first epoch: its capture times are close (a
    # tracker may use them), though not yet within the accuracy a PROCEED needs.
    clock_converging: bool = False
    # Why the link withheld this frame's result (``invalid_result``: a field off the protocol's
    # scale; ``sequence_conflict``: a second voice on the line), sent as a frame that saw
    # nothing: the reason its source's targets HOLD for, instead of ``lost``.
    withheld: HoldReason | None = None
    # ``"source:type:id"``, the target's name in world snapshots: worked out once, as every
    # stage of the world model looks it up.
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.has_box and self.tracked:
            _check_box(self)
        if self.host_capture_ns - self.host_rx_ns > MAX_CAPTURE_AFTER_RX_NS:
            raise _capture_after_rx(self)
        _set(self, "key", f"{self.source_id}:{self.result_type}:{self.id}")

    @property
    def positive(self) -> bool:
        """Tracked, not lost, and something to locate: a target seen in this frame."""
        return self.tracked and not self.lost and self.has_box

    @property
    def reports_nothing(self) -> bool:
        """Untracked, lost, or result_type 0 (None): the board's "not detected" frame, which
        ends every earlier result of its source whatever key it carries."""
        return not self.tracked or self.lost or self.result_type == 0


def _capture_after_rx(obs: VisionObservation) -> InvalidInput:
    return _fail(obs, "host_capture_ns", "at most 5 ms after host_rx_ns", obs.host_capture_ns)


def _check_box(obs: VisionObservation) -> None:
    """Raises for a box off the spec's scale (``VisionObservation``'s check)."""
    if not -_BOX_CENTRE <= obs.center_x <= _BOX_CENTRE:
        raise _fail(obs, "center_x", "-1000..1000", obs.center_x)
    if not -_BOX_CENTRE <= obs.center_y <= _BOX_CENTRE:
        raise _fail(obs, "center_y", "-1000..1000", obs.center_y)
    if not 0 <= obs.width <= _BOX_SIZE:
        raise _fail(obs, "width", "0..2000", obs.width)
    if not 0 <= obs.height <= _BOX_SIZE:
        raise _fail(obs, "height", "0..2000", obs.height)


@dataclass(frozen=True, slots=True)
class LinkStatus:
    """The live link's state from ``host_ns`` on. ``device_reset`` says the board reset at
    ``host_ns``: everything received before it belongs to the board's previous life."""

    host_ns: int
    state: LinkState
    device_reset: bool = False


@dataclass(frozen=True, slots=True)
class PoseSample:
    """The vehicle's pose at a simulation time mapped to the host clock (``host_ns``, from a
    :class:`~fusion.simclock.SimClockEstimator`). ``quaternion_wxyz`` is the FRD body's
    attitude in NED; it is normalised here and must be within 1e-3 of unit length."""

    host_ns: int
    sim_time_ns: int
    epoch: int
    position_ned_m: Vec3
    quaternion_wxyz: Quat
    velocity_ned_m_s: Vec3 | None = None
    copter_id: int = 1
    clock_status: ClockStatus = ClockStatus.LOCKED

    def __post_init__(self) -> None:
        position = _vec3(self, "position_ned_m", self.position_ned_m, MAX_POSITION_M)
        _set(self, "position_ned_m", position)
        if self.velocity_ned_m_s is not None:
            velocity = _vec3(self, "velocity_ned_m_s", self.velocity_ned_m_s, MAX_SPEED_M_S)
            _set(self, "velocity_ned_m_s", velocity)
        try:
            w, x, y, z = map(float, self.quaternion_wxyz)
        except (TypeError, ValueError):
            raise _fail(self, "quaternion_wxyz", "4 numbers", self.quaternion_wxyz) from None
        n = math.sqrt(w * w + x * x + y * y + z * z)
        if not abs(n - 1.0) <= _UNIT_TOLERANCE:
            raise _fail(self, "quaternion_wxyz", "a unit quaternion", self.quaternion_wxyz)
        _set(self, "quaternion_wxyz", (w / n, x / n, y / n, z / n))


@dataclass(frozen=True, slots=True)
class ImuSample:
    """Body angular rate at ``host_ns``: extrapolates the attitude past the newest pose."""

    host_ns: int
    angular_rate_frd_rad_s: Vec3

    def __post_init__(self) -> None:
        rate = _vec3(self, "angular_rate_frd_rad_s", self.angular_rate_frd_rad_s, MAX_RATE_RAD_S)
        _set(self, "angular_rate_frd_rad_s", rate)


@dataclass(frozen=True, slots=True)
class SensorMount:
    """Where a sensor sits on the body: position in FRD and attitude ``rpy_deg`` (roll, pitch,
    yaw, applied Z-Y-X) from body FRD. The sensor's x axis is its boresight."""

    position_frd_m: Vec3 = (0.0, 0.0, 0.0)
    rpy_deg: Vec3 = (0.0, 0.0, 0.0)
    quaternion_wxyz: Quat = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _set(self, "position_frd_m", _vec3(self, "position_frd_m", self.position_frd_m))
        _set(self, "rpy_deg", _vec3(self, "rpy_deg", self.rpy_deg))
        _set(self, "quaternion_wxyz", quat_from_euler_zyx_deg(self.rpy_deg))


@dataclass(frozen=True, slots=True)
class LaserRange:
    """The distance sensor (RflySim TypeID 5) with its Config.json mount; ``distance_m`` is
    ``None`` when the sensor saw no return."""

    host_ns: int
    distance_m: float | None
    mount: SensorMount
    sensor_id: int = 0  # which sensor, so a new clock epoch of one drops its older readings
    epoch: int = 0  # the sensor's clock epoch

    def __post_init__(self) -> None:
        if self.distance_m is not None:
            distance = _finite(
                self, "distance_m", self.distance_m, minimum=0.0, maximum=MAX_POSITION_M
            )
            _set(self, "distance_m", distance)


@dataclass(frozen=True, slots=True)
class GimbalLaserRange:
    """The gimbal status laser range (port 20006), along the gimbal camera's optical axis."""

    host_ns: int
    distance_m: float | None

    def __post_init__(self) -> None:
        if self.distance_m is not None:
            distance = _finite(
                self, "distance_m", self.distance_m, minimum=0.0, maximum=MAX_POSITION_M
            )
            _set(self, "distance_m", distance)


class PointFrame(Enum):
    BODY_FRD = "FRD"  # relative to the vehicle's origin, body axes, at ``host_ns``
    WORLD_NED = "NED"  # world positions


@dataclass(frozen=True, slots=True, eq=False)
class LidarPoints:
    """A LiDAR or depth point cloud (TypeID 7, 20-23) at ``host_ns``: ``points_m`` is N×3.

    The adapter applies the sensor's mount or ``axis_type`` and names the frame it produced.
    ``max_range_m`` is the sensor's range (its Config.json ``otherParams[0]``) and
    ``sensor_position_frd_m`` where it sits on the body: no return is farther from it, and the
    ranging refuses a point that is (:class:`fusion.ranging.Ranger`).
    """

    host_ns: int
    points_m: npt.NDArray[np.float64]
    frame: PointFrame
    max_range_m: float
    sensor_position_frd_m: Vec3 = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        points = np.asarray(self.points_m, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] != 3:
            raise _fail(self, "points_m", "an N×3 array", getattr(points, "shape", None))
        if not (np.isfinite(points).all() and (np.abs(points) <= MAX_POSITION_M).all()):
            raise _fail(
                self, "points_m", f"finite coordinates within ±{MAX_POSITION_M:g} m", "others"
            )
        _set(self, "points_m", points)
        _set(self, "max_range_m", _finite(self, "max_range_m", self.max_range_m, minimum=0.0))
        if self.max_range_m == 0.0:
            raise _fail(self, "max_range_m", "a range > 0", self.max_range_m)
        position = _vec3(self, "sensor_position_frd_m", self.sensor_position_frd_m, MAX_POSITION_M)
        _set(self, "sensor_position_frd_m", position)


@dataclass(frozen=True, slots=True)
class GimbalSample:
    """The gimbal camera's attitude in body FRD (``camera_rpy_deg``, Z-Y-X) at ``host_ns``,
    with its intrinsics when the status carries them (they change with zoom)."""

    host_ns: int
    camera_rpy_deg: Vec3
    fx_px: float | None = None
    fy_px: float | None = None
    quaternion_wxyz: Quat = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _set(self, "camera_rpy_deg", _vec3(self, "camera_rpy_deg", self.camera_rpy_deg))
        _set(self, "quaternion_wxyz", quat_from_euler_zyx_deg(self.camera_rpy_deg))
        for name in ("fx_px", "fy_px"):
            value = getattr(self, name)
            if value is not None:
                focal = _finite(self, name, value, minimum=0.0)
                if focal == 0.0:
                    raise _fail(self, name, "a focal length > 0", value)
                _set(self, name, focal)


@dataclass(frozen=True, slots=True)
class SourceConflict:
    """Two senders claim one of the vehicle's streams (``source``: "pose" holds the world
    with ``pose_conflict``): the adapter drops the second sender's messages and says so."""

    host_ns: int
    source: str
    detail: str


@dataclass(frozen=True, slots=True)
class PoseLinkStatus:
    """The pose source's own link (the autopilot's MAVLink): while it is down, a world that
    requires a pose HOLDs ``link_down`` (the poses stopping would say ``pose_stale`` only
    later, and an autopilot never heard says nothing else). Up again, the HOLD ends; the poses
    and their clock say the rest (``clock_not_locked`` until the mapping locks)."""

    host_ns: int
    up: bool
    detail: str = ""


RangeSample = LaserRange | GimbalLaserRange | LidarPoints
Input = (
    VisionObservation
    | LinkStatus
    | PoseSample
    | ImuSample
    | RangeSample
    | GimbalSample
    | SourceConflict
    | PoseLinkStatus
)
