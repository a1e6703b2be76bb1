"""``[tracking]`` settings as a typed value: the noise model, the gate, the lifecycle and the
motion model's tuning. A user's table is checked by the host's settings table first (each key
its own range); these checks keep the invariants for programs that build one directly."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Final

from gizmo_core import ConfigError

from .motion import MotionParams
from .noise import NoiseParams

_SQRT_2_PI: Final = math.sqrt(2.0 / math.pi)

# The shortest mean dwell of a mode: its switching rate is 1/dwell (red team rt32: 5e-324
# made it inf, the mode probabilities NaN, and no track was ever confirmed).
MIN_DWELL_S: Final = 0.001


def chi2_quantile(probability: float, dof: int) -> float:
    """The χ² quantile for 2 or 3 degrees of freedom (closed-form CDFs, bisected for 3)."""
    if dof == 2:
        return -2.0 * math.log1p(-probability)
    if dof != 3:
        raise ValueError(f"dof: expected 2 or 3, got {dof}")
    low, high = 0.0, 200.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        cdf = math.erf(math.sqrt(mid / 2.0)) - _SQRT_2_PI * math.sqrt(mid) * math.exp(-mid / 2.0)
        low, high = (mid, high) if cdf < probability else (low, mid)
    return 0.5 * (low + high)


@dataclass(frozen=True, slots=True)
class TrackingConfig:
    """How detections become tracks. Times in ms on the host clock; noise as σ."""

    # The measurement's noise model (fusion.tracking.noise)
    box_sigma_px: float = 1.5  # the detector's box-centre noise
    attitude_sigma_deg: float = 0.05  # the vehicle's attitude, frame to frame, each axis
    position_sigma_m: float = 0.01  # the vehicle's position, frame to frame, each axis
    range_sigma_m: float = 0.05  # a laser, gimbal laser or LiDAR range
    ground_height_sigma_m: float = 0.02  # how far off the ground plane a target may be
    capture_time_sigma_ms: float = 1.0  # the capture time against the pose's
    # Association: a detection is a track's only within the gate, at this probability (χ²₂
    # 13.8 for a ground-plane fix, χ²₃ 16.3 for a ranged one at 0.999). At 0.99 (9.21) the
    # first frames of a turn or a braking fell outside it, and started a track of their own
    gate_probability: float = 0.999
    # Lifecycle: confirmed after confirm_hits of the last confirm_window frames of its key
    confirm_hits: int = 3
    confirm_window: int = 5
    delete_after_ms: float = 3000.0  # no update this long: deleted
    oosm_window_ms: float = 500.0  # a late measurement this much older is still fused exactly
    max_tracks: int = 64
    # The motion model (fusion.tracking.motion): random accelerations as σ of white noise
    cv_accel_m_s2: float = 0.03
    # what a straight run really has: the covariance a line reports assumes it (the gains use
    # cv_accel_m_s2, a margin for drifts the model has no term for)
    cv_true_accel_m_s2: float = 0.0
    ct_accel_m_s2: float = 0.15
    # the turn mode's random acceleration along the velocity: a target speeding up or braking
    # (1.0 covers 1-4 m/s²; 0: neither mode changes speed, and such a target's covariance is
    # 3-4 times too small)
    ct_speed_accel_m_s2: float = 1.0
    turn_accel_rad_s2: float = 0.3
    vertical_accel_m_s2: float = 0.01
    cv_dwell_s: float = 20.0  # mean time before a straight run turns
    ct_dwell_s: float = 4.0  # mean time a turn (or a change of speed) lasts
    initial_speed_m_s: float = 10.0  # a new track's velocity σ
    initial_turn_rate_deg_s: float = 30.0  # a new track's turn-rate σ

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"tracking.{f.name}: expected a number, got {value!r}")
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"tracking.{f.name}: expected a number >= 0, got {value!r}")
        for name in ("box_sigma_px", "initial_speed_m_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"tracking.{name}: expected > 0, got {getattr(self, name)!r}")
        for name in ("cv_dwell_s", "ct_dwell_s"):
            if getattr(self, name) < MIN_DWELL_S:
                raise ConfigError(
                    f"tracking.{name}: expected >= {MIN_DWELL_S:g}, got {getattr(self, name)!r}"
                )
        if not 0.5 <= self.gate_probability < 1:
            raise ConfigError(
                f"tracking.gate_probability: expected [0.5, 1), got {self.gate_probability!r}"
            )
        if not 1 <= self.confirm_hits <= self.confirm_window <= 32:
            raise ConfigError(
                "tracking.confirm_hits: expected 1 <= confirm_hits <= confirm_window <= 32, "
                f"got {self.confirm_hits} of {self.confirm_window}"
            )
        if self.max_tracks < 1:
            raise ConfigError(f"tracking.max_tracks: expected >= 1, got {self.max_tracks!r}")

    def motion(self) -> MotionParams:
        return MotionParams(
            cv_accel_m_s2=self.cv_accel_m_s2,
            ct_accel_m_s2=self.ct_accel_m_s2,
            ct_speed_accel_m_s2=self.ct_speed_accel_m_s2,
            turn_accel_rad_s2=self.turn_accel_rad_s2,
            vertical_accel_m_s2=self.vertical_accel_m_s2,
            cv_dwell_s=self.cv_dwell_s,
            ct_dwell_s=self.ct_dwell_s,
            initial_speed_m_s=self.initial_speed_m_s,
            initial_turn_rate_rad_s=math.radians(self.initial_turn_rate_deg_s),
            cv_true_accel_m_s2=self.cv_true_accel_m_s2,
        )

    def noise(self) -> NoiseParams:
        return NoiseParams(
            self.box_sigma_px,
            self.attitude_sigma_deg,
            self.position_sigma_m,
            self.range_sigma_m,
            self.ground_height_sigma_m,
            self.capture_time_sigma_ms,
        )

    def gate(self, dof: int) -> float:
        """The gate's χ² threshold for a measurement of ``dof`` degrees of freedom."""
        return chi2_quantile(self.gate_probability, dof)
