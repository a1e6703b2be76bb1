"""Scripted paths: where a vehicle is and where it points at scenario time ``t_s``, in NED.

A :class:`Track` gives position and yaw only, as closed-form functions of time, so a scenario is
exactly reproducible and its geometry can be checked analytically; velocities, accelerations,
attitude and rates follow from them (:mod:`gizmo_host.rigs.rflysim.kinematics`). Yaw is unwrapped
(continuous, not limited to ±π) so its derivative is the yaw rate everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

Vec3 = tuple[float, float, float]

_TAU = 2.0 * math.pi


class Track(Protocol):
    """A vehicle's scripted path: NED position (metres) and unwrapped yaw (radians) at ``t_s``."""

    def position_ned_m(self, t_s: float) -> Vec3: ...

    def yaw_rad(self, t_s: float) -> float: ...


def _heading(dn: float, de: float) -> float:
    return math.atan2(de, dn)


@dataclass(frozen=True, slots=True)
class Hover:
    """Stays at one point with one yaw (a parked vehicle, or a bystander)."""

    point_ned_m: Vec3
    yaw: float = 0.0

    def position_ned_m(self, t_s: float) -> Vec3:
        return self.point_ned_m

    def yaw_rad(self, t_s: float) -> float:
        return self.yaw


@dataclass(frozen=True, slots=True)
class Orbit:
    """A circle at ``altitude_m`` around a ground point, nose on the centre, with yaw spins.

    The vehicle moves clockwise seen from above (north towards east) at ``speed_m_s``. From
    ``spin_start_s``, every ``spin_every_s`` seconds, it turns a full extra circle at
    ``spin_rate_deg_s`` (world yaw rate) and ends facing the centre again: the spin lasts
    ``2π / (Ω - ω)``, with ``Ω`` the spin rate and ``ω`` the orbit's angular speed.
    """

    center_ned_m: Vec3 = (0.0, 0.0, 0.0)
    radius_m: float = 10.0
    altitude_m: float = 10.0
    speed_m_s: float = 2.0
    spin_rate_deg_s: float = 90.0
    spin_start_s: float = 8.0
    spin_every_s: float = 20.0

    def __post_init__(self) -> None:
        for name in ("radius_m", "speed_m_s", "spin_every_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Orbit.{name}: expected > 0, got {getattr(self, name)}")
        if not self.spin_rate_deg_s > math.degrees(self.angular_speed_rad_s):
            raise ValueError(
                f"Orbit.spin_rate_deg_s: expected above the orbit's own "
                f"{math.degrees(self.angular_speed_rad_s):.3f} deg/s, got {self.spin_rate_deg_s}"
            )
        if not self.spin_duration_s < self.spin_every_s:
            raise ValueError(
                f"Orbit.spin_every_s: expected more than one spin ({self.spin_duration_s:.3f} s), "
                f"got {self.spin_every_s}"
            )

    @property
    def angular_speed_rad_s(self) -> float:
        return self.speed_m_s / self.radius_m

    @property
    def spin_duration_s(self) -> float:
        return _TAU / (math.radians(self.spin_rate_deg_s) - self.angular_speed_rad_s)

    def spin_at(self, t_s: float) -> tuple[int, float | None]:
        """Spins completed by ``t_s`` and, during one, the seconds since it began."""
        if t_s < self.spin_start_s:
            return 0, None
        since = t_s - self.spin_start_s
        k = math.floor(since / self.spin_every_s)
        into = since - k * self.spin_every_s
        if into < self.spin_duration_s:
            return k, into
        return k + 1, None

    def _phase(self, t_s: float) -> float:
        return self.angular_speed_rad_s * t_s

    def position_ned_m(self, t_s: float) -> Vec3:
        theta = self._phase(t_s)
        n, e, d = self.center_ned_m
        return (
            n + self.radius_m * math.cos(theta),
            e + self.radius_m * math.sin(theta),
            d - self.altitude_m,
        )

    def yaw_rad(self, t_s: float) -> float:
        done, into = self.spin_at(t_s)
        if into is None:  # nose on the centre: the bearing to it is the phase plus π
            return self._phase(t_s) + math.pi + _TAU * done
        start_s = t_s - into
        return (
            self._phase(start_s) + math.pi + _TAU * done + math.radians(self.spin_rate_deg_s) * into
        )


