"""A vehicle's full state from its track: velocity, attitude, rates and what its IMU feels.

Derivatives are central differences (step 1 ms: errors well below a micrometre per second for
the built-in tracks), so any :class:`~gizmo_host.rigs.rflysim.tracks.Track` works without
hand-derived formulas. The attitude is a multicopter's: the yaw is the track's, roll and pitch tilt
the thrust (body -z) along the specific force ``a - g``, as a vehicle must to follow the path. The
IMU therefore reads ``(0, 0, -|a - g|)`` in body FRD, and ``(0, 0, -9.81)`` when hovering.
Conventions are :mod:`hil_geometry.rotations`'s: world NED, body FRD, ``(w, x, y, z)``
quaternions rotating FRD vectors into NED, Z-Y-X Euler angles.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from gizmo_host.rigs.rflysim.tracks import Track
from hil_geometry.rotations import (
    Quat,
    Vec3,
    quat_conjugate,
    quat_from_euler_zyx,
    quat_multiply,
    quat_rotate_inverse,
    quat_to_euler_zyx,
    quat_to_rotvec,
)

GRAVITY_M_S2 = 9.80665
STEP_S = 1e-3  # central-difference step


class SimVehicleState(NamedTuple):
    """One vehicle at one instant, in the units and frames CopterSim sends."""

    position_ned_m: Vec3
    velocity_ned_m_s: Vec3
    acceleration_ned_m_s2: Vec3
    quaternion_wxyz: Quat  # FRD in NED
    euler_rad: Vec3  # roll, pitch, yaw (Z-Y-X), yaw wrapped to ±π
    angular_rate_frd_rad_s: Vec3
    specific_force_frd_m_s2: Vec3  # what an accelerometer reads

    @property
    def yaw_rad(self) -> float:
        return self.euler_rad[2]


def _scaled_diff(a: Vec3, b: Vec3, k: float) -> Vec3:
    return ((a[0] - b[0]) * k, (a[1] - b[1]) * k, (a[2] - b[2]) * k)


def velocity_ned(track: Track, t_s: float) -> Vec3:
    return _scaled_diff(
        track.position_ned_m(t_s + STEP_S), track.position_ned_m(t_s - STEP_S), 0.5 / STEP_S
    )


def acceleration_ned(track: Track, t_s: float) -> Vec3:
    ahead = track.position_ned_m(t_s + STEP_S)
    here = track.position_ned_m(t_s)
    behind = track.position_ned_m(t_s - STEP_S)
    k = 1.0 / (STEP_S * STEP_S)
    return (
        (ahead[0] - 2.0 * here[0] + behind[0]) * k,
        (ahead[1] - 2.0 * here[1] + behind[1]) * k,
        (ahead[2] - 2.0 * here[2] + behind[2]) * k,
    )


def tilted_attitude(yaw_rad: float, acceleration_ned_m_s2: Vec3) -> Quat:
    """The attitude with ``yaw_rad`` whose body -z points along the specific force.

    The specific force ``f = a - g`` in the yaw-rotated frame gives pitch ``atan2(-f_x, -f_z)``
    and roll ``asin(f_y / |f|)`` (``Ry(pitch)·Rx(roll)·(0, 0, -|f|) = f``). A vehicle in free
    fall (``|f| = 0``) keeps level.
    """
    an, ae, ad = acceleration_ned_m_s2
    fn, fe, fd = an, ae, ad - GRAVITY_M_S2
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    fx, fy, fz = c * fn + s * fe, -s * fn + c * fe, fd
    magnitude = math.sqrt(fx * fx + fy * fy + fz * fz)
    if magnitude < 1e-9:
        return quat_from_euler_zyx(0.0, 0.0, yaw_rad)
    pitch = math.atan2(-fx, -fz)
    roll = math.asin(max(-1.0, min(1.0, fy / magnitude)))
    return quat_from_euler_zyx(roll, pitch, yaw_rad)


def attitude(track: Track, t_s: float) -> Quat:
    return tilted_attitude(track.yaw_rad(t_s), acceleration_ned(track, t_s))


def vehicle_state(track: Track, t_s: float) -> SimVehicleState:
    """Everything CopterSim reports about a vehicle on ``track`` at scenario time ``t_s``."""
    accel = acceleration_ned(track, t_s)
    q = tilted_attitude(track.yaw_rad(t_s), accel)
    # The body rate is the relative rotation between the attitudes one step either side.
    q_before = attitude(track, t_s - STEP_S)
    q_after = attitude(track, t_s + STEP_S)
    rotvec = quat_to_rotvec(quat_multiply(quat_conjugate(q_before), q_after))
    rate = (rotvec[0] / (2 * STEP_S), rotvec[1] / (2 * STEP_S), rotvec[2] / (2 * STEP_S))
    gravity_free = (accel[0], accel[1], accel[2] - GRAVITY_M_S2)
    return SimVehicleState(
        position_ned_m=track.position_ned_m(t_s),
        velocity_ned_m_s=velocity_ned(track, t_s),
        acceleration_ned_m_s2=accel,
        quaternion_wxyz=q,
        euler_rad=quat_to_euler_zyx(q),
        angular_rate_frd_rad_s=rate,
        specific_force_frd_m_s2=quat_rotate_inverse(q, gravity_free),
    )
