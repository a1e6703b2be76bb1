"""``[world]`` settings as a typed value, and the checks ``CameraConfig`` keeps for programs.

A user's ``[world]`` table is checked by the host's settings table (``gizmo_host.app.
settings``: each key its own range) and arrives here as a ``WorldConfig``. Example::

    [world]
    rate_hz = 50
    ttl_ms = 250
    max_wait_ms = 20
    max_extrapolation_ms = 10
    ground_z_ned_m = 0.0
    pose_required = true        # HOLD without a pose at capture time
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from gizmo_core import ConfigError

from .geometry import Vec3
from .timeline import JumpBounds

SOURCE_STALE_MS: Final[Mapping[str, float]] = MappingProxyType(
    {
        "vision": 250.0,
        "pose": 100.0,
        "imu": 100.0,
        "gimbal": 250.0,
        "laser": 250.0,
        "gimbal_laser": 250.0,
        "lidar": 500.0,
    }
)


def number(
    section: str,
    key: str,
    value: Any,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    open_low: bool = False,
    open_high: bool = False,
) -> float:
    """``value`` as a finite float within the bounds, else a ConfigError naming the key."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    x = float(value) if ok else math.nan
    ok = ok and math.isfinite(x) and (x > low if open_low else x >= low)
    ok = ok and (x < high if open_high else x <= high)
    if not ok:
        if low == -math.inf and high == math.inf:
            expected = "a finite number"
        elif high == math.inf:
            expected = f"a number {'>' if open_low else '>='} {low:g}"
        else:
            lo, hi = "(" if open_low else "[", ")" if open_high else "]"
            expected = f"a number in {lo}{low:g}, {high:g}{hi}"
        raise ConfigError(f"{section}.{key}: expected {expected}, got {value!r}")
    return x


