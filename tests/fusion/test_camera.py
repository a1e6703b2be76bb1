"""Camera model: the board's box units to pixels (as the live link scales them), rays, mount."""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from fusion import CameraConfig, CameraModel
from fusion import geometry as g
from gizmo_core import ConfigError
from gizmo_host.wire.results import NormBox
from tests.support.fusion_inputs import angle_deg

VGA = CameraConfig(width_px=640, height_px=480, hfov_deg=90.0)


@given(
    st.integers(-1000, 1000),
    st.integers(-1000, 1000),
    st.integers(0, 2000),
    st.integers(0, 2000),
    st.integers(2, 4000),
    st.integers(2, 4000),
)
def test_pixels_match_the_live_links_normbox_scaling(cx, cy, w, h, width, height):
    """Same formula as gizmo_host.wire.results.NormBox.to_pixels (the spec's scaling), not
    imported by fusion."""
    camera = CameraModel(CameraConfig(width_px=width, height_px=height, hfov_deg=60.0))
    expected = NormBox(cx, cy, w, h).to_pixels(width, height)
    u, v = camera.pixel(cx, cy)
    assert u == pytest.approx(expected.center_x_px) and v == pytest.approx(expected.center_y_px)
    size = camera.angular_size_deg(w, h)
    assert math.tan(math.radians(size[0]) / 2) * 2 * camera.fx_px == pytest.approx(
        expected.width_px, abs=1e-6
    )


def test_centre_is_the_optical_axis_and_edges_are_half_the_fov():
    camera = CameraModel(VGA)
    assert camera.bearing_camera(0, 0) == pytest.approx((1.0, 0.0, 0.0))
    right = camera.bearing_camera(1000, 0)
    assert right[1] > 0 and right[2] == pytest.approx(0.0)
    # The centre of the right-most pixel: half a pixel inside the 45° edge.
    assert math.degrees(math.atan2(right[1], right[0])) == pytest.approx(
        math.degrees(math.atan(319.5 / 320)), abs=1e-9
    )
    bottom = camera.bearing_camera(0, 1000)
    assert bottom[2] > 0 and bottom[1] == pytest.approx(0.0)


def test_square_pixels_without_vfov_and_vfov_or_fy_when_given():
    assert CameraModel(VGA).fy_px == CameraModel(VGA).fx_px == pytest.approx(320.0)
    tall = CameraModel(CameraConfig(width_px=640, height_px=480, hfov_deg=90.0, vfov_deg=60.0))
    assert tall.fy_px == pytest.approx(240 / math.tan(math.radians(30)))
    explicit = CameraModel(
        CameraConfig(width_px=640, height_px=480, fx_px=500.0, fy_px=510.0, cx_px=300.0)
    )
    assert (explicit.fx_px, explicit.fy_px, explicit.cx_px, explicit.cy_px) == (
        500.0,
        510.0,
        300.0,
        239.5,
    )


@given(
    st.floats(-0.95, 0.95),
    st.floats(-0.7, 0.7),
    st.floats(20.0, 150.0),
)
def test_a_point_projected_to_board_units_comes_back_within_quantisation(y, z, hfov):
    camera = CameraModel(CameraConfig(width_px=640, height_px=480, hfov_deg=hfov))
    ray = g.normalize((1.0, y * camera.cx_px / camera.fx_px, z * camera.cy_px / camera.fy_px))
    u = camera.cx_px + camera.fx_px * ray[1] / ray[0]
    v = camera.cy_px + camera.fy_px * ray[2] / ray[0]
    cx, cy = round(u * 2000 / 639 - 1000), round(v * 2000 / 479 - 1000)
    assume(-1000 <= cx <= 1000 and -1000 <= cy <= 1000)
    # Half a board unit is 0.16 px horizontally and 0.12 px vertically.
    bound = math.degrees(0.25 / min(camera.fx_px, camera.fy_px))
    assert angle_deg(camera.bearing_camera(cx, cy), ray) <= bound


