"""The stand-in's world for range sensors: a flat ground and the vehicles as boxes.

Every range the stand-in sends (the distance sensor, the gimbal's laser, the LiDAR's points) is
a ray cast here, so the ranges agree with the ground truth: a laser on the target returns the
distance to the target's box, otherwise to the ground plane ``down = ground_down_m``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from hil_geometry.rotations import Quat, Vec3, quat_rotate, quat_rotate_inverse

_PARALLEL = 1e-12


@dataclass(frozen=True, slots=True)
class Body:
    """A vehicle's box: ``size_m`` is length (x), width (y), height (z) in body FRD, centred on
    the vehicle's reported position."""

    copter_id: int
    size_m: Vec3 = (1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        if not all(s > 0 for s in self.size_m):
            raise ValueError(f"Body.size_m: expected three sizes > 0, got {self.size_m}")

    def corners_ned(self, position_ned_m: Vec3, quaternion_wxyz: Quat) -> list[Vec3]:
        hx, hy, hz = (s / 2 for s in self.size_m)
        n, e, d = position_ned_m
        out = []
        for sx in (-hx, hx):
            for sy in (-hy, hy):
                for sz in (-hz, hz):
                    dn, de, dd = quat_rotate(quaternion_wxyz, (sx, sy, sz))
                    out.append((n + dn, e + de, d + dd))
        return out


class Placed(NamedTuple):
    body: Body
    position_ned_m: Vec3
    quaternion_wxyz: Quat


class Hit(NamedTuple):
    distance_m: float
    point_ned_m: Vec3
    copter_id: int  # 0: the ground
    object_center_ned_m: Vec3  # the box's centre, or the ground point itself


def ray_box_distance(origin: Vec3, direction: Vec3, placed: Placed) -> float | None:
    """Distance along a unit ray to the box (slab method in the box's axes), or ``None``."""
    rel = (
        origin[0] - placed.position_ned_m[0],
        origin[1] - placed.position_ned_m[1],
        origin[2] - placed.position_ned_m[2],
    )
    o = quat_rotate_inverse(placed.quaternion_wxyz, rel)
    d = quat_rotate_inverse(placed.quaternion_wxyz, direction)
    near, far = -math.inf, math.inf
    for axis in range(3):
        half = placed.body.size_m[axis] / 2
        if abs(d[axis]) < _PARALLEL:
            if abs(o[axis]) > half:
                return None
            continue
        t1 = (-half - o[axis]) / d[axis]
        t2 = (half - o[axis]) / d[axis]
        near = max(near, min(t1, t2))
        far = min(far, max(t1, t2))
    if near > far or far < 0:
        return None
    return max(near, 0.0)


def cast(
    origin: Vec3,
    direction: Vec3,
    bodies: Sequence[Placed],
    *,
    ground_down_m: float = 0.0,
    max_range_m: float = math.inf,
) -> Hit | None:
    """The nearest thing a unit ray from ``origin`` hits within ``max_range_m``."""
    best: Hit | None = None
    if direction[2] > _PARALLEL and origin[2] < ground_down_m:
        t = (ground_down_m - origin[2]) / direction[2]
        point = _along(origin, direction, t)
        best = Hit(t, point, 0, point)
    for placed in bodies:
        t_box = ray_box_distance(origin, direction, placed)
        if t_box is not None and (best is None or t_box < best.distance_m):
            best = Hit(
                t_box,
                _along(origin, direction, t_box),
                placed.body.copter_id,
                placed.position_ned_m,
            )
    if best is None or best.distance_m > max_range_m:
        return None
    return best


def _along(origin: Vec3, direction: Vec3, t: float) -> Vec3:
    return (
        origin[0] + direction[0] * t,
        origin[1] + direction[1] * t,
        origin[2] + direction[2] * t,
    )
