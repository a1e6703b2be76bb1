"""Targets to frames, sans-I/O: projection through the simulator's camera (checked against
fusion's rays), the output policy, latency,
the built-in scenario and the emulation's frames (timestamp = capture + latency)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from fusion.camera import CameraConfig, CameraModel
from fusion.geometry import angle_between_rad, normalize, quat_from_euler_zyx_deg, quat_rotate
from gizmo_core import ConfigError
from gizmo_host.rigs.board import LOST_RELATIVE, TRACKED_RELATIVE
from gizmo_host.rigs.board.builtin_scene import BoardScenario
from gizmo_host.rigs.board.detections import (
    LatencyKind,
    LatencyModel,
    OutputPolicy,
    PerCycle,
    TargetInView,
    class_id,
)
from gizmo_host.rigs.board.emulate_settings import emulator_camera
from gizmo_host.rigs.board.projection import camera_pose, pixel_box, project_box
from gizmo_host.wire.results import DetectorId, NormBox, ResultType
from tests.support.emulate_host import START_NS, make_emulation

FORWARD = CameraConfig(width_px=640, height_px=480, hfov_deg=90.0)
angles = st.floats(-180, 180)


@given(
    st.tuples(st.floats(-20, 20), st.floats(-60, 60), angles),
    st.tuples(st.floats(-50, 50), st.floats(-50, 50), st.floats(-30, 0)),
    st.tuples(st.floats(-30, 30), st.floats(-30, 30), st.floats(-30, 30)),
    st.tuples(st.floats(-5, 5), st.floats(-90, 0), st.floats(-30, 30)),
)
def test_a_projected_target_is_where_fusion_casts_its_ray(rpy, ego, offset, mount):
    """project_box is the inverse of fusion's ray: the ray through the box centre, taken back
    through the mount and the vehicle's attitude, points at the target."""
    config = CameraConfig(640, 480, hfov_deg=80.0, mount_rpy_deg=mount)
    fusion_camera = CameraModel(config)
    camera = emulator_camera(config)
    attitude = quat_from_euler_zyx_deg(rpy)
    target = (ego[0] + offset[0], ego[1] + offset[1], ego[2] + offset[2])
    pose = camera_pose(camera, ego, attitude)
    position = tuple(float(p) for p in pose.position_ned_m)
    box = project_box(camera, pose, target, (0.0, 0.0, 0.0))
    to_target = tuple(t - p for t, p in zip(target, position, strict=True))
    assume(math.dist(target, position) > 1.0)
    if box is None:
        return
    ray_ned = quat_rotate(
        attitude, fusion_camera.to_body(fusion_camera.bearing_camera(box.center_x, box.center_y))
    )
    # The box centre is rounded to 1/1000 of the half image: about 0.05° here.
    assert math.degrees(angle_between_rad(ray_ned, normalize(to_target))) < 0.2
    assert box.width == box.height == 0


