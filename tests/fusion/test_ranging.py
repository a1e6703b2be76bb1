"""Ranges: a position exists only with one, named by range_source; gimbal cameras."""

import math

import numpy as np
import pytest

from fusion import (
    CameraConfig,
    CameraModel,
    GimbalLaserRange,
    GimbalSample,
    LaserRange,
    LidarPoints,
    PointFrame,
    RangeSource,
    SensorMount,
)
from fusion import geometry as g
from fusion.ranging import beam_range, cone_median_range, ground_plane_range
from gizmo_core import Decision, HoldReason
from tests.support.fusion_inputs import (
    FORWARD_DOWN_45,
    MS,
    board_units,
    observation,
    pose,
    up,
    world,
    yaw_quat,
)

# The vehicle hovers 10 m up at the origin, nose north; the target is 10 m north on the ground.
TARGET = (10.0, 0.0, 0.0)
HOVER = (0.0, 0.0, -10.0)
CAMERA = CameraModel(FORWARD_DOWN_45)
CAMERA_ORIGIN = g.add(HOVER, FORWARD_DOWN_45.mount_position_frd_m)


def hovering(**config):
    w = world(**config)
    w.apply(up(0))
    for t in range(0, 1001, 10):
        w.apply(pose(t * MS, position=HOVER))
    return w


def seen(w, capture_ms=900, target=TARGET):
    centre = board_units(CAMERA, target, HOVER, g.IDENTITY)
    w.apply(observation(capture_ms * MS, rx_ns=(capture_ms + 20) * MS, center=centre))
    return w.snapshot((capture_ms + 21) * MS).targets[0]


def test_ground_plane_only_for_rays_pointing_down_from_above():
    assert ground_plane_range((0, 0, -10), (0, 0, 1), 0.0, 500.0) == 10.0
    assert ground_plane_range((0, 0, -10), g.normalize((1, 0, 1)), 0.0, 500.0) == pytest.approx(
        10 * math.sqrt(2)
    )
    assert ground_plane_range((0, 0, -10), (1, 0, 0), 0.0, 500.0) is None  # horizontal
    assert ground_plane_range((0, 0, -10), g.normalize((1, 0, -1)), 0.0, 500.0) is None
    assert ground_plane_range((0, 0, 1), (0, 0, 1), 0.0, 500.0) is None  # below the ground
    assert ground_plane_range((0, 0, -10), g.normalize((1, 0, 0.01)), 0.0, 500.0) is None


def test_beam_range_needs_the_hit_on_the_ray():
    ray = g.normalize((1, 0, 1))
    laser_origin = (0.0, 0.2, 0.0)
    to_hit = g.sub(g.scale(ray, 14.0), laser_origin)
    direction, distance = g.normalize(to_hit), g.norm(to_hit)
    r = beam_range((0, 0, 0), ray, laser_origin, direction, distance, math.radians(1.0))
    assert r == pytest.approx(14.0, abs=1e-9)
    assert beam_range((0, 0, 0), (1, 0, 0), laser_origin, direction, distance, 0.01) is None


def test_cone_median_ignores_points_off_the_ray():
    rng = np.random.default_rng(1)
    on_ray = np.outer(rng.uniform(9.9, 10.1, 50), [1.0, 0.0, 0.0])
    clutter = rng.uniform(-20, 20, (500, 3))
    clutter = clutter[
        np.abs(np.arctan2(np.hypot(clutter[:, 1], clutter[:, 2]), clutter[:, 0])) > 0.1
    ]
    points = np.vstack([on_ray, clutter])
    assert cone_median_range((0, 0, 0), (1, 0, 0), points, math.radians(1), 3) == pytest.approx(
        10.0, abs=0.05
    )
    assert cone_median_range((0, 0, 0), (0, 1, 0), on_ray, math.radians(1), 3) is None


def test_ground_plane_position_of_a_target_ahead():
    t = seen(hovering())
    assert t.range_source is RangeSource.GROUND_PLANE
    assert g.norm(g.sub(t.position_ned_m, TARGET)) < 0.05
    assert t.range_m == pytest.approx(g.norm(g.sub(TARGET, CAMERA_ORIGIN)), abs=0.05)


def test_no_range_means_no_position_and_still_proceed():
    t = seen(hovering(ground_plane=False))
    assert t.verdict is Decision.PROCEED and t.bearing_ned is not None
    assert (t.position_ned_m, t.range_m, t.range_source) == (None, None, None)


def laser_mount():
    return SensorMount(position_frd_m=(0.1, 0.05, 0.05), rpy_deg=(0.0, -45.0, 0.0))


def laser_distance(mount, target=TARGET):
    origin = g.add(HOVER, mount.position_frd_m)
    return g.norm(g.sub(target, origin))


def test_laser_on_the_target_wins_over_the_ground_plane():
    w = hovering(ground_z_ned_m=-3.0)  # a wrong ground plane: the laser must be used
    mount = laser_mount()
    w.apply(LaserRange(895 * MS, laser_distance(mount), mount))
    t = seen(w)
    assert t.range_source is RangeSource.LASER
    assert g.norm(g.sub(t.position_ned_m, TARGET)) < 0.05


