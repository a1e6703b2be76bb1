"""fusion.geometry against scipy.spatial.transform, the test-only oracle (as crcmod is for CRC)."""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation, Slerp

from fusion import geometry as g

angle = st.floats(-math.pi, math.pi, allow_nan=False)
pitch = st.floats(-1.5, 1.5, allow_nan=False)  # away from the Z-Y-X gimbal lock
component = st.floats(-1.0, 1.0, allow_nan=False)
coordinate = st.floats(-1e3, 1e3, allow_nan=False)
vectors = st.tuples(coordinate, coordinate, coordinate)


@st.composite
def quaternions(draw):
    q = draw(st.tuples(component, component, component, component))
    assume(g.quat_norm(q) > 0.1)
    return g.quat_normalize(q)


def oracle(q):
    return Rotation.from_quat(q, scalar_first=True)


def same_angles(a, b, tol=1e-9):
    """Angles equal modulo 2π (a roll or yaw of π is one of -π)."""
    return all(abs(math.remainder(x - y, math.tau)) < tol for x, y in zip(a, b, strict=True))


def same_rotation(q, expected_wxyz, tol=1e-9):
    """q and -q are the same rotation."""
    e = np.asarray(expected_wxyz)
    return min(np.abs(np.asarray(q) - e).max(), np.abs(np.asarray(q) + e).max()) < tol


@given(angle, pitch, angle)
def test_euler_zyx_matches_scipy_intrinsic_zyx(roll, pitch_rad, yaw):
    q = g.quat_from_euler_zyx(roll, pitch_rad, yaw)
    expected = Rotation.from_euler("ZYX", [yaw, pitch_rad, roll]).as_quat(scalar_first=True)
    assert same_rotation(q, expected)
    assert same_angles(g.quat_to_euler_zyx(q), (roll, pitch_rad, yaw), tol=1e-7)


@pytest.mark.filterwarnings("ignore:Gimbal lock")
@given(quaternions())
def test_to_euler_matches_scipy(q):
    yaw, pitch_rad, roll = oracle(q).as_euler("ZYX")
    assume(abs(pitch_rad) < 1.5)
    assert same_angles(g.quat_to_euler_zyx(q), (roll, pitch_rad, yaw))


@given(quaternions(), vectors)
def test_rotate_matches_scipy(q, v):
    assert np.allclose(g.quat_rotate(q, v), oracle(q).apply(v), atol=1e-9)
    assert np.allclose(g.quat_rotate_inverse(q, v), oracle(q).inv().apply(v), atol=1e-9)
    assert np.allclose(g.mat_vec(g.quat_to_matrix(q), v), oracle(q).apply(v), atol=1e-9)
    m = g.quat_to_matrix(q)
    assert np.allclose(g.mat_transpose_vec(m, v), oracle(q).inv().apply(v), atol=1e-9)


@given(quaternions())
def test_matrix_round_trip_matches_scipy(q):
    m = g.quat_to_matrix(q)
    assert np.allclose(m, oracle(q).as_matrix(), atol=1e-12)
    back = g.matrix_to_quat(m)
    assert back[0] >= 0
    assert same_rotation(back, Rotation.from_matrix(np.array(m)).as_quat(scalar_first=True))


@given(quaternions(), quaternions())
def test_multiply_composes_like_scipy(a, b):
    """a ⊗ b rotates by b first, then by a: scipy's ``Ra * Rb``."""
    expected = (oracle(a) * oracle(b)).as_quat(scalar_first=True)
    assert same_rotation(g.quat_multiply(a, b), expected)
    assert same_rotation(g.quat_multiply(a, g.quat_conjugate(a)), (1, 0, 0, 0))


@given(quaternions(), quaternions(), st.floats(0.0, 1.0))
def test_slerp_matches_scipy(a, b, t):
    assume(abs(sum(x * y for x, y in zip(a, b, strict=True))) > 1e-3)  # 180° apart: no one arc
    expected = Slerp([0.0, 1.0], Rotation.concatenate([oracle(a), oracle(b)]))(t)
    assert same_rotation(g.slerp(a, b, t), expected.as_quat(scalar_first=True), tol=1e-7)