@dataclass(frozen=True, slots=True)
class Drive:
    """A ground vehicle driving a straight line at constant speed along ``heading_deg``."""

    start_ned_m: Vec3
    speed_m_s: float
    heading_deg: float = 0.0

    def position_ned_m(self, t_s: float) -> Vec3:
        h = math.radians(self.heading_deg)
        s = self.speed_m_s * t_s
        n, e, d = self.start_ned_m
        return (n + s * math.cos(h), e + s * math.sin(h), d)

    def yaw_rad(self, t_s: float) -> float:
        return math.radians(self.heading_deg)


@dataclass(frozen=True, slots=True)
class CircleDrive:
    """A ground vehicle driving a circle clockwise (seen from above) at constant speed."""

    center_ned_m: Vec3
    radius_m: float
    speed_m_s: float

    def __post_init__(self) -> None:
        if not self.radius_m > 0:
            raise ValueError(f"CircleDrive.radius_m: expected > 0, got {self.radius_m}")

    def _phase(self, t_s: float) -> float:
        return self.speed_m_s / self.radius_m * t_s

    def position_ned_m(self, t_s: float) -> Vec3:
        theta = self._phase(t_s)
        n, e, d = self.center_ned_m
        return (n + self.radius_m * math.cos(theta), e + self.radius_m * math.sin(theta), d)

    def yaw_rad(self, t_s: float) -> float:
        return self._phase(t_s) + math.pi / 2  # the tangent of a clockwise circle


@dataclass(frozen=True, slots=True)
class MirroredCircle:
    """A ground vehicle driving a circle anticlockwise (seen from above)."""

    center_ned_m: Vec3
    radius_m: float
    speed_m_s: float

    def __post_init__(self) -> None:
        if not self.radius_m > 0:
            raise ValueError(f"MirroredCircle.radius_m: expected > 0, got {self.radius_m}")

    def position_ned_m(self, t_s: float) -> Vec3:
        theta = self.speed_m_s / self.radius_m * t_s
        n, e, d = self.center_ned_m
        return (n + self.radius_m * math.cos(theta), e - self.radius_m * math.sin(theta), d)

    def yaw_rad(self, t_s: float) -> float:
        return -(self.speed_m_s / self.radius_m * t_s) - math.pi / 2


@dataclass(frozen=True, slots=True)
class Approach:
    """Closes in on a moving ``target`` from ``start_distance_m`` to ``standoff_m`` behind it.

    The horizontal gap along the target's heading shrinks exponentially with ``time_constant_s``
    (``standoff + (start - standoff)·e^(-t/τ)``), at ``altitude_m`` above the target, nose on
    the target.
    """

    target: Track
    start_distance_m: float = 30.0
    standoff_m: float = 10.0
    time_constant_s: float = 8.0
    altitude_m: float = 10.0

    def __post_init__(self) -> None:
        if not self.time_constant_s > 0:
            raise ValueError(f"Approach.time_constant_s: expected > 0, got {self.time_constant_s}")

    def gap_m(self, t_s: float) -> float:
        decay = math.exp(-t_s / self.time_constant_s)
        return self.standoff_m + (self.start_distance_m - self.standoff_m) * decay

    def position_ned_m(self, t_s: float) -> Vec3:
        n, e, d = self.target.position_ned_m(t_s)
        heading = self.target.yaw_rad(t_s)
        gap = self.gap_m(t_s)
        return (n - gap * math.cos(heading), e - gap * math.sin(heading), d - self.altitude_m)

    def yaw_rad(self, t_s: float) -> float:
        return self.target.yaw_rad(t_s)  # behind the target along its heading: facing it


@dataclass(frozen=True, slots=True)
class Follow:
    """Keeps ``distance_m`` behind a moving ``target`` at ``altitude_m``, nose on the target."""

    target: Track
    distance_m: float = 10.0
    altitude_m: float = 10.0

    def position_ned_m(self, t_s: float) -> Vec3:
        n, e, d = self.target.position_ned_m(t_s)
        heading = self.target.yaw_rad(t_s)
        return (
            n - self.distance_m * math.cos(heading),
            e - self.distance_m * math.sin(heading),
            d - self.altitude_m,
        )

    def yaw_rad(self, t_s: float) -> float:
        return self.target.yaw_rad(t_s)


def bearing_yaw_rad(frm: Vec3, to: Vec3) -> float:
    """The yaw that points the nose from ``frm`` towards ``to`` (horizontal)."""
    return _heading(to[0] - frm[0], to[1] - frm[1])
