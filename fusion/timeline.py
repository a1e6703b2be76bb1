"""A bounded pose history on the host timeline, and the pose at any measurement's time.

A measurement is placed with the vehicle's pose at its **capture** time, not its arrival: at
90°/s of yaw, 30 ms of vision latency is 2.7° of bearing. Between two poses the position is
interpolated linearly and the attitude by slerp. The history holds one pose epoch: a pose of
another epoch (an odometry discontinuity, a sim-clock reset or jump) clears it, because poses
of two epochs are not on one timeline.

Nothing is ever blended across a step the poses themselves contradict (``JumpBounds``): a
velocity change faster than an acceleration bound, a position step further than the reported
velocities carry it (or, without velocity, than a speed bound or the chord of the poses before
it), or an attitude step faster than an angular-rate bound; checked across a gap too, with
bounds that grow with it. Such a pose appended breaks the history (``Added.JUMP``: cleared,
then kept as the first of a new stretch: a simulator reposition is real); one that would fall
between two poses it contradicts is dropped (``Added.CONFLICT``), and so is a different pose
at a time already held. Whether a measurement newer than the newest pose may wait or be
extrapolated is the world model's policy; this module answers where the time falls and
extrapolates when asked, with only what the poses vouch for (``PoseHistory.extrapolate``).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from enum import Enum
from typing import Final, NamedTuple

from .geometry import (
    Quat,
    Vec3,
    lerp,
    quat_angle_rad,
    quat_conjugate,
    quat_from_rotvec,
    quat_multiply,
    quat_rotate,
    quat_to_rotvec,
    slerp,
)
from .inputs import PoseSample
from .jump_rule import JumpBounds

__all__ = ["Added", "JumpBounds", "PoseAt", "PoseHistory", "Where"]

_NS: Final = 1e-9
_new_tuple: Final = tuple.__new__  # builds a NamedTuple without its Python-level __new__


class Where(Enum):
    """Where a time falls relative to the history."""

    INSIDE = "inside"  # bracketed by two poses no more than max_gap apart (or on one)
    NEWER = "newer"  # after the newest pose
    BEFORE = "before"  # before the oldest pose held
    GAP = "gap"  # between two poses further apart than max_gap
    EMPTY = "empty"  # no pose in this epoch


_INSIDE: Final = Where.INSIDE  # a module constant: an enum member's lookup costs 60 ns a time


class Added(Enum):
    APPENDED = "appended"
    INSERTED = "inserted"  # arrived out of order, put in its place
    NEW_EPOCH = "new_epoch"  # cleared the history, then appended
    JUMP = "jump"  # contradicted the newest pose: cleared the history, then appended
    DUPLICATE = "duplicate"  # the same pose at the same host time as a held one: dropped
    CONFLICT = "conflict"  # another pose at a held time, or contradicting both neighbours
    OLD_EPOCH = "old_epoch"  # from an epoch before the current one: dropped


def _same_pose(a: PoseSample, b: PoseSample) -> bool:
    """Two reports of one instant that agree (a duplicated datagram)."""
    return (
        math.dist(a.position_ned_m, b.position_ned_m) <= 1e-3
        and quat_angle_rad(a.quaternion_wxyz, b.quaternion_wxyz) <= 1e-3
    )


class PoseAt(NamedTuple):
    """The vehicle's pose at ``host_ns`` as the history estimates it."""

    host_ns: int
    position_ned_m: Vec3
    quaternion_wxyz: Quat
    velocity_ned_m_s: Vec3 | None
    extrapolated_ns: int  # how far past the newest pose (0 when interpolated)


# PoseAt as a final: compiled, a final is a C static, where a module-level name is a
# dictionary lookup at each use (one a pose lookup).
_POSE_AT: Final = PoseAt


class PoseMotion(NamedTuple):
    """How fast the pose changes about a time: what an error in that time costs."""

    velocity_ned_m_s: Vec3
    angular_rate_ned_rad_s: Vec3  # about NED axes


def _at(pose: PoseSample) -> PoseAt:
    return PoseAt(pose.host_ns, pose.position_ned_m, pose.quaternion_wxyz, pose.velocity_ned_m_s, 0)


