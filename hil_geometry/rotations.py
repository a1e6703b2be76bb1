"""Rotations and vectors on plain float tuples: the one geometry module of the tree, shared by
the host's world model (``fusion.geometry`` re-exports it) and the simulator's side, which must
not import ``fusion``.

Conventions (as RflySim and PX4): world NED, body FRD. A quaternion is ``(w, x, y, z)``, unit
length, and rotates a vector of the inner frame into the outer one: the attitude ``q`` of FRD
in NED maps ``v_frd`` to ``v_ned = q ⊗ v ⊗ q*``. Euler angles are Z-Y-X (yaw, then pitch, then
roll, intrinsic): ``R = Rz(yaw)·Ry(pitch)·Rx(roll)``. Matrices are row-major tuples of rows.

Plain floats, not numpy: one fusion event does a handful of 3-vector operations, where numpy's
per-call overhead (~1 µs) would cost more than the arithmetic. The tests check every function
against ``scipy.spatial.transform``, which is a test-only oracle (its ``Slerp`` call alone costs
~72 µs, beyond the 50 µs per-event budget).
"""

from __future__ import annotations

import math
from typing import Final

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]  # (w, x, y, z)
Mat3 = tuple[Vec3, Vec3, Vec3]  # rows

IDENTITY: Final[Quat] = (1.0, 0.0, 0.0, 0.0)
_LERP_DOT: Final = 1.0 - 1e-12  # closer than this, slerp's sin ratio is 0/0: normalised lerp

_sqrt: Final = math.sqrt
_sin: Final = math.sin
_cos: Final = math.cos


# -- vectors -------------------------------------------------------------------------------