def test_mount_pitch_down_sends_the_optical_axis_down_and_image_top_to_the_nose():
    camera = CameraModel(
        CameraConfig(width_px=640, height_px=480, hfov_deg=90.0, mount_rpy_deg=(0, -90, 0))
    )
    assert camera.to_body((1.0, 0.0, 0.0)) == pytest.approx((0.0, 0.0, 1.0))
    top = camera.to_body(camera.bearing_camera(0, -1000))
    assert top[0] > 0.5  # towards the nose
    right = camera.to_body(camera.bearing_camera(1000, 0))
    assert right[1] > 0.5  # image right is body right


def test_gimbal_focal_lengths_override_the_configured_ones():
    camera = CameraModel(VGA)
    wide = camera.bearing_camera(1000, 0)
    zoomed = camera.bearing_camera(1000, 0, fx_px=1000.0, fy_px=1000.0)
    assert angle_deg(zoomed, (1.0, 0.0, 0.0)) < angle_deg(wide, (1.0, 0.0, 0.0)) / 2


def test_a_programs_own_camera_config_keeps_its_invariants():
    """A user's [camera] table is checked by the host's settings table; a program that builds
    CameraConfig itself still cannot build an impossible camera."""
    with pytest.raises(ConfigError, match="camera: expected exactly one of hfov_deg or fx_px"):
        CameraConfig(640, 480)
    with pytest.raises(ConfigError, match=r"camera.mount_rpy_deg\[1\]"):
        CameraConfig(640, 480, hfov_deg=90.0, mount_rpy_deg=(0.0, 91.0, 0.0))


def _numpy_ray(u_px: float, v_px: float, fx: float, fy: float, cx: float, cy: float):
    ray = np.array([1.0, (u_px - cx) / fx, (v_px - cy) / fy])
    return ray / np.linalg.norm(ray)


@given(
    center_x=st.integers(-990, 990),
    center_y=st.integers(-990, 990),
    width=st.integers(1, 2000),
    height=st.integers(1, 2000),
    hfov_deg=st.floats(20.0, 150.0),
)
def test_a_boxs_cone_is_measured_by_the_rays_to_its_edges(
    center_x: int, center_y: int, width: int, height: int, hfov_deg: float
) -> None:
    """Red team rt46: a box's size as if on the optical axis (``angular_size_deg``) is 3x
    too large 55° off it, and a laser's beam passed the box test beside a person. The cone is
    the smallest angle from the centre's ray to an edge's midpoint, the widest the larger of
    the angles between opposite edges: here from numpy's own pinhole (a box unit ``c`` is the
    pixel ``(c + 1000)·(extent - 1)/2000``)."""
    camera = CameraModel(CameraConfig(width_px=640, height_px=480, hfov_deg=hfov_deg))
    fx = fy = 320 / math.tan(math.radians(hfov_deg) / 2)

    def ray(cx_units: float, cy_units: float):
        u, v = (cx_units + 1000) * 639 / 2000, (cy_units + 1000) * 479 / 2000
        return _numpy_ray(u, v, fx, fy, 319.5, 239.5)

    def angle(a, b) -> float:
        return float(np.arccos(np.clip(a @ b, -1.0, 1.0)))

    centre = ray(center_x, center_y)
    left, right = ray(center_x - width / 2, center_y), ray(center_x + width / 2, center_y)
    top, bottom = ray(center_x, center_y - height / 2), ray(center_x, center_y + height / 2)
    inscribed = min(angle(centre, e) for e in (left, right, top, bottom))
    widest = max(angle(left, right), angle(top, bottom))
    got = camera.box_cone_rad(center_x, center_y, width, height)
    assert got == pytest.approx((inscribed, widest), abs=1e-6)


def test_off_the_axis_a_box_is_narrower_than_on_it() -> None:
    """The rt46 case: 55° off the axis of a 120° camera, the person's box (55 units wide) is a
    cone of 0.88° half-angle, where its size on the axis would be 2.73°."""
    camera = CameraModel(CameraConfig(width_px=640, height_px=480, hfov_deg=120.0))
    inscribed, _ = camera.box_cone_rad(822, 39, 55, 154)
    on_axis = min(camera.angular_size_deg(55, 154)) / 2
    assert math.degrees(inscribed) == pytest.approx(0.88, abs=0.02)
    assert on_axis == pytest.approx(2.73, abs=0.02)
