"""A confirmed track's estimate as Foxglove primitives: its velocity and its 2-σ ellipse.

Pure: a world line's target (``velocity_ned_m_s`` and ``covariance_ned`` at ``capture_ns``) in,
primitives in ``map_ned`` out. The arrow starts at the position and is as long as the target
moves in one second; the ellipse is the horizontal position covariance at two standard
deviations (where the target is, 86 % of the time), drawn at the target's depth.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from foxglove.messages import (
    ArrowPrimitive,
    Color,
    LinePrimitive,
    LinePrimitiveLineType,
    Point3,
    Pose,
    Quaternion,
    Vector3,
)

from hil_geometry.rotations import quat_from_euler_zyx

ARROW_BLUE = Color(r=0.2, g=0.5, b=1.0, a=0.9)
ELLIPSE_YELLOW = Color(r=1.0, g=0.85, b=0.2, a=0.9)
MIN_SPEED_M_S = 0.05  # slower: no arrow (its direction would be noise)
ELLIPSE_POINTS = 36
SIGMAS = 2.0


def velocity_arrow(position: Sequence[float], velocity: Sequence[float]) -> ArrowPrimitive | None:
    """An arrow along ``velocity`` from ``position``, one second of travel long."""
    vn, ve, vd = (float(v) for v in velocity)
    speed = math.sqrt(vn * vn + ve * ve + vd * vd)
    if speed < MIN_SPEED_M_S:
        return None
    yaw = math.atan2(ve, vn)
    pitch = -math.asin(max(-1.0, min(1.0, vd / speed)))  # the arrow's x axis: NED down is +z
    w, x, y, z = quat_from_euler_zyx(0.0, pitch, yaw)
    head = min(0.3, 0.4 * speed)
    return ArrowPrimitive(
        pose=Pose(
            position=Vector3(x=float(position[0]), y=float(position[1]), z=float(position[2])),
            orientation=Quaternion(x=x, y=y, z=z, w=w),
        ),
        shaft_length=max(speed - head, 0.0),
        shaft_diameter=0.06,
        head_length=head,
        head_diameter=0.18,
        color=ARROW_BLUE,
    )


def ellipse(position: Sequence[float], covariance: Sequence[float]) -> LinePrimitive:
    """The 2-σ ellipse of the horizontal block of a row-major 6×6 covariance."""
    a, b, c = float(covariance[0]), float(covariance[1]), float(covariance[7])  # nn, ne, ee
    mean, half = (a + c) / 2, math.hypot((a - c) / 2, b)
    major, minor = max(mean + half, 0.0), max(mean - half, 0.0)  # eigenvalues of [[a, b], [b, c]]
    angle = 0.5 * math.atan2(2 * b, a - c)  # the major axis, from north towards east
    r1, r2 = SIGMAS * math.sqrt(major), SIGMAS * math.sqrt(minor)
    cos_a, sin_a = math.cos(angle), math.sin(angle)
    n0, e0, d0 = (float(v) for v in position[:3])
    points = []
    for k in range(ELLIPSE_POINTS):
        t = 2 * math.pi * k / ELLIPSE_POINTS
        u, v = r1 * math.cos(t), r2 * math.sin(t)
        points.append(Point3(x=n0 + u * cos_a - v * sin_a, y=e0 + u * sin_a + v * cos_a, z=d0))
    return LinePrimitive(
        type=LinePrimitiveLineType.LineLoop,
        thickness=2.0,
        scale_invariant=True,
        points=points,
        color=ELLIPSE_YELLOW,
    )


def track_primitives(target: Mapping[str, Any]) -> tuple[list[ArrowPrimitive], list[LinePrimitive]]:
    """A confirmed track's arrow and ellipse; nothing for any other target."""
    position = target.get("position_ned_m")
    velocity = target.get("velocity_ned_m_s")
    covariance = target.get("covariance_ned")
    if target.get("track_state") != "confirmed" or position is None:
        return [], []
    arrows = [] if velocity is None else [velocity_arrow(position, velocity)]
    lines = [] if covariance is None else [ellipse(position, covariance)]
    return [a for a in arrows if a is not None], lines


def entity_id(target: Mapping[str, Any]) -> str:
    """``target/<key>``, and ``/<track_id>`` when it is a track: a key may have several."""
    track = target.get("track_id")
    return f"target/{target['key']}" if track is None else f"target/{target['key']}/{track}"
