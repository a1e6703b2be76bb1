"""How far off one placed measurement may be: its position's covariance in NED.

A target's position is the camera's origin plus its ray times a range. Each error source moves
the ray or the origin, and moves the position through the same geometry (first order):

- the box centre: ``box_sigma_px`` of detector noise plus the board's rounding to its units
  (one unit is ``(extent - 1) / 2000`` px, a uniform error of σ = unit/√12), turned into an
  angle by the focal lengths and the ray's distance from the optical axis;
- the vehicle's attitude: ``attitude_sigma_deg`` about each axis turns the ray;
- the vehicle's position: ``position_sigma_m`` on each axis moves the origin;
- the range: a ranged fix (laser, gimbal laser, LiDAR) is off by ``range_sigma_m`` along the
  ray; a ground-plane fix moves with the ray along the plane (its ``d`` stays on it), and a
  target ``ground_height_sigma_m`` off the plane is where the ray meets that height instead.

Pose and height errors are treated as independent from frame to frame. They are often slowly
varying biases, which no filter can average away: keep these σ at the size of the frame-to-
frame error, and expect the bias itself in the position.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from ..geometry import Vec3, quat_to_matrix
from ..targets import RayFrame

Array = npt.NDArray[np.float64]

_DOWN = np.array([0.0, 0.0, 1.0])


class NoiseParams(NamedTuple):
    """The noise model's settings (``[tracking]``)."""

    box_sigma_px: float = 1.5
    attitude_sigma_deg: float = 0.05
    position_sigma_m: float = 0.01
    range_sigma_m: float = 0.05
    ground_height_sigma_m: float = 0.02


class PixelScale(NamedTuple):
    """Pixels per board unit across and down the image: the rounding's step."""

    u_px: float
    v_px: float


def _skew(v: Array) -> Array:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def position_covariance(
    bearing_camera: Vec3,
    frame: RayFrame,
    range_m: float,
    ground_plane: bool,
    scale: PixelScale,
    params: NoiseParams,
) -> Array:
    """The 3×3 NED covariance of a position placed along ``bearing_camera`` (unit, camera
    axes) at ``range_m`` from the camera, by the ground plane or by a ranging sensor."""
    rotation = np.array(quat_to_matrix(frame.camera_quaternion_wxyz))
    ray_cam = np.array(bearing_camera)
    ray = rotation @ ray_cam
    # Pixels to the ray in NED: the ray is (1, a, b)/|(1, a, b)| with a = (u - cx)/fx and
    # b = (v - cy)/fy, and |(1, a, b)| = 1/ray_cam[0].
    project = (np.eye(3) - np.outer(ray_cam, ray_cam)) * ray_cam[0]
    per_px = rotation @ project[:, 1:] @ np.diag((1.0 / frame.fx_px, 1.0 / frame.fy_px))
    box_var = params.box_sigma_px**2
    pixel_var = np.diag((box_var + scale.u_px**2 / 12.0, box_var + scale.v_px**2 / 12.0))
    attitude = _skew(ray) * math.radians(params.attitude_sigma_deg)  # δray = δθ × ray
    ray_cov = per_px @ pixel_var @ per_px.T + attitude @ attitude.T
    if ground_plane:
        # p = o + ray·(g - o_d)/ray_d: a turn of the ray slides p along the plane, a step of
        # the origin moves it unless it is along the ray, and a target h above the plane is
        # h/ray_d nearer along the ray.
        along_plane = np.eye(3) - np.outer(ray, _DOWN) / ray[2]
        slide = range_m * along_plane
        cov = slide @ ray_cov @ slide.T
        cov += params.position_sigma_m**2 * (along_plane @ along_plane.T)
        height = ray / ray[2] * params.ground_height_sigma_m
        cov += np.outer(height, height)
    else:
        cov = range_m**2 * ray_cov
        cov += params.position_sigma_m**2 * np.eye(3)
        cov += params.range_sigma_m**2 * np.outer(ray, ray)
    symmetric: Array = 0.5 * (cov + cov.T)
    return symmetric
