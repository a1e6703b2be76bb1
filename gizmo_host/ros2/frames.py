"""NED/FRD (the world model's frames) to ENU/FLU (ROS' REP 103 ``map`` and ``base_link``).

The conversion is done here once, for every ROS message: a position ``(n, e, d)`` is
``(e, n, -d)`` in ENU, and an attitude (FRD body in NED) becomes FLU body in ENU, ``P·R·F`` with
``P`` the NED->ENU axis swap and ``F`` = diag(1, -1, -1) the FLU->FRD flip.
"""

from __future__ import annotations

import math

from fusion.geometry import Mat3, Quat, Vec3, matrix_to_quat, quat_from_euler_zyx, quat_to_matrix

_P: Mat3 = ((0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, -1.0))  # NED -> ENU
_F: Vec3 = (1.0, -1.0, -1.0)  # FLU -> FRD (diagonal)


def enu_from_ned(v: Vec3) -> Vec3:
    """A position or direction in NED, in ENU."""
    return (v[1], v[0], 0.0 - v[2])  # 0.0 - 0.0 is 0.0, not -0.0


def enu_flu_from_ned_frd(q: Quat) -> Quat:
    """An FRD body's attitude in NED (w, x, y, z) as the FLU body's attitude in ENU."""
    r = quat_to_matrix(q)
    pr = tuple(tuple(sum(_P[i][k] * r[k][j] for k in range(3)) for j in range(3)) for i in range(3))
    out = tuple(tuple(pr[i][j] * _F[j] for j in range(3)) for i in range(3))
    return matrix_to_quat(out)  # type: ignore[arg-type]


def line_of_sight(direction_enu: Vec3) -> Quat:
    """The rotation taking ENU's x axis onto ``direction_enu`` (a unit vector), roll 0: a
    target's bearing as an orientation."""
    x, y, z = direction_enu
    yaw = math.atan2(y, x)
    pitch = -math.asin(max(-1.0, min(1.0, z)))  # ROS: a positive pitch turns x downwards
    return quat_from_euler_zyx(0.0, pitch, yaw)