class PoseHistory:
    """At most ``max_samples`` poses of the current epoch, ordered by host time."""

    def __init__(
        self,
        *,
        max_samples: int = 512,
        max_gap_ms: float = 100.0,
        bounds: JumpBounds | None = None,
        min_span_ms: float = 10.0,
    ) -> None:
        """``bounds``: the jump rule (:class:`JumpBounds`); ``None`` checks nothing.
        ``min_span_ms``: the shortest span a velocity is ever taken from two positions over
        (the extrapolation's reach: a position error then is at most doubled)."""
        if max_samples < 2:
            raise ValueError(f"max_samples: expected >= 2, got {max_samples!r}")
        if not max_gap_ms > 0:
            raise ValueError(f"max_gap_ms: expected > 0, got {max_gap_ms!r}")
        if not min_span_ms > 0:
            raise ValueError(f"min_span_ms: expected > 0, got {min_span_ms!r}")
        self._max = max_samples
        self._max_gap_ns = round(max_gap_ms * 1e6)
        self._min_span_ns = max(1, round(min_span_ms * 1e6))
        self._bounds = bounds
        self._times: list[int] = []
        self._poses: list[PoseSample] = []
        self.changes = 0  # adds and clears: a placement's cache key
        self.epoch: int | None = None
        # The last bracket's motion, by ``changes`` and its index: a board's results come
        # many times between two poses, and each pair of poses moves at one rate.
        self._motion: tuple[int, int, PoseMotion] | None = None

    def __len__(self) -> int:
        return len(self._poses)

    @property
    def newest(self) -> PoseSample | None:
        return self._poses[-1] if self._poses else None

    @property
    def oldest(self) -> PoseSample | None:
        return self._poses[0] if self._poses else None

    def clear(self) -> None:
        self.changes += 1
        self._times.clear()
        self._poses.clear()

    def add(self, pose: PoseSample) -> Added:
        self.changes += 1
        outcome = Added.APPENDED
        if pose.epoch != self.epoch:
            if self.epoch is not None and pose.epoch < self.epoch:
                return Added.OLD_EPOCH
            outcome = Added.NEW_EPOCH if self.epoch is not None else Added.APPENDED
            self.epoch = pose.epoch
            self.clear()
        times, poses, t = self._times, self._poses, pose.host_ns
        if not times or t > times[-1]:
            if times and not self._consistent(poses[-1], pose, len(times) - 1):
                self.clear()
                outcome = Added.JUMP
            times.append(t)
            poses.append(pose)
        else:
            i = bisect_left(times, t)
            if times[i] == t:
                return Added.DUPLICATE if _same_pose(poses[i], pose) else Added.CONFLICT
            if (i > 0 and not self._consistent(poses[i - 1], pose, i - 1)) or not (
                self._consistent(pose, poses[i], i)
            ):
                return Added.CONFLICT
            times.insert(i, t)
            poses.insert(i, pose)
            outcome = Added.INSERTED
        if len(times) > self._max:
            del times[0], poses[0]
        return outcome

    def _consistent(self, a: PoseSample, b: PoseSample, before: int) -> bool:
        """Whether ``b`` may follow ``a`` by the jump rule; the first ``before`` poses held
        are ``a``'s predecessors. Across a gap too: nothing is blended across it, but a
        velocity its position change contradicts is a jump however long the gap (the bounds
        grow with it)."""
        bounds = self._bounds
        if bounds is None:
            return True
        reference = None
        if a.velocity_ned_m_s is None or b.velocity_ned_m_s is None:
            reference = self._reference(a.host_ns, before)
        return bounds.consistent(a, b, reference)

    def _reference(self, t_ns: int, end: int) -> PoseSample | None:
        """The newest of the first ``end`` poses at least the minimum span before ``t_ns``,
        with no gap wider than ``max_gap`` on the way to it; ``None`` when there is none."""
        times, later = self._times, t_ns
        for k in range(end - 1, -1, -1):
            if later - times[k] > self._max_gap_ns:
                return None
            if t_ns - times[k] >= self._min_span_ns:
                return self._poses[k]
            later = times[k]
        return None

    def where(self, t_ns: int) -> Where:
        times = self._times
        if not times:
            return Where.EMPTY
        if t_ns > times[-1]:
            return Where.NEWER
        if t_ns < times[0]:
            return Where.BEFORE
        i = bisect_left(times, t_ns)
        if times[i] == t_ns or times[i] - times[i - 1] <= self._max_gap_ns:
            return Where.INSIDE
        return Where.GAP

    def interpolate(self, t_ns: int) -> PoseAt | None:
        """The pose at ``t_ns`` when it is :attr:`Where.INSIDE`, else ``None``."""
        times = self._times
        if not times or not times[0] <= t_ns <= times[-1]:
            return None
        i = bisect_left(times, t_ns)
        if times[i] == t_ns:
            return _at(self._poses[i])
        if times[i] - times[i - 1] > self._max_gap_ns:
            return None
        return self._between(i, t_ns)

    def locate(self, t_ns: int) -> tuple[Where, PoseAt | None]:
        """``where(t_ns)``, with ``interpolate(t_ns)`` when that is :attr:`Where.INSIDE`: one
        search for a measurement's placement."""
        times = self._times
        if not times:
            return Where.EMPTY, None
        if t_ns > times[-1]:
            return Where.NEWER, None
        if t_ns < times[0]:
            return Where.BEFORE, None
        i = bisect_left(times, t_ns)
        if times[i] == t_ns:
            return _INSIDE, _at(self._poses[i])
        if times[i] - times[i - 1] > self._max_gap_ns:
            return Where.GAP, None
        return _INSIDE, self._between(i, t_ns)  # most: a capture between two poses

    def _between(self, i: int, t_ns: int) -> PoseAt:
        """The pose at ``t_ns``, strictly between the poses ``i - 1`` and ``i``."""
        t0, t1 = self._times[i - 1], self._times[i]
        p0, p1 = self._poses[i - 1], self._poses[i]
        f = (t_ns - t0) / (t1 - t0)
        v0, v1 = p0.velocity_ned_m_s, p1.velocity_ned_m_s
        return _new_tuple(
            _POSE_AT,
            (
                t_ns,
                lerp(p0.position_ned_m, p1.position_ned_m, f),
                slerp(p0.quaternion_wxyz, p1.quaternion_wxyz, f),
                None if v0 is None or v1 is None else lerp(v0, v1, f),
                0,
            ),
        )

    def extrapolate(self, t_ns: int, angular_rate_frd_rad_s: Vec3 | None = None) -> PoseAt | None:
        """The pose at ``t_ns`` past the newest one, at constant velocity and angular rate;
        ``None`` when the poses do not vouch for one.

        Only from a newest pose the jump rule checked at a span of at most ``max_gap`` (a pose
        after a gap was checked only as loosely as the gap is long). The velocity is the newest
        pose's, else the chord from the newest pose at least ``min_span`` before it (over a
        shorter one a position's noise becomes a velocity: 0.45 m over 1 ms is 450 m/s); the
        rate is ``angular_rate_frd_rad_s`` (the IMU's) when given, else that chord's slerp.
        Neither may exceed the jump rule's bounds. Bounding how far is the caller's policy.
        """
        poses, times = self._poses, self._times
        if not poses:
            return None
        p1 = poses[-1]
        dt_ns = t_ns - p1.host_ns
        if dt_ns <= 0:
            return self.interpolate(t_ns)
        if len(poses) < 2 or p1.host_ns - times[-2] > self._max_gap_ns:
            return None
        p0 = self._reference(p1.host_ns, len(poses) - 1)
        span = None if p0 is None else (p1.host_ns - p0.host_ns) * _NS
        dt = dt_ns * _NS
        velocity = p1.velocity_ned_m_s
        if velocity is None and p0 is not None and span is not None:
            a, b = p0.position_ned_m, p1.position_ned_m
            velocity = ((b[0] - a[0]) / span, (b[1] - a[1]) / span, (b[2] - a[2]) / span)
        bounds = self._bounds
        if velocity is None or (bounds is not None and math.hypot(*velocity) > bounds.speed_m_s):
            return None
        position = p1.position_ned_m
        position = (
            position[0] + velocity[0] * dt,
            position[1] + velocity[1] * dt,
            position[2] + velocity[2] * dt,
        )
        q = p1.quaternion_wxyz
        if angular_rate_frd_rad_s is not None:
            wx, wy, wz = angular_rate_frd_rad_s
            q = quat_multiply(q, quat_from_rotvec((wx * dt, wy * dt, wz * dt)))
        elif p0 is not None and span is not None:
            turned = quat_angle_rad(p0.quaternion_wxyz, q)
            if bounds is not None and turned > bounds.rate_rad_s * span:
                return None
            q = slerp(p0.quaternion_wxyz, q, 1.0 + dt / span)
        else:
            return None
        return PoseAt(t_ns, position, q, velocity, dt_ns)

    def motion(self, t_ns: int, angular_rate_frd_rad_s: Vec3 | None = None) -> PoseMotion | None:
        """The pose's velocity and angular rate about ``t_ns``: the change between the two
        poses around it (the first or last two outside the history; past the newest, the
        IMU's ``angular_rate_frd_rad_s`` when given). ``None`` without two poses within
        ``max_gap``."""
        times = self._times
        if len(times) < 2:
            return None
        i = min(max(bisect_left(times, t_ns), 1), len(times) - 1)
        by_imu = angular_rate_frd_rad_s is not None and t_ns > times[-1]
        kept = self._motion
        if not by_imu and kept is not None and kept[0] == self.changes and kept[1] == i:
            return kept[2]
        span_ns = times[i] - times[i - 1]
        if not 0 < span_ns <= self._max_gap_ns:
            return None
        a, b = self._poses[i - 1], self._poses[i]
        k = 1.0 / (span_ns * _NS)
        pa, pb = a.position_ned_m, b.position_ned_m
        velocity = ((pb[0] - pa[0]) * k, (pb[1] - pa[1]) * k, (pb[2] - pa[2]) * k)
        if by_imu:
            assert angular_rate_frd_rad_s is not None
            return PoseMotion(velocity, quat_rotate(b.quaternion_wxyz, angular_rate_frd_rad_s))
        # b = exp(ω·span) ∘ a, ω about NED axes
        step = quat_multiply(b.quaternion_wxyz, quat_conjugate(a.quaternion_wxyz))
        turn = quat_to_rotvec(step)
        motion = PoseMotion(velocity, (turn[0] * k, turn[1] * k, turn[2] * k))
        self._motion = (self.changes, i, motion)
        return motion
