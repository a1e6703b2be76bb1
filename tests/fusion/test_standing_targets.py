"""Targets that stand on the ground, placed by the ground plane (``[world] flat_targets``).

The ray through a box's centre meets the plane behind a target that stands: a person 16 m
away seen from 2 m up is placed 11.6 m behind it at Mahalanobis 47-157 (red team rt46: 12.9
m, 166).
With ``flat_targets = false`` the fix lies halfway between the plane and the height a standing
target's centre has, and the estimate's covariance carries that spread and the box centre's
perspective offset as a bias. The truth here is each solid's centroid, from the scene's own
numpy projection of its eight corners (``tests/support/gimbal_scenes.py``), never fusion's.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from fusion import CameraConfig, CameraModel, RangeSource, WorldConfig
from fusion.geometry import quat_rotate
from fusion.placement import Placer
from fusion.targets import RayFrame
from fusion.tracking.noise import extent_covariance
from hil_geometry.rotations import quat_from_euler_zyx
from tests.support.gimbal_scenes import Scene, Target, proceed_errors, run

PERSON = (0.5, 0.5, 1.7)  # north, east, down sizes (m)
CAR_ALONG = (4.5, 1.8, 1.5)
CAR_ACROSS = (1.8, 4.5, 1.5)
PAD = (1.0, 1.0, 0.02)
POLE = (0.3, 0.3, 3.0)
TRUCK = (8.0, 2.5, 3.0)


def standing_scene(
    size: tuple[float, float, float],
    altitude_m: float,
    north_m: float,
    east_m: float = 0.0,
    *,
    flat: bool,
    aim_off_deg: tuple[float, float] = (0.0, 0.0),
    duration_s: float = 2.0,
) -> Scene:
    """A solid standing on the plane, its centroid ``north_m``, ``east_m`` from below the
    hovering camera, which looks at it (off by ``aim_off_deg``: pitch, yaw); no laser."""
    centroid = np.array([north_m, east_m, -size[2] / 2])
    across = math.hypot(north_m, east_m)
    pitch = -math.degrees(math.atan2(altitude_m - size[2] / 2, across)) + aim_off_deg[0]
    yaw = math.degrees(math.atan2(east_m, north_m)) + aim_off_deg[1]
    return Scene(
        [Target(1, lambda _t: centroid, extent_m=size)],
        duration_s=duration_s,
        altitude_m=altitude_m,
        gimbal_rpy=lambda _t: (0.0, pitch, yaw),
        laser=False,
        world={"flat_targets": flat},
    )


def errors(scene: Scene) -> np.ndarray:
    """Each PROCEED's (error m, Mahalanobis); asserts there were PROCEEDs."""
    _, lines = run(scene)
    found = np.array(proceed_errors(scene, lines))
    assert len(found) > 20, "the scene's target never PROCEEDed"
    return found


def test_a_person_seen_from_low_is_placed_nearer_and_its_covariance_covers_the_error() -> None:
    """rt46's scene. As flat targets: 11.6 m off at Mahalanobis 150 and more. As standing
    ones: about half as far off, and within 1.5 σ."""
    flat = errors(standing_scene(PERSON, 2.0, 16.0, flat=True))
    standing = errors(standing_scene(PERSON, 2.0, 16.0, flat=False))
    assert flat[:, 0].min() > 10.0 and flat[:, 1].min() > 40.0  # the flat model's limitation
    assert standing[:, 0].max() < 0.6 * flat[:, 0].min()
    assert standing[:, 1].max() < 1.5


@pytest.mark.parametrize(
    ("size", "altitude_m", "north_m"),
    [
        (CAR_ALONG, 10.0, 10.0), (CAR_ACROSS, 10.0, 10.0), (TRUCK, 10.7, 13.7), (POLE, 2.3, 7.3),
        (PERSON, 20.0, 0.0), (PERSON, 20.0, 0.3), (CAR_ALONG, 15.0, 1.0), (CAR_ALONG, 15.0, 2.0),
    ],
    ids=[
        "car end on, 45 deg down", "car side on", "truck close", "pole from 2.3 m",
        "person below", "person 0.3 m aside", "car 1 m aside", "car 2 m aside",
    ],
)  # fmt: skip
def test_close_solids_seen_steeply_or_below_stay_within_their_covariance(
    size: tuple[float, float, float], altitude_m: float, north_m: float
) -> None:
    """A long target seen close and steeply: its box's centre is off its centroid by
    perspective (the car end on: 1 m off, Mahalanobis 11 without the box's share). A target
    below the vehicle (rt49): its box over the ground below the camera had no corner steeper
    than its centre, and was placed on the plane, its centroid 0.75-0.85 m above at σ 6 mm
    (Mahalanobis 41-151); it may stand right below, up to ``target_max_height_m``."""
    found = errors(standing_scene(size, altitude_m, north_m, flat=False))
    assert found[:, 1].max() < 1.5


