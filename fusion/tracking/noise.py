"""How far off one placed measurement may be: its position's covariance in NED.

A target's position is the camera's origin plus its ray times a range. Each error source moves
the ray or the origin, and moves the position through the same geometry (first order):

- the box centre: ``box_sigma_px`` of detector noise plus the board's rounding to its units
  (one unit is ``(extent - 1) / 2000`` px, a uniform error of σ = unit/√12), turned into an
  angle by the focal lengths and the ray's distance from the optical axis;
- the vehicle's attitude: ``attitude_sigma_deg`` about each axis turns the ray;
- the vehicle's position: ``position_sigma_m`` on each axis moves the origin;
- the range: a ranged fix (laser, gimbal laser, LiDAR) is off by ``range_sigma_m`` along the
  ray, and by the frame's ``range_moved_sigma_m`` more when a lone reading, older or newer
  than the capture, ranged it (the target moved in between); a ground-plane fix moves with
  the ray along the plane (its ``d`` stays on it), and a target ``ground_height_sigma_m``
  off the plane is where the ray meets that height instead;
- the capture time: the pose is taken at the capture time the host mapped, which is off by
  ``capture_time_sigma_ms`` (the board's millisecond clock and its mapping, the pose's own
  timestamps). Off by δt, the origin is off by the camera's velocity times δt and the ray
  turned by the vehicle's angular rate times δt: in a hard manoeuvre (1 rad/s at 10 m, 1 ms)
  that is centimetres, where the attitude's frame-to-frame σ is millimetres. The target's
  own motion over δt is not counted: at 8 m/s and 1 ms it is 8 mm, 3 % of the variance of
  1.5 px of box noise at 10 m, and it cancels where the camera follows the target.

Pose and height errors are treated as independent from frame to frame. They are often slowly
varying biases, which no filter can average away: keep these σ at the size of the frame-to-
frame error, and expect the bias itself in the position.
"""

from __future__ import annotations

import math
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from ..geometry import Vec3, quat_to_matrix
from ..targets import RayFrame

Array = npt.NDArray[np.float64]

_STILL = (0.0, 0.0, 0.0)


class NoiseParams(NamedTuple):
    """The noise model's settings (``[tracking]``)."""

    box_sigma_px: float = 1.5
    attitude_sigma_deg: float = 0.05
    position_sigma_m: float = 0.01
    range_sigma_m: float = 0.05
    ground_height_sigma_m: float = 0.02
    capture_time_sigma_ms: float = 1.0


class PixelScale(NamedTuple):
    """Pixels per board unit across and down the image: the rounding's step."""

    u_px: float
    v_px: float