def integer(section: str, key: str, value: Any, *, low: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ConfigError(f"{section}.{key}: expected an integer >= {low}, got {value!r}")
    return value


# Where a mount can be: roll and yaw within a turn either way, pitch within ±90° (Z-Y-X
# angles cover every attitude so), and the sensor within 100 m of the body's origin.
MOUNT_RPY_LIMITS_DEG = ((-360.0, 360.0), (-90.0, 90.0), (-360.0, 360.0))
MOUNT_POSITION_LIMITS_M = ((-100.0, 100.0),) * 3


def triple(
    section: str,
    key: str,
    value: Any,
    limits: tuple[tuple[float, float], ...] | None = None,
) -> Vec3:
    """Three finite numbers; with ``limits`` each within its (low, high)."""
    if not isinstance(value, list | tuple) or len(value) != 3:
        raise ConfigError(f"{section}.{key}: expected a list of 3 numbers, got {value!r}")
    bounds = limits or ((-math.inf, math.inf),) * 3
    x, y, z = (
        number(section, f"{key}[{i}]", v, low=lo, high=hi)
        for i, (v, (lo, hi)) in enumerate(zip(value, bounds, strict=True))
    )
    return (x, y, z)


@dataclass(frozen=True, slots=True)
class WorldConfig:
    """How the world model judges its inputs. Times in ms, on the host clock."""

    rate_hz: float = 50.0  # snapshot rate, for the publisher
    publish_on_change: bool = True  # publish at once when a verdict changes, for the publisher
    ttl_ms: float = 250.0  # a target is fresh for this long after its capture
    ttl_ms_by_type: Mapping[int, float] = field(default_factory=dict)
    reset_hold_ms: float = 0.0  # HOLD this long after a device reset, beyond the re-lock
    max_wait_ms: float = 20.0  # a measurement newer than the newest pose waits this long
    max_extrapolation_ms: float = 10.0  # then it may be placed this far past the newest pose
    max_pose_gap_ms: float = 100.0  # two poses further apart do not bracket anything
    pose_ttl_ms: float = 250.0  # the newest pose older than this: pose_stale
    pose_history: int = 512  # poses held (5 s at 100 Hz)
    # The jump rule (fusion.timeline.JumpBounds): a velocity changed faster than
    # max_accel_m_s2 (beyond pose_jump_m_s), a position step its velocities cannot carry
    # (beyond pose_jump_m, the stamps' error pose_stamp_error_ms at the speed flown, and the
    # acceleration), faster than max_speed_m_s without velocity, or turning faster than
    # max_angular_rate_deg_s is never blended across: the history breaks, HOLD pose_jump.
    pose_jump_m: float = 0.02
    pose_jump_m_s: float = 1.0
    pose_stamp_error_ms: float = 1.0
    max_accel_m_s2: float = 30.0
    max_speed_m_s: float = 60.0
    max_angular_rate_deg_s: float = 720.0
    jump_hold_ms: float = 500.0  # HOLD pose_jump this long after a jump
    # HOLD pose_conflict this long after two senders, or two different poses for one time
    conflict_hold_ms: float = 1000.0
    pose_required: bool = False  # a pose source is configured (any pose received also counts)
    imu_max_age_ms: float = 50.0  # an IMU rate older than the newest pose by more is not used
    gimbal_max_age_ms: float = 100.0  # gimbal angles this far from the capture still apply
    # The gimbal status has no time (it is stamped at arrival): between two statuses that
    # differ faster than this the angle at a capture is unknown, not blended.
    gimbal_max_rate_deg_s: float = 60.0
    ground_plane: bool = True
    ground_z_ned_m: float = 0.0
    max_ground_range_m: float = 500.0  # grazing rays meet the ground too far to trust
    # A laser return counts for a target whose ray lies this close to the sensor's axis: keep it
    # inside the physical beam by the alignment and timing error, or ground returns near the
    # target pass as target returns. The whole beam must lie within the target's box too.
    laser_beam_half_angle_deg: float = 1.0
    gimbal_laser_beam_half_angle_deg: float = 1.0
    # The gimbal status carries no laser's limit: a range beyond this is junk (counted)
    gimbal_laser_max_range_m: float = 3000.0
    range_max_age_ms: float = 100.0  # a laser reading this far from the capture still applies
    lidar_cone_half_angle_deg: float = 1.0
    lidar_min_points: int = 3
    lidar_max_age_ms: float = 200.0
    # A sensor's range at which the target's box would be narrower than this is not the
    # target's: a return from the airframe, a window or dust (red team rt45)
    range_min_target_m: float = 0.1
    # With the ground plane on, a sensor's range nearer than the plane (along the ray) by more
    # than a target standing this tall and 1 m of ground conflicts with it: no position
    target_max_height_m: float = 3.0
    # Targets lie flat on the ground (landing pads, markings): a ground-plane fix puts the box's
    # centre on the plane. False: they may stand (people, cars), and a fix is placed between
    # the plane and the height a standing target's centre has, with that spread as a bias.
    flat_targets: bool = True
    max_targets: int = 64
    # Measurements waiting for a pose or a gimbal status: a saturated 921600 line brings 263
    # results in a gimbal's 100 ms wait. Past it the oldest is dropped, never placed early.
    max_pending: int = 1024
    forget_after_ms: float = 10_000.0  # a target unseen for this long leaves the list
    source_stale_ms: Mapping[str, float] = field(default_factory=lambda: dict(SOURCE_STALE_MS))
    source_dead_ms: float = 2000.0

    def jump_bounds(self) -> JumpBounds:
        return JumpBounds(
            position_m=self.pose_jump_m,
            accel_m_s2=self.max_accel_m_s2,
            speed_m_s=self.max_speed_m_s,
            rate_rad_s=math.radians(self.max_angular_rate_deg_s),
            velocity_m_s=self.pose_jump_m_s,
            stamp_s=self.pose_stamp_error_ms / 1e3,
        )

    def ttl_ns(self, result_type: int) -> int:
        return round(self.ttl_ms_by_type.get(result_type, self.ttl_ms) * 1e6)
