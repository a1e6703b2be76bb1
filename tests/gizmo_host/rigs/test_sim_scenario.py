"""The stand-in's ground truth: the built-in scenarios' geometry, the attitude a multicopter
needs to fly them, the simulation clock and the camera bearings (the simulator's own camera,
checked through fusion's camera model, the other way round)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion.camera import CameraConfig, CameraModel
from fusion.geometry import quat_rotate
from gizmo_host.rigs.rflysim import SimTime, build_scenario
from gizmo_host.rigs.rflysim.kinematics import GRAVITY_M_S2
from gizmo_host.rigs.rflysim.scenario import TargetMotion
from gizmo_host.rigs.rflysim.tracks import Orbit
from hil_geometry.pinhole import Pinhole

ORBIT = build_scenario("orbit")
ORBIT_TRACK = ORBIT.ego.track
assert isinstance(ORBIT_TRACK, Orbit)
SPIN_S = ORBIT_TRACK.spin_duration_s
CAMERA = CameraModel(
    CameraConfig(width_px=640, height_px=480, hfov_deg=90.0, mount_rpy_deg=(0.0, -45.0, 0.0))
)
SIM_CAMERA = Pinhole.from_sensor(640, 480, 90.0, rpy_deg=(0.0, -45.0, 0.0))
times = st.floats(min_value=0.0, max_value=300.0, allow_nan=False)


def horizontal(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def wrap(angle: float) -> float:
    return (angle + math.pi) % (2 * math.pi) - math.pi


def spinning(t: float) -> bool:
    return ORBIT_TRACK.spin_at(t)[1] is not None


@given(times)
def test_orbit_keeps_10_m_from_the_target_at_10_m_up_and_2_m_s(t: float) -> None:
    truth = ORBIT.truth(t)
    ego = truth.ego.state
    target = truth.target(2).state
    assert horizontal(ego.position_ned_m, target.position_ned_m) == pytest.approx(10.0, abs=1e-9)
    assert ego.position_ned_m[2] == pytest.approx(-10.0)
    assert math.hypot(*ego.velocity_ned_m_s) == pytest.approx(2.0, abs=1e-6)


@given(times)
def test_the_orbit_points_its_nose_at_the_target_outside_the_spins(t: float) -> None:
    truth = ORBIT.truth(t)
    ego, target = truth.ego.state.position_ned_m, truth.target(2).state.position_ned_m
    to_target = math.atan2(target[1] - ego[1], target[0] - ego[0])
    off = abs(wrap(truth.ego.state.yaw_rad - to_target))
    if spinning(t):
        return
    assert off < 1e-6


def test_the_spins_turn_at_90_deg_s_for_a_full_extra_turn() -> None:
    # Spin k starts at 8 + 20k s and lasts 2π / (π/2 - 0.2) s.
    assert pytest.approx(2 * math.pi / (math.pi / 2 - 0.2)) == SPIN_S
    assert not spinning(7.99) and spinning(8.01) and spinning(8 + SPIN_S - 0.01)
    assert not spinning(8 + SPIN_S + 0.01) and spinning(28.01)
    dt = 0.01
    for t in (8.5, 10.0, 12.0, 28.5):
        a, b = ORBIT.truth(t).ego.state, ORBIT.truth(t + dt).ego.state
        yaw_rate = wrap(b.yaw_rad - a.yaw_rad) / dt
        assert math.degrees(yaw_rate) == pytest.approx(90.0, abs=1e-6)
        # The gyro reads the Euler rates turned into the body (Z-Y-X kinematics), an
        # independent path from the quaternion difference the stand-in uses.
        before, after = ORBIT.truth(t - 1e-4).ego.state, ORBIT.truth(t + 1e-4).ego.state
        roll_dot, pitch_dot, yaw_dot = (
            wrap(y - x) / 2e-4 for x, y in zip(before.euler_rad, after.euler_rad, strict=True)
        )
        roll, pitch, _ = a.euler_rad
        expected = (
            roll_dot - yaw_dot * math.sin(pitch),
            pitch_dot * math.cos(roll) + yaw_dot * math.sin(roll) * math.cos(pitch),
            -pitch_dot * math.sin(roll) + yaw_dot * math.cos(roll) * math.cos(pitch),
        )
        assert a.angular_rate_frd_rad_s == pytest.approx(expected, abs=1e-5)
    for t in (2.0, 20.0):  # outside: the orbit's own 0.2 rad/s
        a, b = ORBIT.truth(t).ego.state, ORBIT.truth(t + dt).ego.state
        assert wrap(b.yaw_rad - a.yaw_rad) / dt == pytest.approx(0.2, abs=1e-6)


def test_the_yaw_is_continuous_through_a_spin() -> None:
    previous = ORBIT.truth(7.0).ego.state.yaw_rad
    turned = 0.0
    t = 7.0
    while t < 8 + SPIN_S + 1.0:
        t += 0.005
        yaw = ORBIT.truth(t).ego.state.yaw_rad
        step = wrap(yaw - previous)
        assert abs(step) <= math.radians(90) * 0.005 + 1e-9
        turned += step
        previous = yaw
    # A full extra turn plus the orbit's own 0.2 rad/s over the stretch.
    assert turned == pytest.approx(2 * math.pi + 0.2 * (SPIN_S + 2.0), abs=1e-3)


@given(times)
def test_the_attitude_tilts_the_thrust_along_the_specific_force(t: float) -> None:
    ego = ORBIT.truth(t).ego.state
    # Centripetal 2²/10 m/s² towards the centre, gravity down: the accelerometer feels both
    # along body -z only.
    f = ego.specific_force_frd_m_s2
    assert f[0] == pytest.approx(0.0, abs=1e-5) and f[1] == pytest.approx(0.0, abs=1e-5)
    assert -f[2] == pytest.approx(math.hypot(GRAVITY_M_S2, 0.4), abs=1e-5)
    thrust_ned = quat_rotate(ego.quaternion_wxyz, (0.0, 0.0, -1.0))
    accel = ego.acceleration_ned_m_s2
    expected = (accel[0], accel[1], accel[2] - GRAVITY_M_S2)
    n = math.hypot(*expected)
    for got, want in zip(thrust_ned, expected, strict=True):
        assert got == pytest.approx(want / n, abs=1e-6)


def test_a_hovering_vehicle_feels_one_g_up_and_no_rate() -> None:
    bystander = ORBIT.truth(3.0).target(3).state
    assert bystander.specific_force_frd_m_s2 == pytest.approx((0.0, 0.0, -GRAVITY_M_S2))
    assert bystander.angular_rate_frd_rad_s == pytest.approx((0.0, 0.0, 0.0), abs=1e-12)
    assert bystander.velocity_ned_m_s == pytest.approx((0.0, 0.0, 0.0), abs=1e-12)


def test_approach_closes_from_30_m_to_10_m_behind_a_moving_target() -> None:
    scenario = build_scenario("approach")
    gaps = []
    for t in range(0, 61, 5):
        truth = scenario.truth(float(t))
        ego, target = truth.ego.state, truth.target(2).state
        gaps.append(horizontal(ego.position_ned_m, target.position_ned_m))
        assert target.velocity_ned_m_s == pytest.approx((1.5, 0.0, 0.0), abs=1e-6)
        assert target.position_ned_m[0] == pytest.approx(30.0 + 1.5 * t)
        assert ego.position_ned_m[2] - target.position_ned_m[2] == pytest.approx(-10.0)
    assert gaps[0] == pytest.approx(30.0)
    assert all(a > b for a, b in itertools.pairwise(gaps))
    assert gaps[-1] == pytest.approx(10.0, abs=0.02)


@given(times)
def test_track_follows_10_m_behind_a_target_on_a_20_m_circle(t: float) -> None:
    truth = build_scenario("track").truth(t)
    ego, target = truth.ego.state, truth.target(2).state
    assert math.hypot(target.position_ned_m[0], target.position_ned_m[1]) == pytest.approx(20.0)
    assert math.hypot(*target.velocity_ned_m_s) == pytest.approx(3.0, abs=1e-6)
    assert horizontal(ego.position_ned_m, target.position_ned_m) == pytest.approx(10.0)
    to_target = math.atan2(
        target.position_ned_m[1] - ego.position_ned_m[1],
        target.position_ned_m[0] - ego.position_ned_m[0],
    )
    assert abs(wrap(ego.yaw_rad - to_target)) < 1e-9


def test_the_simulation_clock_starts_where_asked_and_jumps_once() -> None:
    scenario = build_scenario("orbit", time=SimTime(start_s=100.0, jump_at_s=2.0, jump_by_s=-50.0))
    assert scenario.truth(0.0).sim_time_s == 100.0
    assert scenario.truth(1.5).sim_time_s == 101.5
    assert (scenario.truth(1.999).epoch, scenario.truth(2.0).epoch) == (0, 1)
    assert scenario.truth(3.0).sim_time_s == pytest.approx(53.0)
    # The vehicles keep flying: only the clock jumps.
    assert scenario.truth(3.0).ego == ORBIT.truth(3.0).ego


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start_s": -1.0}, "start_s"),
        ({"jump_at_s": 1.0, "jump_by_s": 0.0}, "jump_by_s"),
        ({"jump_at_s": 1.0, "jump_by_s": -5.0}, "stay >= 0"),
        ({"jump_at_s": math.nan, "jump_by_s": 1.0}, "jump_at_s"),
    ],
)
def test_a_bad_clock_is_refused_by_name(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SimTime(**kwargs)


def test_unknown_scenarios_and_copters_are_refused() -> None:
    with pytest.raises(ValueError, match="orbit, approach, track"):
        build_scenario("loop")
    with pytest.raises(ValueError, match="ego copter"):
        build_scenario("orbit", ego_id=449)
    assert [v.copter_id for v in build_scenario("track", ego_id=7).vehicles] == [7, 8, 9]


@given(times)
def test_bearings_agree_with_fusions_camera_model(t: float) -> None:
    truth = ORBIT.truth(t, SIM_CAMERA)
    (view, bystander) = truth.views
    assert view.copter_id == 2 and bystander.copter_id == 3
    ego, target = truth.ego.state, truth.target(2).state
    # The NED bearing is the line of sight from the camera (at the body origin here).
    los = [b - a for a, b in zip(ego.position_ned_m, target.position_ned_m, strict=True)]
    assert view.range_m == pytest.approx(math.hypot(*los))
    assert view.bearing_ned == pytest.approx([c / view.range_m for c in los])
    assert quat_rotate(ego.quaternion_wxyz, view.bearing_frd) == pytest.approx(view.bearing_ned)
    if view.pixel_uv is not None:
        # Back through fusion: the pixel's ray in camera axes, then the board units' ray.
        assert CAMERA.ray_camera(*view.pixel_uv) == pytest.approx(view.bearing_camera, abs=1e-9)
        assert view.board_xy is not None
        ray = CAMERA.bearing_camera(*view.board_xy)
        assert ray == pytest.approx(view.bearing_camera, abs=1e-9)
    if not spinning(t):
        # Nose on the target and the camera pitched down 45°: it is near the image's middle.
        assert view.in_view
        assert view.pixel_uv is not None
        assert abs(view.pixel_uv[0] - CAMERA.cx_px) < 1e-4
        assert abs(view.pixel_uv[1] - CAMERA.cy_px) < 40


def test_the_target_leaves_the_image_during_a_spin() -> None:
    middle = ORBIT.truth(8.0 + SPIN_S / 2, SIM_CAMERA).views[0]
    assert not middle.in_view
    assert ORBIT.truth(8.0 + SPIN_S + 0.5, SIM_CAMERA).views[0].in_view
    assert ORBIT.truth(5.0).views == ()  # no camera, no bearings


def test_the_truth_serialises_every_vehicle() -> None:
    record = ORBIT.truth(1.0, SIM_CAMERA).to_dict()
    assert record["type"] == "truth" and record["t_s"] == 1.0
    assert record["ego"]["copter_id"] == 1
    assert [t["copter_id"] for t in record["targets"]] == [2, 3]
    assert record["views"][0]["in_view"] is True
    assert len(record["ego"]["quaternion_wxyz"]) == 4


@pytest.mark.parametrize(
    ("speed", "turn_deg_s"), [(2.0, 0.0), (5.0, 33.7), (3.0, -10.0), (0.0, 5.0)]
)
def test_the_track_scenario_takes_the_target_speed_and_turn_rate(speed, turn_deg_s) -> None:
    """The target's speed and turn rate, measured from its positions (finite differences over
    a second), are the ones asked for; the ego still follows 10 m behind, 10 m up."""
    scenario = build_scenario("track", target=TargetMotion(speed, turn_deg_s))
    target = scenario.others[0].track
    dt = 0.01
    for t in (0.5, 3.0, 7.5):
        a, b, c = (np.array(target.position_ned_m(t + k * dt)) for k in (-1, 0, 1))
        v1, v2 = (b - a) / dt, (c - b) / dt
        assert np.linalg.norm(v1) == pytest.approx(speed, abs=1e-4)  # a chord, not the arc
        if speed > 0:
            heading = math.atan2(v2[1], v2[0]) - math.atan2(v1[1], v1[0])
            assert math.degrees(heading) / dt == pytest.approx(turn_deg_s, abs=1e-3)
        ego = np.array(scenario.ego.track.position_ned_m(t))
        assert ego[2] - b[2] == pytest.approx(-10.0)


def test_target_motion_is_only_for_track_and_checked() -> None:
    with pytest.raises(ValueError, match="only for the track scenario"):
        build_scenario("orbit", target=TargetMotion())
    with pytest.raises(ValueError, match="target speed"):
        TargetMotion(-1.0, 0.0)
    with pytest.raises(ValueError, match="target turn rate"):
        TargetMotion(3.0, 400.0)
