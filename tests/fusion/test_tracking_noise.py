"""The noise model's capture-time term: a capture time off by δt places the target with the
pose of another instant, so its covariance carries δt times the camera's velocity and the
vehicle's angular rate. The truth is a Monte Carlo over δt through plain geometry (scipy's
rotations, the ray met with the plane by hand), never the noise model's own Jacobians; and
the placement gives the noise model the rates of the poses around the capture."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from fusion import CameraConfig, CameraModel, PoseSample, VisionObservation, WorldConfig
from fusion import geometry as g
from fusion.placement import Placer
from fusion.targets import RayFrame
from fusion.tracking.noise import NoiseParams, PixelScale, position_covariance

MS = 1_000_000
CAMERA = CameraModel(
    CameraConfig(
        width_px=640, height_px=480, hfov_deg=90.0, mount_rpy_deg=(0.0, -90.0, 0.0),
        mount_position_frd_m=(0.2, -0.1, 0.15),
    )
)  # fmt: skip
RATE_NED = (0.9, -0.6, 0.7)  # rad/s: a hard manoeuvre
VELOCITY_NED = (3.0, -2.0, 0.5)
SIGMA_T_S = 1e-3
ONLY_TIMING = NoiseParams(0.0, 0.0, 0.0, 0.0, 0.0, SIGMA_T_S * 1e3)


def _frame_and_ray(q_body: g.Quat, origin: g.Vec3) -> tuple[RayFrame, np.ndarray, g.Vec3]:
    camera_ned = g.quat_multiply(q_body, CAMERA.mount_quaternion_wxyz)
    bearing = g.normalize((1.0, 0.15, -0.1))  # camera axes: off the optical axis
    frame = RayFrame(origin, camera_ned, CAMERA.fx_px, CAMERA.fy_px, VELOCITY_NED, RATE_NED)
    return frame, np.array(g.quat_rotate(camera_ned, bearing)), bearing


@pytest.mark.parametrize("ground_plane", [True, False])
def test_a_capture_time_error_moves_the_fix_as_the_covariance_says(ground_plane: bool) -> None:
    origin = np.array((1.0, 2.0, -9.0))
    frame, ray, bearing = _frame_and_ray(g.quat_from_euler_zyx(0.1, -0.15, 0.7), tuple(origin))
    range_m = -origin[2] / ray[2]
    rng = np.random.default_rng(27)
    dt = rng.normal(0.0, SIGMA_T_S, 40_000)
    turned = Rotation.from_rotvec(np.outer(dt, RATE_NED)).apply(ray)  # the ray at t + δt
    origins = origin + np.outer(dt, VELOCITY_NED)
    if ground_plane:  # where the turned ray from the moved origin meets d = 0
        fixes = origins + turned * (-origins[:, 2] / turned[:, 2])[:, None]
    else:  # a ranged fix: the same range along the turned ray
        fixes = origins + turned * range_m
    sampled = np.cov(fixes.T)
    model = position_covariance(
        bearing, frame, range_m, ground_plane, PixelScale(0.0, 0.0), ONLY_TIMING
    )
    scale = np.abs(sampled).max()
    assert scale > (0.01**2)  # centimetres: far above the attitude's frame-to-frame σ
    assert np.abs(model - sampled).max() <= 0.03 * scale, (model, sampled)
    still = frame._replace(velocity_ned_m_s=None, angular_rate_ned_rad_s=None)
    assert not position_covariance(bearing, still, range_m, ground_plane, PixelScale(0, 0),
                                   ONLY_TIMING).any()  # fmt: skip


def test_the_placement_carries_the_cameras_velocity_and_rate_at_the_capture() -> None:
    """Poses of a vehicle turning about a fixed NED axis while flying straight: the frame of
    a placement between two of them has the vehicle's rate and the camera's velocity (the
    body's plus ω × the mount's lever arm); the per-frame path does not compute them."""
    start = g.quat_from_euler_zyx(0.05, -0.1, 0.3)
    for rates in (True, False):
        placer = Placer(CAMERA, WorldConfig(pose_required=True), rates=rates)
        for k in range(6):
            t = k * 0.02
            q = g.quat_multiply(g.quat_from_rotvec(g.scale(RATE_NED, t)), start)
            position = g.add((0.0, 0.0, -10.0), g.scale(VELOCITY_NED, t))
            placer.history.add(PoseSample(k * 20 * MS, k * 20 * MS, 0, position, q, None))
        obs = VisionObservation(
            1, 5, 11, "pedestrian", 80, True, False, True, 30, -20, 40, 40, 47 * MS, 60 * MS,
            0, True,
        )  # fmt: skip
        placement = placer.place(obs, 1, waited=True, required=True)
        assert placement is not None and placement.geometry is not None
        frame = placement.geometry.frame
        assert frame is not None
        if not rates:
            assert frame.velocity_ned_m_s is frame.angular_rate_ned_rad_s is None
            continue
        q_capture = g.quat_multiply(g.quat_from_rotvec(g.scale(RATE_NED, 0.047)), start)
        lever = g.quat_rotate(q_capture, CAMERA.config.mount_position_frd_m)
        # d(lever)/dt = ω × lever for a fixed mount: the camera's velocity
        expected = np.add(VELOCITY_NED, np.cross(RATE_NED, lever))
        assert frame.angular_rate_ned_rad_s == pytest.approx(RATE_NED, abs=1e-9)
        assert frame.velocity_ned_m_s == pytest.approx(tuple(expected), abs=2e-3)
        assert math.dist(frame.velocity_ned_m_s, VELOCITY_NED) > 0.05  # the lever counts