def position_covariance(
    bearing_camera: Vec3,
    frame: RayFrame,
    range_m: float,
    ground_plane: bool,
    scale: PixelScale,
    params: NoiseParams,
) -> Array:
    """The 3×3 NED covariance of a position placed along ``bearing_camera`` (unit, camera
    axes) at ``range_m`` from the camera, by the ground plane or by a ranging sensor.

    On plain floats (3×3 is too small for numpy to pay); tests/support/tracking_reference.py
    has it on numpy matrices, and the two agree to 1e-9."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = quat_to_matrix(frame.camera_quaternion_wxyz)
    b0, b1, b2 = bearing_camera
    ray = (
        r00 * b0 + r01 * b1 + r02 * b2,
        r10 * b0 + r11 * b1 + r12 * b2,
        r20 * b0 + r21 * b1 + r22 * b2,
    )
    # Pixels to the ray in NED: the ray is (1, a, b)/|(1, a, b)| with a = (u - cx)/fx and
    # b = (v - cy)/fy, and |(1, a, b)| = 1/ray_cam[0]: a pixel across moves it by
    # R·(I - b·bᵀ)·e_y·b0/fx = (R's 2nd column - ray·b1)·b0/fx, one down likewise.
    ku, kv = b0 / frame.fx_px, b0 / frame.fy_px
    cu = ((r01 - ray[0] * b1) * ku, (r11 - ray[1] * b1) * ku, (r21 - ray[2] * b1) * ku)
    cv = ((r02 - ray[0] * b2) * kv, (r12 - ray[1] * b2) * kv, (r22 - ray[2] * b2) * kv)
    box_var = params.box_sigma_px**2
    su, sv = box_var + scale.u_px**2 / 12.0, box_var + scale.v_px**2 / 12.0
    # δray = δθ × ray: a turn of σ about each axis spreads the ray by σ²·(|ray|²·I - ray·rayᵀ)
    att = math.radians(params.attitude_sigma_deg) ** 2
    length2 = ray[0] * ray[0] + ray[1] * ray[1] + ray[2] * ray[2]
    # The capture time off by δt: the origin moves by v·δt, the ray turns by (ω × ray)·δt.
    v = frame.velocity_ned_m_s or _STILL
    w = frame.angular_rate_ned_rad_s or _STILL
    turn = (
        w[1] * ray[2] - w[2] * ray[1],
        w[2] * ray[0] - w[0] * ray[2],
        w[0] * ray[1] - w[1] * ray[0],
    )
    moved = (v[0] + range_m * turn[0], v[1] + range_m * turn[1], v[2] + range_m * turn[2])
    sigma_t = params.capture_time_sigma_ms * 1e-3
    # M = range²·ray_cov + pos²·I: the ray's spread at the range, and the origin's
    range2, pos2 = range_m * range_m, params.position_sigma_m**2
    (u0, u1, u2), (v0, v1, v2), (d0, d1, d2) = cu, cv, ray
    diagonal = att * length2
    m00 = range2 * (su * u0 * u0 + sv * v0 * v0 - att * d0 * d0 + diagonal) + pos2
    m11 = range2 * (su * u1 * u1 + sv * v1 * v1 - att * d1 * d1 + diagonal) + pos2
    m22 = range2 * (su * u2 * u2 + sv * v2 * v2 - att * d2 * d2 + diagonal) + pos2
    m01 = range2 * (su * u0 * u1 + sv * v0 * v1 - att * d0 * d1)
    m02 = range2 * (su * u0 * u2 + sv * v0 * v2 - att * d0 * d2)
    m12 = range2 * (su * u1 * u2 + sv * v1 * v2 - att * d1 * d2)
    if ground_plane:
        # p = o + ray·(g - o_d)/ray_d: with A = I - a·e_dᵀ, a = ray/ray_d, a turn of the ray
        # slides p by range·A·δray, a step of the origin by A·δo (nothing along the ray), a
        # target h above the plane is h·a nearer along the ray, and the capture time's error
        # is A·(v + range·ω × ray)·δt. A·M·Aᵀ = M - a·m₃ᵀ - m₃·aᵀ + m₃₃·a·aᵀ has a zero d row
        # and column (the fix stays on the plane): only the height moves d.
        a0, a1 = d0 / d2, d1 / d2
        h = params.ground_height_sigma_m
        h2 = h * h
        t0 = sigma_t * (moved[0] - a0 * moved[2])
        t1 = sigma_t * (moved[1] - a1 * moved[2])
        c00 = m00 - a0 * m02 - m02 * a0 + m22 * a0 * a0 + a0 * a0 * h2 + t0 * t0
        c11 = m11 - a1 * m12 - m12 * a1 + m22 * a1 * a1 + a1 * a1 * h2 + t1 * t1
        c01 = m01 - a0 * m12 - m02 * a1 + m22 * a0 * a1 + a0 * a1 * h2 + t0 * t1
        c02, c12, c22 = a0 * h2, a1 * h2, h2
    else:
        rs = params.range_sigma_m * frame.range_noise_gain
        rs2 = rs * rs + frame.range_moved_sigma_m**2
        t0, t1, t2 = sigma_t * moved[0], sigma_t * moved[1], sigma_t * moved[2]
        c00 = m00 + rs2 * d0 * d0 + t0 * t0
        c11 = m11 + rs2 * d1 * d1 + t1 * t1
        c22 = m22 + rs2 * d2 * d2 + t2 * t2
        c01 = m01 + rs2 * d0 * d1 + t0 * t1
        c02 = m02 + rs2 * d0 * d2 + t0 * t2
        c12 = m12 + rs2 * d1 * d2 + t1 * t2
    return np.array(((c00, c01, c02), (c01, c11, c12), (c02, c12, c22)))


def covariance_toward(
    frame: RayFrame,
    ground_plane: bool,
    scale: PixelScale,
    params: NoiseParams,
    point: list[float],
) -> Array:
    """``position_covariance`` of a fix at ``point`` (NED): the ray from the camera's origin
    to it, at its distance. A track weighs a measurement by the noise where the track predicts
    the target, not where the measurement fell: on the ground plane the along-ray variance
    grows as the range⁴, so a fix that fell short would otherwise count for more than one
    that fell long, and the estimate would be pulled towards the camera (-4σ²/range)."""
    o = frame.origin_ned_m
    d0, d1, d2 = point[0] - o[0], point[1] - o[1], point[2] - o[2]
    range_m = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = quat_to_matrix(frame.camera_quaternion_wxyz)
    k = 1.0 / range_m
    bearing = (
        (r00 * d0 + r10 * d1 + r20 * d2) * k,
        (r01 * d0 + r11 * d1 + r21 * d2) * k,
        (r02 * d0 + r12 * d1 + r22 * d2) * k,
    )  # Rᵀ·(point - origin), unit: the camera's axes
    return position_covariance(bearing, frame, range_m, ground_plane, scale, params)


# A box's centre is off its target's centroid by perspective (a long target seen close and
# steeply down: the near end looks larger) by up to about this share of its size on each
# image axis (rt46 harness: a car 4.5 m long seen 45° down from 10 m, 8 %).
EXTENT_BOX_SHARE: Final = 0.1
_NO_NOISE: Final = NoiseParams(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
_SQRT12: Final = math.sqrt(12.0)


def extent_covariance(
    bearing_camera: Vec3, frame: RayFrame, range_m: float, box_px: tuple[float, float]
) -> Array:
    """The spread of a ground-plane fix by its target's own extent (``box_px``: the box's
    width and height in pixels): its centre ``frame.extent_height_sigma_m`` (σ) off the height
    it was placed at, and the box's centre off the target's by ``EXTENT_BOX_SHARE`` of the box
    on each axis. A bias the fixes of one target share, not their noise: no filter averages it
    away, so an estimate carries it whole (``Tracker.estimate``)."""
    height = frame.extent_height_sigma_m or 0.0
    # position_covariance's box term with these pixel σ alone: the rounding's uniform step
    # of s px has variance s²/12, so a step of σ·√12 is a σ of σ.
    scale = PixelScale(
        EXTENT_BOX_SHARE * box_px[0] * _SQRT12, EXTENT_BOX_SHARE * box_px[1] * _SQRT12
    )
    params = _NO_NOISE._replace(ground_height_sigma_m=height)
    return position_covariance(bearing_camera, frame, range_m, True, scale, params)