def test_solids_anywhere_in_view_stay_within_their_covariance() -> None:
    """Seeded geometries: 2-50 m up, 5-100 m away, up to 30 % aside, the gimbal up to 8° off
    the target in pitch and 10° in yaw; people, cars, pads, poles, trucks, cubes."""
    rng = random.Random(20261207)
    shapes = [PERSON, CAR_ALONG, CAR_ACROSS, PAD, POLE, TRUCK, (2.0, 2.0, 2.0)]
    worst, scenes = 0.0, 0
    for _ in range(16):
        altitude, north = rng.uniform(2, 50), rng.uniform(5, 100)
        east = rng.uniform(-0.3, 0.3) * north
        scene = standing_scene(
            rng.choice(shapes), altitude, north, east, flat=False, duration_s=1.2,
            aim_off_deg=(rng.uniform(-8, 8), rng.uniform(-10, 10)),
        )  # fmt: skip
        _, lines = run(scene)
        found = proceed_errors(scene, lines)
        if found:
            scenes += 1
            worst = max(worst, *(m for _, m in found))
    assert scenes >= 12  # most in view (a box at the image's edge is cut off: no position)
    assert worst < 1.5


def test_flat_targets_are_placed_on_the_plane_as_before() -> None:
    """The default: a pad's centre on the plane, centimetres off."""
    found = errors(standing_scene(PAD, 10.0, 10.0, flat=True))
    assert found[:, 0].max() < 0.05
    assert WorldConfig().flat_targets


def _ray(rotation_q: tuple[float, float, float, float], u_px: float, v_px: float, f_px: float,
         c_px: tuple[float, float]) -> np.ndarray:  # fmt: skip
    """A pixel's unit ray in NED by this test's own pinhole (x optical, y right, z down)."""
    v = np.array([1.0, (u_px - c_px[0]) / f_px, (v_px - c_px[1]) / f_px])
    w, x, y, z = rotation_q
    r = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])  # fmt: skip
    out = r @ v
    return np.asarray(out / np.linalg.norm(out))


@pytest.mark.parametrize("roll_deg", [0.0, 25.0])
def test_standing_height_is_the_centre_rays_height_over_the_boxs_nearest_ground_point(
    roll_deg: float,
) -> None:
    """``Placer.standing_height`` against this test's own rays: over the nearest ground point
    the box's corners meet, ahead along the centre's bearing, the centre's ray is that high;
    a rolled camera too."""
    camera = CameraModel(CameraConfig(width_px=640, height_px=480, hfov_deg=90.0))
    placer = Placer(camera, WorldConfig(flat_targets=False, target_max_height_m=100.0))
    f_px, centre_px = (640 / 2) / math.tan(math.radians(45.0)), (639 / 2, 479 / 2)
    q = quat_from_euler_zyx(math.radians(roll_deg), math.radians(-20.0), math.radians(30.0))
    origin = np.array([1.0, -2.0, -12.0])
    box = (120.0, 260.0, 90.0, 300.0)  # the board's units: centre x, y, width, height
    to_px = (639 / 2000, 479 / 2000)

    def ray(ux: float, uy: float) -> np.ndarray:
        return _ray(q, (ux + 1000) * to_px[0], (uy + 1000) * to_px[1], f_px, centre_px)

    cx, cy, w, h = box
    centre = ray(cx, cy)
    corners = [ray(cx + sx * w / 2, cy + sy * h / 2) for sx in (-1, 1) for sy in (-1, 1)]
    ahead = centre[:2] / np.linalg.norm(centre[:2])  # the centre's bearing, level
    nearest = min(float((c[:2] * -origin[2] / c[2]) @ ahead) for c in corners if c[2] > 0)
    expected = -origin[2] - nearest * centre[2] / math.hypot(centre[0], centre[1])
    fusion_ray = quat_rotate(q, camera.bearing_camera(cx, cy))
    assert np.allclose(fusion_ray, centre, atol=1e-12)
    got = placer.standing_height((cx, cy, w, h, None, None), q, tuple(origin), fusion_ray)
    assert expected > 1.0 and got == pytest.approx(expected, rel=1e-9)
    below = (0.0, 0.0)  # a box about the ground straight below: as high as it may be
    level_down = quat_from_euler_zyx(0.0, math.radians(-89.0), 0.0)
    down_ray = quat_rotate(level_down, camera.bearing_camera(*below))
    box_below = (*below, 400.0, 400.0, None, None)
    assert placer.standing_height(box_below, level_down, tuple(origin), down_ray) == 12.0
    capped = Placer(camera, WorldConfig(flat_targets=False, target_max_height_m=0.5))
    assert capped.standing_height((cx, cy, w, h, None, None), q, tuple(origin), fusion_ray) == 0.5