def test_a_target_behind_outside_or_too_far_is_not_in_view():
    camera = emulator_camera(FORWARD)
    pose = camera_pose(camera, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    half = (0.5, 0.5, 0.5)
    assert project_box(camera, pose, (10.0, 0.0, 0.0), half) is not None
    assert project_box(camera, pose, (-10.0, 0.0, 0.0), half) is None
    assert project_box(camera, pose, (10.0, 11.0, 0.0), half) is None  # > 45°
    assert project_box(camera, pose, (300.0, 0.0, 0.0), half) is None


def test_a_box_straight_ahead_is_centred_and_sized_by_its_distance():
    camera = emulator_camera(FORWARD)  # fx = 320 px
    pose = camera_pose(camera, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    box = project_box(camera, pose, (10.5, 0.0, 0.0), (0.5, 1.0, 0.5))
    # The near face (10 m) is the largest: 2 m x 1 m -> 64 x 32 px -> 64/640 and 32/480 of 2000.
    assert box == NormBox(center_x=0, center_y=0, width=200, height=133)


def test_typeid_30_pixel_corners_map_to_board_units():
    assert pixel_box(0, 0, 639, 479, 640, 480) == NormBox(0, 0, 1997, 1996)
    assert pixel_box(-0.5, -0.5, 639.5, 479.5, 640, 480) == NormBox(0, 0, 2000, 2000)
    assert pixel_box(100, 100, 100, 200, 640, 480) is None  # no area
    assert pixel_box(700, 0, 800, 10, 640, 480) is None  # off the image
    assert pixel_box(math.nan, 0, 10, 10, 640, 480) is None


def detection(target: str, confidence: int = 80, size: int = 100) -> TargetInView:
    return TargetInView(target, NormBox(10, -20, size, size), confidence)


def test_policy_maps_classes_picks_the_best_and_reports_nothing_in_view():
    policy = OutputPolicy(classes={"2": int(DetectorId.PEDESTRIAN), "3": int(DetectorId.CAT)})
    (frame,) = policy.frames([detection("3", 70), detection("2", 90)])
    assert (frame.flags, frame.id, frame.target, frame.confidence) == (
        TRACKED_RELATIVE,
        11,
        "2",
        90,
    )
    (frame,) = policy.frames([detection("3", 90, 50), detection("2", 90, 60)])
    assert frame.target == "2"  # same confidence: the larger box
    (lost,) = policy.frames([])
    assert (lost.flags, lost.id, lost.w, lost.target) == (LOST_RELATIVE, 11, 0, None)
    every = OutputPolicy(classes={"2": 11}, default_class=None, per_cycle=PerCycle.ALL)
    assert [f.target for f in every.frames([detection("9"), detection("2")])] == ["2"]
    assert every.frames([detection("9")])[0].flags == LOST_RELATIVE  # unmapped: not reported
    both = OutputPolicy(per_cycle=PerCycle.ALL)
    assert [f.target for f in both.frames([detection("b"), detection("a")])] == ["a", "b"]


def test_class_names_follow_the_result_type():
    assert class_id(ResultType.DETECTOR, "pedestrian", "k") == 11
    assert class_id(ResultType.COLOR_BLOB, "BLUE", "k") == 4
    assert class_id(ResultType.QR_CODE, "0x1234", "k") == 0x1234
    with pytest.raises(ConfigError, match=r"k: expected a DETECTOR class .*got 'RED'"):
        class_id(ResultType.DETECTOR, "RED", "k")
    with pytest.raises(ConfigError, match=r"class id in -32768\.\.32767"):
        class_id(ResultType.DETECTOR, 40000, "k")
    with pytest.raises(ConfigError, match="a task with boxes"):
        OutputPolicy(result_type=ResultType.LINE)


@pytest.mark.parametrize(
    ("spec", "model"),
    [
        ("12", LatencyModel(LatencyKind.FIXED, 12.0, 0.0)),
        (12, LatencyModel(LatencyKind.FIXED, 12.0, 0.0)),
        ("uniform:8:16", LatencyModel(LatencyKind.UNIFORM, 8.0, 16.0)),
        ("normal:12:2", LatencyModel(LatencyKind.NORMAL, 12.0, 2.0)),
    ],
)
def test_latency_specs(spec, model):
    assert LatencyModel.parse(spec) == model


@pytest.mark.parametrize("spec", ["fast", "uniform:8", "normal:1:2:3", "uniform:9:8", "-1", "nan"])
def test_bad_latency_specs_are_config_errors(spec):
    with pytest.raises(ConfigError, match="latency"):
        LatencyModel.parse(spec)


def test_latency_draws_stay_in_their_distribution():
    rng = random.Random(1)
    uniform = [LatencyModel(LatencyKind.UNIFORM, 8, 16).draw(rng) for _ in range(500)]
    assert min(uniform) >= 8 and max(uniform) <= 16 and len(set(uniform)) == 9
    normal = [LatencyModel(LatencyKind.NORMAL, 12, 2).draw(rng) for _ in range(2000)]
    assert abs(sum(normal) / len(normal) - 12) < 0.3
    assert LatencyModel(LatencyKind.NORMAL, 1, 50).draw(rng) >= 0


def test_the_scenario_has_targets_in_and_out_of_view():
    scenario = BoardScenario()
    seen = [{d.target for d in scenario.detections(t / 2)} for t in range(96)]
    assert {"2", "3"} in seen and set() in seen and {"2"} in seen and {"3"} in seen
    assert scenario.detections(8.0) == []
    assert scenario.truth(0.0)["2"] == pytest.approx((11.0, 0.0, -0.9))


def test_frames_carry_capture_plus_latency_and_one_frame_per_cycle():
    latency = LatencyModel(LatencyKind.FIXED, 12.0, 0.0)
    emulation = make_emulation(latency=latency)
    scenario = BoardScenario()
    board_ms = emulation.board.device_ms(START_NS)  # 60 s of uptime at the start
    for index in range(0, 300, 7):
        t_s = index * emulation.period_ns / 1e9
        cycle = emulation.cycle(index, scenario.detections(t_s))
        (result,) = cycle.results
        assert cycle.emit_ns == cycle.capture_ns + 12_000_000
        assert result.age_ms == 12
        assert result.timestamp_ms == board_ms + (cycle.emit_ns - START_NS) // 1_000_000
        assert result.flags == (TRACKED_RELATIVE if scenario.detections(t_s) else LOST_RELATIVE)
    stats = emulation.stats()["frames"]
    assert stats["detected"] > 0 and stats["not_detected"] > 0
