"""Placed measurements for the tracker's own tests, without a world model around it.

The camera hangs ``ALTITUDE_M`` above the ground plane looking straight down (pitch -90°,
640×480, 90° HFOV): a target at a ground point is placed where it is, with the ray and range a
real placement would carry, so the tracker's noise model sees a real geometry.
"""

from __future__ import annotations

import math

from fusion import CameraConfig, CameraModel, VisionObservation
from fusion import geometry as g
from fusion.ranging import RangeSource
from fusion.targets import Geometry, Placement, RayFrame

MS = 1_000_000
ALTITUDE_M = 10.0
CAMERA = CameraModel(
    CameraConfig(width_px=640, height_px=480, hfov_deg=90.0, mount_rpy_deg=(0.0, -90.0, 0.0))
)
DOWN = CAMERA.mount_quaternion_wxyz  # camera axes in NED for a level vehicle


def placed(
    capture_ns: int,
    arrival: int,
    point_ned: g.Vec3,
    *,
    key: tuple[int, int, int] = (1, 5, 11),
    camera_ned: g.Vec3 = (0.0, 0.0, -ALTITUDE_M),
) -> Placement:
    """The placement of a detection of ground point ``point_ned`` seen from ``camera_ned``."""
    ray = g.normalize(g.sub(point_ned, camera_ned))
    bearing = g.quat_rotate_inverse(DOWN, ray)
    azimuth, elevation = g.azimuth_elevation_deg(ray)
    obs = VisionObservation(
        key[0], key[1], key[2], "pedestrian", 80, True, False, True,
        round(1000 * math.tanh(point_ned[1] / 40)), round(1000 * math.tanh(point_ned[0] / 40)),
        40, 40, capture_ns, capture_ns + 20 * MS, 0, True,
    )  # fmt: skip
    frame = RayFrame(camera_ned, DOWN, CAMERA.fx_px, CAMERA.fy_px)
    geometry = Geometry(
        bearing, (1.0, 1.0), ray, azimuth, elevation, point_ned,
        g.norm(g.sub(point_ned, camera_ned)), RangeSource.GROUND_PLANE, frame,
    )  # fmt: skip
    return Placement(obs, arrival, geometry, None)