@given(quaternions(), quaternions())
def test_slerp_extrapolates_along_the_same_arc(a, b):
    """Past t=1 the rotation keeps turning at the same rate: ``a·(a⁻¹b)^t``."""
    delta = g.quat_to_rotvec(g.quat_multiply(g.quat_conjugate(a), b))
    assume(g.norm(delta) < 3.0)
    expected = g.quat_multiply(a, g.quat_from_rotvec(g.scale(delta, 1.2)))
    assert same_rotation(g.slerp(a, b, 1.2), expected, tol=1e-7)


@given(st.tuples(*[st.floats(-3.0, 3.0)] * 3))
def test_rotvec_matches_scipy(r):
    q = g.quat_from_rotvec(r)
    assert same_rotation(q, Rotation.from_rotvec(r).as_quat(scalar_first=True))
    assert np.allclose(g.quat_to_rotvec(q), Rotation.from_quat(q, scalar_first=True).as_rotvec())


@given(quaternions(), quaternions())
def test_angle_between_attitudes_matches_scipy(a, b):
    expected = (oracle(a).inv() * oracle(b)).magnitude()
    assert math.isclose(g.quat_angle_rad(a, b), expected, abs_tol=1e-6)


def test_camera_looking_down_has_image_top_to_the_nose():
    """The issue's mount convention: pitch -90° sends the optical axis down and the image's
    top (-z in camera axes) to the nose."""
    m = g.matrix_from_euler_zyx_deg((0.0, -90.0, 0.0))
    assert np.allclose(g.mat_vec(m, (1, 0, 0)), (0, 0, 1), atol=1e-12)
    assert np.allclose(g.mat_vec(m, (0, 0, -1)), (1, 0, 0), atol=1e-12)
    assert np.allclose(g.mat_vec(m, (0, 1, 0)), (0, 1, 0), atol=1e-12)


def test_azimuth_never_reaches_360():
    assert g.azimuth_elevation_deg((1.0, -1e-300, 0.0))[0] == 0.0


@given(
    quaternions(),
    st.tuples(st.floats(-180, 180), st.floats(-89, 89), st.floats(-180, 180)),
    st.tuples(st.integers(-1000, 1000), st.integers(-1000, 1000)),
)
def test_pixel_to_world_chain_matches_scipy(attitude, mount_rpy_deg, centre):
    """Board units -> camera axes -> body FRD (mount Z-Y-X) -> NED, against scipy."""
    from fusion import CameraConfig, CameraModel

    camera = CameraModel(
        CameraConfig(width_px=640, height_px=480, hfov_deg=90.0, mount_rpy_deg=mount_rpy_deg)
    )
    ray_camera = camera.bearing_camera(*centre)
    ours = g.quat_rotate(attitude, camera.to_body(ray_camera))
    roll, pitch_deg, yaw = mount_rpy_deg
    mount = Rotation.from_euler("ZYX", [yaw, pitch_deg, roll], degrees=True)
    assert np.allclose(ours, (oracle(attitude) * mount).apply(ray_camera), atol=1e-9)


@pytest.mark.parametrize(
    ("v", "azimuth", "elevation"),
    [
        ((1, 0, 0), 0.0, 0.0),
        ((0, 1, 0), 90.0, 0.0),
        ((-1, 0, 0), 180.0, 0.0),
        ((0, -1, 0), 270.0, 0.0),
        ((1, 0, 1), 0.0, -45.0),
        ((1, 1, -math.sqrt(2)), 45.0, 45.0),
    ],
)
def test_azimuth_from_north_towards_east_and_elevation_negative_below(v, azimuth, elevation):
    az, el = g.azimuth_elevation_deg(v)
    assert math.isclose(az, azimuth, abs_tol=1e-9)
    assert math.isclose(el, elevation, abs_tol=1e-9)


@given(vectors, vectors)
def test_angle_between_vectors(a, b):
    assume(g.norm(a) > 1e-3 and g.norm(b) > 1e-3)
    cos = g.dot(g.normalize(a), g.normalize(b))
    assert math.isclose(g.angle_between_rad(a, b), math.acos(max(-1, min(1, cos))), abs_tol=1e-6)


def test_degenerate_inputs_raise_value_errors():
    with pytest.raises(ValueError, match="vector"):
        g.normalize((0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="quaternion"):
        g.quat_normalize((0.0, 0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="vector"):
        g.normalize((math.inf, 0.0, 0.0))