@pytest.mark.parametrize("kind", ["laser", "gimbal_laser", "lidar"])
def test_a_range_beyond_where_the_ray_meets_the_ground_is_refused_and_counted(kind):
    """Red team rt18: a gimbal laser range of 2999 m (under its 3000 m limit) placed every
    PROCEED 2979 m under the ground, 500 m 480 m under it. With the ground plane on, a range
    beyond it (by half and 5 m: the plane is a model) cannot be the target's: the ground
    plane places it."""
    on_ground = math.dist(CAMERA_ORIGIN, TARGET)  # 14.1 m: the ray meets the ground there
    for distance, used in ((on_ground, True), (on_ground * 1.5 + 4.9, True), (500.0, False)):
        w = hovering()
        mount = laser_mount()
        if kind == "laser":
            w.apply(LaserRange(895 * MS, distance, mount))
        elif kind == "gimbal_laser":
            w.apply(GimbalSample(890 * MS, (0.0, -45.0, 0.0)))
            w.apply(GimbalSample(900 * MS, (0.0, -45.0, 0.0)))
            w.apply(GimbalLaserRange(895 * MS, distance))
        else:
            ray = g.normalize(g.sub(TARGET, CAMERA_ORIGIN))
            point = g.add(CAMERA_ORIGIN, tuple(distance * c for c in ray))
            w.apply(LidarPoints(895 * MS, np.array([point] * 3), PointFrame.WORLD_NED, 10_000.0))
        t = seen(w)
        if kind == "gimbal_laser" and t.range_source is RangeSource.GROUND_PLANE and used:
            pytest.skip("the gimbal laser's axis is not this target's ray in this rig")
        assert (t.range_source.value == kind) is used, (distance, t.range_source)
        assert (w.stats()["range_below_ground"] == 0) is used
        if not used:
            assert t.range_source is RangeSource.GROUND_PLANE
            assert g.norm(g.sub(t.position_ned_m, TARGET)) < 0.05


def test_each_laser_is_read_on_its_own_readings():
    """rt48: the readings before and after a capture were picked across every distance
    sensor: a downward altimeter at 50 Hz took both places, failed the beam test, and the
    laser on the target was never looked at, for as long as the altimeter ran."""
    w = hovering(ground_z_ned_m=-3.0)  # a wrong ground plane: the laser must be used
    mount = laser_mount()
    w.apply(LaserRange(850 * MS, laser_distance(mount), mount, 1, 0))
    altimeter = SensorMount(position_frd_m=(0.0, 0.0, 0.1), rpy_deg=(0.0, -90.0, 0.0))
    for t in (880, 890, 895, 898, 905, 915):
        w.apply(LaserRange(t * MS, 9.9, altimeter, 2, 0))
    t = seen(w)
    assert t.range_source is RangeSource.LASER
    assert g.norm(g.sub(t.position_ned_m, TARGET)) < 0.05


def test_laser_pointing_elsewhere_or_too_old_is_not_used():
    w = hovering(laser_beam_half_angle_deg=1.0, range_max_age_ms=100.0)
    aside = SensorMount(position_frd_m=(0.1, 0.0, 0.05), rpy_deg=(0.0, -45.0, 10.0))
    w.apply(LaserRange(895 * MS, 14.0, aside))
    assert seen(w).range_source is RangeSource.GROUND_PLANE
    w.apply(LaserRange(700 * MS, laser_distance(laser_mount()), laser_mount()))
    assert seen(w, 900).range_source is RangeSource.GROUND_PLANE  # 200 ms from the capture
    w.apply(LaserRange(905 * MS, None, laser_mount()))  # no return
    assert seen(w, 910).range_source is RangeSource.GROUND_PLANE


def test_a_laser_reading_is_placed_with_the_pose_at_its_own_time():
    """The vehicle yaws 90°/s; a reading 20 ms before the capture still marks the target."""
    w = world(ground_plane=False)
    w.apply(up(0))
    for t in range(0, 1001, 10):
        w.apply(pose(t * MS, position=HOVER, q=yaw_quat(90.0 * (t - 900) / 1000)))
    mount = SensorMount(position_frd_m=(0.0, 0.0, 0.0), rpy_deg=(0.0, -45.0, 0.0))
    laser_q = yaw_quat(-1.8)  # the attitude at 880 ms
    laser_dir = g.quat_rotate(g.quat_multiply(laser_q, mount.quaternion_wxyz), (1, 0, 0))
    hit = g.add(HOVER, g.scale(laser_dir, 10 * math.sqrt(2)))
    w.apply(LaserRange(880 * MS, 10 * math.sqrt(2), mount))
    centre = board_units(CAMERA, hit, HOVER, g.IDENTITY)
    w.apply(observation(900 * MS, rx_ns=920 * MS, center=centre))
    t = w.snapshot(921 * MS).targets[0]
    assert t.range_source is RangeSource.LASER
    assert g.norm(g.sub(t.position_ned_m, hit)) < 0.05