def add(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def sub(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def scale(a: Vec3, k: float) -> Vec3:
    return (a[0] * k, a[1] * k, a[2] * k)


def dot(a: Vec3, b: Vec3) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def cross(a: Vec3, b: Vec3) -> Vec3:
    return (
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    )


def norm(a: Vec3) -> float:
    return _sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


def normalize(a: Vec3) -> Vec3:
    """``a / |a|``; raises ValueError for a zero or non-finite vector (no direction)."""
    n = norm(a)
    if not 0.0 < n < math.inf:
        raise ValueError(f"vector: expected a finite non-zero length, got {a!r}")
    return (a[0] / n, a[1] / n, a[2] / n)


def lerp(a: Vec3, b: Vec3, t: float) -> Vec3:
    return (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t)


def angle_between_rad(a: Vec3, b: Vec3) -> float:
    """Angle between two non-zero vectors, accurate near 0 and π (atan2 of |a×b| and a·b)."""
    return math.atan2(norm(cross(a, b)), dot(a, b))


def azimuth_elevation_deg(v_ned: Vec3) -> tuple[float, float]:
    """Azimuth from north towards east in [0, 360), elevation negative below the horizon."""
    north, east, down = v_ned
    azimuth = math.degrees(math.atan2(east, north)) % 360.0
    if azimuth >= 360.0:  # a tiny negative angle rounds to 360.0 after the modulo
        azimuth = 0.0
    elevation = math.degrees(math.atan2(-down, math.hypot(north, east)))
    return azimuth, elevation


# -- quaternions ---------------------------------------------------------------------------


def quat_multiply(a: Quat, b: Quat) -> Quat:
    """Hamilton product ``a ⊗ b``: rotate by ``b`` first, then by ``a``."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


def quat_conjugate(q: Quat) -> Quat:
    """The inverse rotation of a unit quaternion."""
    return (q[0], -q[1], -q[2], -q[3])


def quat_norm(q: Quat) -> float:
    return _sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])


def quat_normalize(q: Quat) -> Quat:
    n = quat_norm(q)
    if not 0.0 < n < math.inf:
        raise ValueError(f"quaternion: expected a finite non-zero norm, got {q!r}")
    return (q[0] / n, q[1] / n, q[2] / n, q[3] / n)


def quat_canonical(q: Quat) -> Quat:
    """``q`` and ``-q`` are the same rotation: the one with ``w >= 0``."""
    return (-q[0], -q[1], -q[2], -q[3]) if q[0] < 0.0 else q


def quat_rotate(q: Quat, v: Vec3) -> Vec3:
    """``q ⊗ v ⊗ q*`` for a unit ``q`` (``v + w·t + u×t`` with ``t = 2·u×v``)."""
    w, ux, uy, uz = q
    vx, vy, vz = v
    tx = 2.0 * (uy * vz - uz * vy)
    ty = 2.0 * (uz * vx - ux * vz)
    tz = 2.0 * (ux * vy - uy * vx)
    return (
        vx + w * tx + uy * tz - uz * ty,
        vy + w * ty + uz * tx - ux * tz,
        vz + w * tz + ux * ty - uy * tx,
    )


def quat_rotate_inverse(q: Quat, v: Vec3) -> Vec3:
    """``q* ⊗ v ⊗ q``: a vector of the outer frame expressed in the inner one."""
    return quat_rotate((q[0], -q[1], -q[2], -q[3]), v)


def quat_to_matrix(q: Quat) -> Mat3:
    """Rotation matrix of a unit quaternion (inner -> outer)."""
    w, x, y, z = q
    return (
        (1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)),
        (2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)),
        (2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)),
    )


def matrix_to_quat(m: Mat3) -> Quat:
    """The unit quaternion (``w >= 0``) of a rotation matrix (Shepperd's method)."""
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = m
    trace = m00 + m11 + m22
    if trace > 0.0:
        s = 2.0 * _sqrt(1.0 + trace)
        q = (0.25 * s, (m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s)
    elif m00 > m11 and m00 > m22:
        s = 2.0 * _sqrt(1.0 + m00 - m11 - m22)
        q = ((m21 - m12) / s, 0.25 * s, (m01 + m10) / s, (m02 + m20) / s)
    elif m11 > m22:
        s = 2.0 * _sqrt(1.0 + m11 - m00 - m22)
        q = ((m02 - m20) / s, (m01 + m10) / s, 0.25 * s, (m12 + m21) / s)
    else:
        s = 2.0 * _sqrt(1.0 + m22 - m00 - m11)
        q = ((m10 - m01) / s, (m02 + m20) / s, (m12 + m21) / s, 0.25 * s)
    return quat_canonical(quat_normalize(q))


def quat_from_euler_zyx(roll_rad: float, pitch_rad: float, yaw_rad: float) -> Quat:
    """``Rz(yaw)·Ry(pitch)·Rx(roll)`` as a quaternion (scipy: ``from_euler("ZYX", [y, p, r])``)."""
    cr, sr = _cos(roll_rad * 0.5), _sin(roll_rad * 0.5)
    cp, sp = _cos(pitch_rad * 0.5), _sin(pitch_rad * 0.5)
    cy, sy = _cos(yaw_rad * 0.5), _sin(yaw_rad * 0.5)
    return (
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    )


def quat_from_euler_zyx_deg(rpy_deg: Vec3) -> Quat:
    """The same from ``(roll, pitch, yaw)`` in degrees, the order config files use."""
    roll, pitch, yaw = rpy_deg
    return quat_from_euler_zyx(math.radians(roll), math.radians(pitch), math.radians(yaw))


def quat_to_euler_zyx(q: Quat) -> Vec3:
    """``(roll, pitch, yaw)`` in radians; pitch in [-π/2, π/2], the others in [-π, π]."""
    w, x, y, z = q
    roll = math.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    pitch = math.asin(max(-1.0, min(1.0, 2.0 * (w * y - z * x))))
    yaw = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return (roll, pitch, yaw)


def quat_from_rotvec(r: Vec3) -> Quat:
    """The rotation by ``|r|`` radians about ``r`` (the exponential map)."""
    angle = norm(r)
    if angle < 1e-12:
        return (1.0, r[0] * 0.5, r[1] * 0.5, r[2] * 0.5)
    k = _sin(angle * 0.5) / angle
    return (_cos(angle * 0.5), r[0] * k, r[1] * k, r[2] * k)


def quat_to_rotvec(q: Quat) -> Vec3:
    """The rotation vector of ``q`` (angle in [0, π]): the logarithm map."""
    w, x, y, z = quat_canonical(q)
    s = _sqrt(x * x + y * y + z * z)
    if s < 1e-12:
        return (2.0 * x, 2.0 * y, 2.0 * z)
    k = 2.0 * math.atan2(s, w) / s
    return (x * k, y * k, z * k)


def quat_angle_rad(a: Quat, b: Quat) -> float:
    """The angle of the rotation between two attitudes, in [0, π]."""
    d = abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3])
    return 2.0 * math.acos(min(1.0, d))


def slerp(q0: Quat, q1: Quat, t: float) -> Quat:
    """Spherical interpolation along the shorter arc; ``t`` outside [0, 1] extrapolates."""
    w0, x0, y0, z0 = q0
    w1, x1, y1, z1 = q1
    d = w0 * w1 + x0 * x1 + y0 * y1 + z0 * z1
    if d < 0.0:
        w1, x1, y1, z1, d = -w1, -x1, -y1, -z1, -d
    if d > _LERP_DOT:
        w, x, y, z = (
            w0 + (w1 - w0) * t,
            x0 + (x1 - x0) * t,
            y0 + (y1 - y0) * t,
            z0 + (z1 - z0) * t,
        )
        n = _sqrt(w * w + x * x + y * y + z * z)
        return (w / n, x / n, y / n, z / n)
    theta = math.acos(d)
    s = _sin(theta)
    a = _sin((1.0 - t) * theta) / s
    b = _sin(t * theta) / s
    return (a * w0 + b * w1, a * x0 + b * x1, a * y0 + b * y1, a * z0 + b * z1)


# -- matrices ------------------------------------------------------------------------------


def mat_vec(m: Mat3, v: Vec3) -> Vec3:
    r0, r1, r2 = m
    x, y, z = v
    return (
        r0[0] * x + r0[1] * y + r0[2] * z,
        r1[0] * x + r1[1] * y + r1[2] * z,
        r2[0] * x + r2[1] * y + r2[2] * z,
    )


def mat_transpose_vec(m: Mat3, v: Vec3) -> Vec3:
    """``mᵀ·v``: the inverse rotation for a rotation matrix."""
    r0, r1, r2 = m
    x, y, z = v
    return (
        r0[0] * x + r1[0] * y + r2[0] * z,
        r0[1] * x + r1[1] * y + r2[1] * z,
        r0[2] * x + r1[2] * y + r2[2] * z,
    )


def matrix_from_euler_zyx_deg(rpy_deg: Vec3) -> Mat3:
    """``Rz(yaw)·Ry(pitch)·Rx(roll)`` from ``(roll, pitch, yaw)`` in degrees."""
    return quat_to_matrix(quat_from_euler_zyx_deg(rpy_deg))
