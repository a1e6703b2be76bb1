"""The HIL scenario: fusion's accuracy case (issue 12) on the stand-in.

The ego orbits a ground target at 10 m radius, 10 m up, nose on it, and swings its yaw ±30°
around that (peaking at 90°/s) so the time alignment is exercised all along; the camera is the
Config.json box sensor (pitched -45°), so the target stays in the image. The target is a flat
0.5 m marker whose centre lies on the ground plane (``ground_z_ned_m`` = 0): the ground-plane
position fusion computes is then the target's own position, and its error is fusion's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gizmo_host.rigs.rflysim import SimScenario, Vehicle
from gizmo_host.rigs.rflysim.tracks import Hover, Orbit, Vec3

MARKER_SIZE_M = (0.5, 0.5, 0.02)
NO_SPIN_S = 1e9


@dataclass(frozen=True, slots=True)
class SwingingOrbit:
    """An :class:`Orbit` (nose on the centre) with a sinusoidal yaw swing on top."""

    orbit: Orbit
    amplitude_deg: float = 30.0
    peak_rate_deg_s: float = 90.0

    def position_ned_m(self, t_s: float) -> Vec3:
        return self.orbit.position_ned_m(t_s)

    def yaw_rad(self, t_s: float) -> float:
        omega = self.peak_rate_deg_s / self.amplitude_deg  # rad/s of the swing's phase
        return self.orbit.yaw_rad(t_s) + math.radians(self.amplitude_deg) * math.sin(omega * t_s)


def swinging_orbit(ego_id: int) -> SimScenario:
    """The ego ``ego_id`` around a marker on the ground, CopterID ``ego_id + 1``."""
    orbit = Orbit(radius_m=10.0, altitude_m=10.0, speed_m_s=2.0, spin_start_s=NO_SPIN_S)
    ego = Vehicle(ego_id, SwingingOrbit(orbit))
    marker = Vehicle(ego_id + 1, Hover((0.0, 0.0, 0.0)), MARKER_SIZE_M)
    return SimScenario("swinging-orbit", ego, (marker,))
