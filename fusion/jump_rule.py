"""The jump rule: what one pose of the vehicle may claim next to its neighbour.

A pose stream's glitch (an estimator's, or a sender's) must never become a target position:
a pose that breaks the rule breaks the pose history (``fusion.timeline``), and is never
blended with the poses before it nor extrapolated from.
"""

from __future__ import annotations

import math
from typing import Final, NamedTuple

from .geometry import Vec3, quat_angle_rad
from .inputs import PoseSample

_NS: Final = 1e-9


class JumpBounds(NamedTuple):
    """What one pose may claim relative to its neighbour; beyond it is a jump, never blended.

    Each pose is an estimate: its position may be off by half ``position_m``, its velocity by
    half ``velocity_m_s``, its stamp by ``stamp_s`` from the instant its numbers describe (a
    whole-millisecond ``time_boot_ms``), and the vehicle accelerates at most ``accel_m_s2``,
    flies at most ``speed_m_s`` and turns at most ``rate_rad_s``. Between two poses ``dt``
    apart, so, a velocity may change by ``velocity_m_s`` plus the acceleration over the span;
    the position step may differ from what the two velocities carry (trapezoid) by
    ``position_m``, the stamps' error at the speed flown, the velocities' error over the span
    and a quarter of the acceleration times the span squared (the most a bounded acceleration
    hides from the trapezoid). Every allowance is in its own unit and none lets a claim pass
    at a short span that a long one would refuse: a 150 m/s velocity error 1 ms after the
    previous pose is a jump. Without velocities the step may not exceed the speed bound over
    the span (give or take the stamps), nor stray from the velocity the earlier pose's own
    predecessors imply (``reference``) by more than their noise and the acceleration allow.
    The attitude may turn ``rate_rad_s`` times the span plus ``attitude_rad``.
    """

    position_m: float = 0.02
    accel_m_s2: float = 30.0
    speed_m_s: float = 60.0
    rate_rad_s: float = math.radians(720.0)
    attitude_rad: float = math.radians(2.0)
    velocity_m_s: float = 1.0
    stamp_s: float = 0.001

    def consistent(self, a: PoseSample, b: PoseSample, reference: PoseSample | None = None) -> bool:
        """Whether ``b`` can follow ``a`` (``a`` earlier) without a jump. ``reference``: a
        pose before ``a``, at least a minimum span before it with no gap between, whose chord
        to ``a`` stands for the velocity when a pose reports none."""
        dt = (b.host_ns - a.host_ns) * _NS
        pa, pb = a.position_ned_m, b.position_ned_m
        step = (pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2])
        va, vb = a.velocity_ned_m_s, b.velocity_ned_m_s
        if va is not None and vb is not None:
            moved = self._carried(va, vb, step, dt)
        else:
            moved = math.hypot(*step) <= self.position_m + self.speed_m_s * (
                dt + 2 * self.stamp_s
            ) and (reference is None or self._follows_chord(reference, a, step, dt))
        turned = quat_angle_rad(a.quaternion_wxyz, b.quaternion_wxyz)
        return moved and turned <= self.attitude_rad + self.rate_rad_s * dt

    def _carried(self, va: Vec3, vb: Vec3, step: Vec3, dt: float) -> bool:
        """The velocity change against the acceleration, the step against the trapezoid."""
        stamps = 2 * self.stamp_s
        if not math.dist(va, vb) <= self.velocity_m_s + self.accel_m_s2 * (dt + stamps):
            return False
        carried = ((va[0] + vb[0]) * dt / 2, (va[1] + vb[1]) * dt / 2, (va[2] + vb[2]) * dt / 2)
        speed = max(math.hypot(*va), math.hypot(*vb))
        allowed = (
            self.position_m
            + speed * stamps
            + 0.5 * self.velocity_m_s * dt
            + 0.25 * self.accel_m_s2 * dt * dt
        )
        return math.dist(step, carried) <= allowed

    def _follows_chord(self, r: PoseSample, a: PoseSample, step: Vec3, dt: float) -> bool:
        """The step from ``a`` against the velocity of the chord ``r`` -> ``a``: the three
        positions' noise and stamps, scaled by how far the chord is carried, and the most a
        bounded acceleration bends the path from the chord's middle to the step's end."""
        span = (a.host_ns - r.host_ns) * _NS
        pr, pa = r.position_ned_m, a.position_ned_m
        v = ((pa[0] - pr[0]) / span, (pa[1] - pr[1]) / span, (pa[2] - pr[2]) / span)
        carried = (v[0] * dt, v[1] * dt, v[2] * dt)
        reach = 1.0 + dt / span
        allowed = (
            self.position_m * reach
            + 2 * self.stamp_s * math.hypot(*v) * reach
            + 0.5 * self.accel_m_s2 * dt * (dt + span)
        )
        return math.dist(step, carried) <= allowed
