"""The stand-in autopilot's precision landing: a vehicle steered only by LANDING_TARGET.

In the manner of PX4's precland (``PLD_*``), on the stand-in's own truth:

- **search**: no target yet (or lost for longer than ``search_timeout_s``): hold the horizontal
  position and climb back to ``search_alt_m``;
- **approach**: targets arrive: fly over the target estimate, at the same height;
- **descend**: over it (within ``acceptance_m``) while targets arrive: descend at
  ``descent_m_s``, still steering onto it;
- **hold**: no fresh target for ``target_timeout_s``: stop descending, keep over the estimate;
- **landed**: at ``land_alt_m`` above the ground while descending onto a fresh target.

A target is fresh while the newest arrived less than ``target_timeout_s`` ago and its
``time_usec`` (the capture, on the autopilot's clock) is less than that old too. The estimate
is an alpha-beta filter of the targets' positions at their capture times, so a moving pad has
a velocity (PX4's landing_target_estimator keeps one too): PX4 profile messages
(``position_valid``, LOCAL_NED) as they are; ArduPilot BODY_FRD angles are turned into a
ground point with the vehicle's own attitude and height at arrival (ArduPilot's way, with no
``PLND_LAG``). The controller flies at the pad's estimated velocity plus a gain on the offset
to where the pad is now (the estimate carried from its capture to now).

The pad may move (``pad_velocity_ned_m_s``): the landing error is taken against where it is
at touchdown.

The vehicle is kinematic: a commanded NED velocity, reached with a first-order lag
(``tau_s``), set every ``step_s`` and ramped to over that step (the horizontal command
slewing at ``slew_m_s2``), so the acceleration is continuous and the attitude turns at a
finite rate, never steps; position, velocity and acceleration have closed forms between
steps, so the truth can be asked at any past instant, and the attitude is the tilt the
acceleration needs (:func:`gizmo_host.rigs.rflysim.kinematics.tilted_attitude`). The landing
error is the stand-in's own: the horizontal distance from the vehicle's true position at
touchdown to the pad's. Every descent step taken without a fresh target is counted
(``stale_descents``): it must stay 0.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple

from fusion.geometry import Vec3, quat_rotate
from gizmo_host.rigs.autopilot.standin import ReceivedTarget, VehicleTruth
from gizmo_host.rigs.rflysim.kinematics import tilted_attitude

_FRAME_LOCAL_NED = 1
_FRAME_BODY_FRD = 12
_MAX_SEGMENTS = 20_000  # 1000 s of steps at 20 Hz: the truth of a long run, bounded


class Phase(Enum):
    SEARCH = "search"
    APPROACH = "approach"
    DESCEND = "descend"
    HOLD = "hold"
    LANDED = "landed"


@dataclass(frozen=True, slots=True)
class PrecLandConfig:
    start_ned_m: Vec3 = (0.0, 0.0, -8.0)
    pad_ned_m: Vec3 = (2.5, -1.5, 0.0)  # the ground target's centre at the start (truth)
    pad_velocity_ned_m_s: Vec3 = (0.0, 0.0, 0.0)  # and how it moves (truth)
    ground_z_ned_m: float = 0.0
    search_alt_m: float = 8.0
    descent_m_s: float = 0.7
    climb_m_s: float = 0.8
    max_speed_m_s: float = 1.5
    gain_per_s: float = 1.2  # horizontal velocity per metre of offset
    slew_m_s2: float = 2.0  # the horizontal command changes at most this fast (no tilt steps)
    tau_s: float = 0.25
    acceptance_m: float = 0.25  # PLD_HACC_RAD: over the target, descent allowed
    target_timeout_s: float = 0.5  # PLD_BTOUT: no fresh target, no descent
    search_timeout_s: float = 3.0  # then climb back and search
    land_alt_m: float = 0.3
    smoothing: float = 0.4  # alpha: weight of a new target's position in the estimate
    velocity_gain: float = 0.05  # beta: of its position residual in the velocity estimate
    step_s: float = 0.05


class _Segment(NamedTuple):
    """From ``t0_ns``: the command ramps from ``vc0`` at ``slope`` for ``ramp_s``, then holds."""

    t0_ns: int
    p0: Vec3
    v0: Vec3
    vc0: Vec3  # the commanded velocity at t0
    slope: Vec3 = (0.0, 0.0, 0.0)  # m/s², during the ramp
    ramp_s: float = 0.0


def _axis(p0: float, v0: float, vc0: float, s: float, u: float, tau: float) -> tuple[float, ...]:
    """One axis of the first-order lag ``v' = (vc(u) - v) / tau`` under the command
    ``vc(u) = vc0 + s·u``: position, velocity and acceleration after ``u`` seconds (closed
    form; the acceleration is continuous in ``u``, so is the tilt)."""
    c = v0 - vc0 + s * tau
    decay = math.exp(-u / tau)
    p = p0 + vc0 * u + s * u * u / 2.0 - s * tau * u + c * tau * (1.0 - decay)
    v = vc0 + s * u - s * tau + c * decay
    a = s - c / tau * decay
    return p, v, a


class PrecLandVehicle:
    """The vehicle and its precland controller (see the module docstring)."""

    def __init__(self, config: PrecLandConfig, start_ns: int) -> None:
        self.config = config
        self.start_ns = start_ns
        zero = (0.0, 0.0, 0.0)
        self._segments: list[_Segment] = [_Segment(start_ns, config.start_ned_m, zero, zero)]
        self._starts: list[int] = [start_ns]
        self.phase = Phase.SEARCH
        self.estimate: Vec3 | None = None  # the pad at ``estimate_ns`` (host time)
        self.estimate_velocity: Vec3 = (0.0, 0.0, 0.0)
        self.estimate_ns = start_ns
        self._last_target: ReceivedTarget | None = None
        self._last_fresh_ns: int | None = None
        self.landed_ns: int | None = None
        self.landing_error_m: float | None = None
        self.counts: dict[str, int] = dict.fromkeys(
            (
                "targets",
                "targets_used",
                "targets_unusable",
                "steps",
                "descent_steps",
                "stale_descents",
                "holds",
                "invalid_positions",
                "climbs",
            ),
            0,
        )

    # -- truth -----------------------------------------------------------------------------

    def _segment(self, host_ns: int) -> _Segment:
        i = bisect.bisect_right(self._starts, host_ns) - 1
        return self._segments[max(i, 0)]

    def truth(self, host_ns: int) -> VehicleTruth:
        p, v, a, _ = self._state(host_ns)
        return VehicleTruth(p, v, tilted_attitude(0.0, a))

    def _state(self, host_ns: int) -> tuple[Vec3, Vec3, Vec3, Vec3]:
        """Position, velocity, acceleration and the command at ``host_ns``."""
        s = self._segment(host_ns)
        tau = self.config.tau_s
        u = max(0.0, (host_ns - s.t0_ns) / 1e9)
        ramp = min(u, s.ramp_s)
        out: list[tuple[float, ...]] = []
        for p0, v0, vc0, slope in zip(s.p0, s.v0, s.vc0, s.slope, strict=True):
            p, v, a = _axis(p0, v0, vc0, slope, ramp, tau)
            vc = vc0 + slope * ramp
            if u > ramp:  # the ramp is over: the command holds
                p, v, a = _axis(p, v, vc, 0.0, u - ramp, tau)
            out.append((p, v, a, vc))
        n, e, d = out
        return (n[0], e[0], d[0]), (n[1], e[1], d[1]), (n[2], e[2], d[2]), (n[3], e[3], d[3])

    def pad_at(self, host_ns: int) -> Vec3:
        """Where the pad truly is at ``host_ns``."""
        c = self.config
        dt = (host_ns - self.start_ns) / 1e9
        p, v = c.pad_ned_m, c.pad_velocity_ned_m_s
        return (p[0] + v[0] * dt, p[1] + v[1] * dt, p[2] + v[2] * dt)

    def height_m(self, host_ns: int) -> float:
        return self.config.ground_z_ned_m - self.truth(host_ns).position_ned_m[2]

    # -- targets ---------------------------------------------------------------------------

    def on_target(self, target: ReceivedTarget) -> None:
        """A LANDING_TARGET arrived (at ``target.host_ns``, ``target.boot_ns`` on its clock)."""
        self.counts["targets"] += 1
        f = target.fields
        if f.get("frame") == _FRAME_LOCAL_NED and not f.get("position_valid"):
            # PX4 would fuse this message's angles as an IR-LOCK report: a host must never
            # send one (gizmo_host.mavlink.landing), so the rig counts it and ignores it.
            self.counts["invalid_positions"] += 1
            return
        point = self._target_point(target)
        capture_age_ns = target.boot_ns - int(target.fields["time_usec"]) * 1000
        timeout_ns = round(self.config.target_timeout_s * 1e9)
        if point is None or not 0 <= capture_age_ns <= timeout_ns:
            self.counts["targets_unusable"] += 1
            return
        self.counts["targets_used"] += 1
        self._last_target = target
        self._last_fresh_ns = target.host_ns
        self._track(point, target.host_ns - capture_age_ns)

    def _track(self, point: Vec3, capture_ns: int) -> None:
        """The alpha-beta step: predict the estimate to the capture, then correct it."""
        old = self.estimate
        if old is None:
            self.estimate, self.estimate_ns = point, capture_ns
            return
        dt = (capture_ns - self.estimate_ns) / 1e9
        if dt <= 0:  # an older capture than the estimate's: its position only
            dt = 0.0
        v = self.estimate_velocity
        predicted = (old[0] + v[0] * dt, old[1] + v[1] * dt, old[2] + v[2] * dt)
        r = (point[0] - predicted[0], point[1] - predicted[1], point[2] - predicted[2])
        a, b = self.config.smoothing, self.config.velocity_gain / dt if dt > 0 else 0.0
        self.estimate = (predicted[0] + a * r[0], predicted[1] + a * r[1], predicted[2] + a * r[2])
        self.estimate_velocity = (v[0] + b * r[0], v[1] + b * r[1], v[2] + b * r[2])
        self.estimate_ns = max(self.estimate_ns, capture_ns)

    def pad_estimate(self, now_ns: int) -> Vec3 | None:
        """The pad's estimated position now: the estimate carried at its velocity."""
        e = self.estimate
        if e is None:
            return None
        v, dt = self.estimate_velocity, (now_ns - self.estimate_ns) / 1e9
        return (e[0] + v[0] * dt, e[1] + v[1] * dt, e[2] + v[2] * dt)

    def _target_point(self, target: ReceivedTarget) -> Vec3 | None:
        f = target.fields
        if f.get("position_valid") and f["frame"] == _FRAME_LOCAL_NED:
            point = (float(f["x"]), float(f["y"]), float(f["z"]))
            return point if all(math.isfinite(c) for c in point) else None
        if f["frame"] != _FRAME_BODY_FRD:
            return None
        ax, ay = float(f["angle_x"]), float(f["angle_y"])
        if not (math.isfinite(ax) and math.isfinite(ay)) or max(abs(ax), abs(ay)) >= 1.5:
            return None
        truth = self.truth(target.host_ns)  # ArduPilot's way: its attitude at arrival
        los = quat_rotate(truth.quaternion_wxyz, (-math.tan(ay), math.tan(ax), 1.0))
        if los[2] <= 1e-3:
            return None
        p = truth.position_ned_m
        scale = (self.config.ground_z_ned_m - p[2]) / los[2]
        return (p[0] + los[0] * scale, p[1] + los[1] * scale, self.config.ground_z_ned_m)

    def fresh(self, now_ns: int) -> bool:
        last = self._last_fresh_ns
        timeout = round(self.config.target_timeout_s * 1e9)
        return last is not None and now_ns - last <= timeout

    # -- control ---------------------------------------------------------------------------

    def step(self, now_ns: int) -> None:
        """One controller update at ``now_ns``: choose the phase and the velocity command."""
        if self.phase is Phase.LANDED:
            return
        c = self.config
        self.counts["steps"] += 1
        here = self.truth(now_ns)
        p = here.position_ned_m
        height = c.ground_z_ned_m - p[2]
        last = self._last_fresh_ns
        lost_s = math.inf if last is None else (now_ns - last) / 1e9
        vn = ve = vd = 0.0
        pad = self.pad_estimate(now_ns)
        if pad is not None and lost_s <= c.search_timeout_s:
            dn, de = pad[0] - p[0], pad[1] - p[1]
            fn, fe = self.estimate_velocity[0], self.estimate_velocity[1]
            vn, ve = _limit(fn + c.gain_per_s * dn, fe + c.gain_per_s * de, c.max_speed_m_s)
            if lost_s > c.target_timeout_s:
                self._enter(Phase.HOLD)  # over the estimate, no descent
            elif math.hypot(dn, de) <= c.acceptance_m:
                self._enter(Phase.DESCEND)
                vd = c.descent_m_s
            else:
                self._enter(Phase.APPROACH)
        else:
            self._enter(Phase.SEARCH)
            if height < c.search_alt_m - 0.05:
                vd = -c.climb_m_s
                self.counts["climbs"] += 1
        if vd > 0:
            self.counts["descent_steps"] += 1
            if not self.fresh(now_ns):  # checked again, by the arrivals alone
                self.counts["stale_descents"] += 1
            if height <= c.land_alt_m:
                self._land(now_ns, p)
                return
        self._command(now_ns, here, (vn, ve, vd))

    def _enter(self, phase: Phase) -> None:
        if phase is Phase.HOLD and self.phase is not Phase.HOLD:
            self.counts["holds"] += 1
        self.phase = phase

    def _land(self, now_ns: int, p: Vec3) -> None:
        self.phase = Phase.LANDED
        self.landed_ns = now_ns
        pad = self.pad_at(now_ns)
        self.landing_error_m = math.hypot(p[0] - pad[0], p[1] - pad[1])
        zero = (0.0, 0.0, 0.0)
        touchdown = (p[0], p[1], self.config.ground_z_ned_m)
        self._append(_Segment(now_ns, touchdown, zero, zero))

    def _command(self, now_ns: int, here: VehicleTruth, command: Vec3) -> None:
        """A new horizontal command moves from the last by at most the slew; the vertical one
        is reached within the step (a stop is a stop). Each ramps from the command of now over
        one step: a command that stepped would step the acceleration, and with it the tilt
        (by up to 2°, which no airframe does; a pose interpolated across such a step is off by
        as much)."""
        _, _, _, now = self._state(now_ns)
        step = self.config.step_s
        dn, de = _limit(command[0] - now[0], command[1] - now[1], self.config.slew_m_s2 * step)
        slope = (dn / step, de / step, (command[2] - now[2]) / step)
        p, v = here.position_ned_m, here.velocity_ned_m_s
        self._append(_Segment(now_ns, p, v, now, slope, step))

    def _append(self, segment: _Segment) -> None:
        if segment.t0_ns <= self._starts[-1]:
            return
        self._segments.append(segment)
        self._starts.append(segment.t0_ns)
        if len(self._segments) > _MAX_SEGMENTS:
            del self._segments[: _MAX_SEGMENTS // 2]
            del self._starts[: _MAX_SEGMENTS // 2]

    def summary(self) -> dict[str, Any]:
        landed = self.landed_ns is not None
        return {
            "landed": landed,
            "phase": self.phase.value,
            "landing_error_m": None
            if self.landing_error_m is None
            else round(self.landing_error_m, 4),
            "time_to_land_s": None
            if self.landed_ns is None
            else round((self.landed_ns - self.start_ns) / 1e9, 2),
            **self.counts,
        }


def _limit(vn: float, ve: float, limit: float) -> tuple[float, float]:
    speed = math.hypot(vn, ve)
    if speed <= limit:
        return vn, ve
    return vn * limit / speed, ve * limit / speed
