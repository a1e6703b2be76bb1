"""The simulator's camera against OpenCV's ``cv2.projectPoints`` and scipy's rotations (the
test-only oracles), its RflySim conventions from first principles, and fusion's camera model
agreeing with it (the host must recover what the simulator drew, by another implementation)."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from fusion.camera import CameraConfig, CameraModel
from fusion.geometry import quat_from_euler_zyx_deg, quat_rotate
from hil_geometry.pinhole import (
    NEAR_M,
    Pinhole,
    angle_deg,
    rotation_quaternion,
    rotation_rpy_deg,
    rpy_deg_from_rotation,
)

sizes = st.tuples(st.integers(2, 4000), st.integers(2, 3000))
fovs = st.floats(5.0, 170.0)
rpys = st.tuples(st.floats(-180, 180), st.floats(-89, 89), st.floats(-180, 180))
positions = st.tuples(*[st.floats(-100, 100)] * 3)
offsets = st.tuples(*[st.floats(-1, 1)] * 3)
quaternions = st.tuples(*[st.floats(-1, 1)] * 4).filter(lambda q: math.hypot(*q) > 0.1)


def _in_front(camera: Pinhole, pose_rotation: np.ndarray, origin: np.ndarray, n: int) -> np.ndarray:
    """``n`` points ahead of a sensor, spread over (and past) its field of view."""
    rng = np.random.default_rng(n)
    ahead = np.column_stack(
        [rng.uniform(0.5, 50, n), rng.uniform(-40, 40, n), rng.uniform(-40, 40, n)]
    )
    return origin + ahead @ pose_rotation.T


@given(sizes, fovs, rpys, offsets, positions, quaternions)
def test_projection_matches_opencv_project_points(size, fov, rpy, offset, where, attitude):
    camera = Pinhole.from_sensor(*size, fov, rpy_deg=rpy, position_frd_m=offset)
    pose = camera.pose(where, attitude)
    points = _in_front(camera, pose.rotation_ned_from_sensor, pose.position_ned_m, 16)
    uv, depth = camera.project(pose, points)
    r, t = camera.extrinsics(pose)
    # The rotation vector from scipy: cv2.Rodrigues's matrix -> vector loses about 1e-8 rad
    # (a 90 degree yaw, a 5 degree field: 1.8e-7 relative, points far outside the view)
    rvec = Rotation.from_matrix(r).as_rotvec()
    expected, _ = cv2.projectPoints(points, rvec, t, camera.intrinsics, None)
    ok = depth >= NEAR_M
    assert ok.all()
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(uv, expected.reshape(-1, 2), atol=1e-9 * scale, rtol=1e-7)


@given(rpys)
def test_mount_euler_is_intrinsic_zyx_in_degrees_like_scipy(rpy):
    roll, pitch, yaw = rpy
    expected = Rotation.from_euler("ZYX", [yaw, pitch, roll], degrees=True).as_matrix()
    np.testing.assert_allclose(rotation_rpy_deg(rpy), expected, atol=1e-12)


@given(rpys)
def test_euler_angles_come_back_from_their_rotation(rpy):
    back = rpy_deg_from_rotation(rotation_rpy_deg(rpy))
    np.testing.assert_allclose(rotation_rpy_deg(back), rotation_rpy_deg(rpy), atol=1e-9)
    if max(abs(rpy[0]), abs(rpy[2])) < 179.0 and abs(rpy[1]) < 88.0:  # away from the wraps
        assert back == pytest.approx(rpy, abs=1e-6)


@given(quaternions)
def test_quaternion_rotation_matches_scipy(q):
    w, x, y, z = q
    expected = Rotation.from_quat([x, y, z, w]).as_matrix()
    np.testing.assert_allclose(rotation_quaternion(q), expected, atol=1e-12)


def test_the_fov_spans_the_image_edge_to_edge_and_the_axis_hits_its_centre():
    camera = Pinhole.from_sensor(640, 480, 90.0)  # level, looking north from the origin
    pose = camera.pose((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    assert camera.project_point(pose, (10.0, 0.0, 0.0)) == pytest.approx((319.5, 239.5))
    # 45° to the right (east) is the image's right edge: the far side of the last pixel.
    u, v = camera.project_point(pose, (10.0, 10.0, 0.0))  # type: ignore[misc]
    assert (u, v) == pytest.approx((639.5, 239.5))
    assert camera.fx_px == camera.fy_px == pytest.approx(320.0)
    # Below the horizon (down, +z in NED) is the image's lower half.
    assert camera.project_point(pose, (10.0, 0.0, 1.0))[1] > 239.5  # type: ignore[index]
    assert camera.in_image(-0.5, 479.5) and not camera.in_image(639.6, 0.0)


def test_a_camera_pitched_down_90_degrees_sees_the_nose_at_the_top():
    camera = Pinhole.from_sensor(640, 480, 90.0, rpy_deg=(0.0, -90.0, 0.0))
    pose = camera.pose((0.0, 0.0, -10.0), (1.0, 0.0, 0.0, 0.0))
    assert camera.project_point(pose, (0.0, 0.0, 0.0)) == pytest.approx((319.5, 239.5))
    u, v = camera.project_point(pose, (1.0, 0.0, 0.0))  # type: ignore[misc]
    assert v < 239.5 and u == pytest.approx(319.5)  # north, the nose, is up the image
    u, v = camera.project_point(pose, (0.0, 1.0, 0.0))  # type: ignore[misc]
    assert u > 319.5 and v == pytest.approx(239.5)  # east is right


def test_the_mount_position_is_body_frd_turned_with_the_vehicle():
    camera = Pinhole.from_sensor(64, 48, 60.0, position_frd_m=(1.0, 0.0, 0.5))
    east = (math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4))  # yaw 90°: nose east
    pose = camera.pose((10.0, 20.0, -5.0), east)
    np.testing.assert_allclose(pose.position_ned_m, (10.0, 21.0, -4.5), atol=1e-12)


def test_the_near_plane_and_the_quaternion_mount():
    camera = Pinhole.from_sensor(64, 48, 60.0, quaternion_wxyz=(1.0, 0.0, 0.0, 0.0))
    pose = camera.pose((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    assert camera.project_point(pose, (NEAR_M * 0.99, 0.0, 0.0)) is None
    assert camera.project_point(pose, (NEAR_M, 0.0, 0.0)) is not None
    assert camera.project_point(pose, (-5.0, 0.0, 0.0)) is None
    with pytest.raises(ValueError, match="CameraFOV"):
        Pinhole.from_sensor(64, 48, 180.0)


@given(sizes, fovs, rpys, positions, quaternions, st.floats(0, 1), st.floats(0, 1))
def test_a_pixels_ray_projects_back_to_the_pixel(size, fov, rpy, where, attitude, a, b):
    camera = Pinhole.from_sensor(*size, fov, rpy_deg=rpy)
    pose = camera.pose(where, attitude)
    u, v = a * (size[0] - 1), b * (size[1] - 1)
    ray = camera.ray_ned(pose, u, v)
    depth = float((pose.rotation_ned_from_sensor.T @ ray)[0])  # along the optical axis
    point = pose.position_ned_m + ray * (7.0 / depth)
    back = camera.project_point(pose, point)
    assert back is not None
    assert back == pytest.approx((u, v), abs=1e-6 * max(size))


@given(fovs, rpys, st.floats(0.01, 0.99), st.floats(0.01, 0.99))
def test_fusions_camera_recovers_the_line_of_sight_the_simulator_drew(fov, rpy, a, b):
    """Two implementations of one convention: the ray fusion casts through a pixel is the
    simulator's line of sight to the point that made it."""
    assume(fov < 160)
    config = CameraConfig(640, 480, hfov_deg=fov, mount_rpy_deg=rpy)
    fusion_camera = CameraModel(config)
    camera = Pinhole.from_sensor(640, 480, fov, rpy_deg=rpy)
    pose = camera.pose((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    u, v = a * 639, b * 479
    sim_ray = camera.ray_ned(pose, u, v)
    host_ray = quat_rotate(quat_from_euler_zyx_deg(rpy), fusion_camera.ray_camera(u, v))
    assert angle_deg(sim_ray, host_ray) < 1e-6