@pytest.mark.parametrize("length_m", [4.5, 20.0, 30.0])
def test_a_wide_target_side_on_keeps_its_height(length_m: float) -> None:
    """rt49: the nearest ground was the corners' horizontal distance, and a wide box's
    bottom corners lie far to its sides: a 30 m target 25 m away, side on, was placed on
    the plane (3.1 m off, Mahalanobis 266). Ahead along the centre's bearing they are not."""
    found = errors(standing_scene((2.5, length_m, 3.0), 15.0, 25.0, flat=False))
    assert found[:, 1].max() < 1.5


def test_a_car_driving_at_the_camera_does_not_climb() -> None:
    """rt49: the fix's height h/2 follows the view, and the filter took it as the target's:
    a car driving at a hovering camera at 10 m/s climbed at 0.1 m/s (z-score 11.5). The
    filter takes the plane's point; only the estimate is lifted."""
    speed = 10.0

    def car_at(t: float) -> np.ndarray:
        return np.array([60.0 - speed * t, 0.0, -CAR_ALONG[2] / 2])

    def following(t: float) -> tuple[float, float, float]:
        north = 60.0 - speed * t
        return (0.0, -math.degrees(math.atan2(10.0 - CAR_ALONG[2] / 2, north)), 0.0)

    scene = Scene(
        [Target(1, car_at, extent_m=CAR_ALONG)], duration_s=3.0, altitude_m=10.0,
        gimbal_rpy=following, laser=False, world={"flat_targets": False},
    )  # fmt: skip
    _, lines = run(scene)
    climbs = [
        abs(line.velocity_ned_m_s[2]) / math.sqrt(line.covariance_ned[6 * 5 + 5])
        for _, line in lines
        if line.verdict.value == "PROCEED" and line.velocity_ned_m_s is not None
    ]
    assert len(climbs) > 50
    assert max(climbs) < 1.0  # z-scores of the down velocity
    assert max(m for _, m in proceed_errors(scene, lines)) < 1.5


def test_the_extent_covariance_of_a_height_alone_lies_along_the_ray() -> None:
    """A box of no size with a height σ: σ²·a·aᵀ, a = the ray over its down part."""
    q = quat_from_euler_zyx(0.0, math.radians(-30.0), math.radians(40.0))
    frame = RayFrame((0.0, 0.0, -10.0), q, 320.0, 320.0, None, None, 0.7)
    bearing = (1.0, 0.0, 0.0)
    ray = np.array(quat_rotate(q, bearing))
    a = ray / ray[2]
    got = extent_covariance(bearing, frame, 20.0, (0.0, 0.0))
    assert np.allclose(got, 0.49 * np.outer(a, a), atol=1e-12)
    wide = extent_covariance(bearing, frame, 20.0, (50.0, 80.0))
    assert np.all(np.linalg.eigvalsh(wide - got) > -1e-9) and np.trace(wide) > np.trace(got)


def test_a_standing_targets_track_on_the_plane_takes_no_laser_fix() -> None:
    """rt51: a board standing 10 m ahead, seen from 10 m up, tracked on the plane until its
    gimbal laser starts at 3 s. The capture just before took the first reading alone (its σ
    widened by its age), and the plane's track took it: for 100 ms its estimate was the
    filter's point on the plane, un-lifted, 1.5 m off at Mahalanobis 164. A track now holds
    fixes of one kind: the laser's start a track of their own."""
    board = (0.05, 1.2, 2.0)
    centroid = np.array([10.0, 0.0, -board[2] / 2])
    pitch = -math.degrees(math.atan2(10.0 - board[2] / 2, 10.0))
    scene = Scene(
        [Target(1, lambda _t: centroid, radius_m=0.025, extent_m=board)], duration_s=4.5,
        altitude_m=10.0, gimbal_rpy=lambda _t: (0.0, pitch, 0.0), world={"flat_targets": False},
    )  # fmt: skip
    cast = scene.laser_range
    scene.laser_m = lambda t: cast(t) if t >= 3.0 else None
    _, lines = run(scene)
    found = proceed_errors(scene, lines)
    sources = {line.range_source for _, line in lines if line.verdict.value == "PROCEED"}
    assert sources == {RangeSource.GROUND_PLANE, RangeSource.GIMBAL_LASER}
    assert len(found) > 100
    assert max(m for _, m in found) < 10.0