def test_lidar_points_in_body_or_world_frame():
    rng = np.random.default_rng(5)
    around = np.asarray(TARGET) + rng.normal(0.0, 0.02, (40, 3))
    for frame, points in (
        (PointFrame.WORLD_NED, around),
        (PointFrame.BODY_FRD, around - np.asarray(HOVER)),
    ):
        w = hovering(ground_z_ned_m=-3.0)
        w.apply(LidarPoints(890 * MS, points, frame, 60.0))
        t = seen(w)
        assert t.range_source is RangeSource.LIDAR, frame
        assert g.norm(g.sub(t.position_ned_m, TARGET)) < 0.1


def gimbal_world(**config):
    camera = CameraConfig(
        width_px=640,
        height_px=480,
        hfov_deg=90.0,
        mount_position_frd_m=(0.0, 0.0, 0.2),
        on_gimbal=True,
    )
    w = world(camera, **config)
    w.apply(up(0))
    for t in range(0, 1001, 10):
        w.apply(pose(t * MS, position=HOVER))
    return w, CameraModel(camera)


def test_gimbal_angles_at_capture_time_place_the_ray():
    w, camera = gimbal_world()
    # The gimbal sweeps pitch from -44° to -46° between 880 and 920 ms (50°/s).
    w.apply(GimbalSample(880 * MS, (0.0, -44.0, 0.0)))
    w.apply(GimbalSample(920 * MS, (0.0, -46.0, 0.0)))
    gimbal_q = g.quat_from_euler_zyx_deg((0.0, -45.0, 0.0))  # at 900 ms
    centre = board_units(camera, TARGET, HOVER, g.IDENTITY, camera_in_body=gimbal_q)
    w.apply(observation(900 * MS, rx_ns=925 * MS, center=centre))
    t = w.snapshot(926 * MS).targets[0]
    assert t.verdict is Decision.PROCEED
    assert g.norm(g.sub(t.position_ned_m, TARGET)) < 0.05


def test_a_gimbal_sweeping_too_fast_to_interpolate_holds_without_a_position():
    w, camera = gimbal_world()
    w.apply(GimbalSample(880 * MS, (0.0, -30.0, 0.0)))
    w.apply(GimbalSample(920 * MS, (0.0, -60.0, 0.0)))  # 750°/s, stamped at arrival
    gimbal_q = g.quat_from_euler_zyx_deg((0.0, -45.0, 0.0))
    centre = board_units(camera, TARGET, HOVER, g.IDENTITY, camera_in_body=gimbal_q)
    w.apply(observation(900 * MS, rx_ns=925 * MS, center=centre))
    t = w.snapshot(926 * MS).targets[0]
    assert t.verdict is Decision.HOLD and HoldReason.POSE_GAP in t.reasons
    assert t.position_ned_m is None and t.bearing_ned is None


def test_gimbal_laser_along_the_optical_axis():
    w, camera = gimbal_world(ground_z_ned_m=-3.0)
    for t in range(600, 921, 40):  # still for 320 ms, on both sides of the capture
        w.apply(GimbalSample(t * MS, (0.0, -45.0, 0.0), fx_px=320.0, fy_px=320.0))
    origin = g.add(HOVER, (0.0, 0.0, 0.2))
    w.apply(GimbalLaserRange(890 * MS, g.norm(g.sub(TARGET, origin))))
    gimbal_q = g.quat_from_euler_zyx_deg((0.0, -45.0, 0.0))
    centre = board_units(camera, TARGET, HOVER, g.IDENTITY, camera_in_body=gimbal_q)
    w.apply(observation(900 * MS, rx_ns=925 * MS, center=centre))
    t = w.snapshot(926 * MS).targets[0]
    assert t.range_source is RangeSource.GIMBAL_LASER
    assert g.norm(g.sub(t.position_ned_m, TARGET)) < 0.1


def test_a_gimbal_camera_without_gimbal_angles_holds():
    w, _ = gimbal_world()
    w.apply(observation(900 * MS, rx_ns=925 * MS))
    s = w.snapshot(926 * MS)
    assert (s.verdict, s.reasons) == (Decision.HOLD, (HoldReason.NO_POSE,))
    w.apply(GimbalSample(500 * MS, (0.0, -45.0, 0.0)))
    w.apply(observation(930 * MS, rx_ns=950 * MS))  # waits for a status after it: none
    s = w.snapshot(1051 * MS)
    assert (s.verdict, s.reasons) == (Decision.HOLD, (HoldReason.POSE_GAP,))  # angles too old


def test_a_range_is_never_carried_forward():
    w = hovering(ground_plane=False)
    mount = laser_mount()
    w.apply(LaserRange(895 * MS, laser_distance(mount), mount))
    assert seen(w, 900).range_source is RangeSource.LASER
    t = seen(w, 1000)  # 105 ms after the only reading
    assert (t.position_ned_m, t.range_source) == (None, None)
