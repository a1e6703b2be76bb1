"""The pose rules of issue 17 in the world model: no blending across a jump, conflicts and
jumps hold with their own reasons and end, a clock in its lock period places nothing, and a
sensor's new clock epoch drops its older readings."""

from __future__ import annotations

import math

from hypothesis import assume, given
from hypothesis import strategies as st

from fusion import LaserRange, SensorMount, SourceConflict, WorldConfig
from fusion import geometry as g
from fusion.ranging import Ranger
from fusion.timeline import Added, JumpBounds, PoseHistory
from gizmo_core import Decision, HoldReason
from gizmo_core.clock import ClockStatus
from tests.support.fusion_inputs import MS, observation, pose, up, world, yaw_quat

NORTH_1_M_S = (1.0, 0.0, 0.0)


def flying(w, start_ms: int, end_ms: int, *, east_m: float = 0.0, yaw_deg: float = 0.0) -> None:
    for t in range(start_ms, end_ms + 1, 10):
        w.apply(
            pose(
                t * MS,
                position=(t / 1000.0, east_m, -10.0),
                velocity=NORTH_1_M_S,
                q=yaw_quat(yaw_deg),
            )
        )


def test_a_jump_breaks_the_history_and_holds_then_proceeds_in_the_new_stretch():
    """Issue 17 item 4: the vehicle jumped 4 m and 60° with velocity and rates contradicting
    it, and the poses either side were blended (22° and 5.6 m off)."""
    w = world(jump_hold_ms=200.0)
    w.apply(up(0))
    flying(w, 0, 500)
    w.apply(observation(505 * MS, rx_ns=530 * MS))  # waits for its bracket
    flying(w, 510, 700, east_m=4.0, yaw_deg=60.0)  # the jump, then a new stretch
    s = w.snapshot(701 * MS)
    assert w.stats()["pose_jumps"] == 1
    target = s.target("1:1:1")
    assert target.verdict is Decision.HOLD and HoldReason.POSE_GAP in target.reasons
    assert target.position_ned_m is None  # never a blend of the two stretches
    assert HoldReason.POSE_JUMP in s.reasons and s.sources["pose"].state.value == "FAULT"
    w.apply(observation(690 * MS, rx_ns=705 * MS, ident=2))
    assert HoldReason.POSE_JUMP in w.snapshot(706 * MS).target("1:1:2").reasons
    flying(w, 710, 800, east_m=4.0, yaw_deg=60.0)
    w.apply(observation(780 * MS, rx_ns=790 * MS, ident=3))
    s = w.snapshot(801 * MS)
    assert (s.selected, s.verdict) == ("1:1:3", Decision.PROCEED)  # the hold ended
    assert s.vehicle.position_ned_m[1] == 4.0


def test_a_pose_that_contradicts_both_neighbours_is_dropped_not_inserted():
    h = PoseHistory(bounds=JumpBounds())
    for t in (0, 10, 20):
        assert h.add(pose(t * MS, position=(t / 1000, 0.0, 0.0), velocity=NORTH_1_M_S)) in (
            Added.APPENDED,
        )
    liar = pose(15 * MS, position=(0.015, 30.0, 0.0), velocity=NORTH_1_M_S)
    assert h.add(liar) is Added.CONFLICT
    assert len(h) == 3 and h.interpolate(15 * MS).position_ned_m[1] == 0.0


def test_a_velocity_glitch_after_a_gap_is_a_jump_never_extrapolated_from():
    """Issue 28 finding 7: after a 140 ms gap (wider than max_gap), a pose at the right place
    says 200 m/s; a capture just after it was extrapolated with that velocity (1-1.9 m off)
    and PROCEEDed."""
    w = world(max_extrapolation_ms=10.0)
    w.apply(up(0))
    flying(w, 0, 500)
    w.apply(pose(640 * MS, position=(0.64, 0.0, -10.0), velocity=(200.0, 0.0, 0.0)))
    w.apply(observation(645 * MS, rx_ns=650 * MS))
    s = w.snapshot(671 * MS)  # its wait is over: placed past the newest pose, or refused
    assert w.stats()["pose_jumps"] == 1
    target = s.target("1:1:1")
    assert target.verdict is Decision.HOLD and HoldReason.POSE_JUMP in target.reasons


def test_an_honest_pose_after_a_gap_is_no_jump():
    h = PoseHistory(bounds=JumpBounds())
    for t in (0, 10, 20, 300, 310):  # a 280 ms gap, flying 1 m/s north throughout
        assert h.add(pose(t * MS, position=(t / 1000, 0.0, 0.0), velocity=NORTH_1_M_S)) in (
            Added.APPENDED,
        )


@given(
    speed=st.floats(0.0, 40.0),
    accel=st.floats(-20.0, 20.0),
    yaw_rate=st.floats(-600.0, 600.0),
    period_ms=st.sampled_from([1, 4, 10, 20, 33, 50, 100, 150, 400]),
    reported=st.booleans(),
    late_us=st.lists(st.integers(0, 999), min_size=30, max_size=30),
)
def test_honest_flight_within_the_bounds_never_jumps(
    speed, accel, yaw_rate, period_ms, reported, late_us
):
    """Honest poses, with or without a velocity, each stamped in whole milliseconds (up to
    1 ms before the instant its numbers describe, as ``time_boot_ms`` truncates), never
    faster than the speed bound."""
    assume(max(abs(speed + accel * 29 * period_ms / 1000), speed) <= JumpBounds().speed_m_s)
    h = PoseHistory(bounds=JumpBounds())
    outcomes = []
    for k in range(30):
        t = k * period_ms / 1000 + late_us[k] / 1e6  # the numbers' instant
        north = speed * t + 0.5 * accel * t * t
        v = (speed + accel * t, 0.0, 0.0) if reported else None
        q = g.quat_from_euler_zyx(0.0, 0.0, math.radians(yaw_rate * t))
        outcomes.append(
            h.add(pose(k * period_ms * MS, position=(north, 0.0, -5.0), velocity=v, q=q))
        )
    assert Added.JUMP not in outcomes and Added.CONFLICT not in outcomes


def test_a_source_conflict_holds_pose_conflict_for_its_hold_and_then_ends():
    w = world(conflict_hold_ms=300.0)
    w.apply(up(0))
    flying(w, 0, 200)
    w.apply(SourceConflict(150 * MS, "pose", "state from 127.0.0.1:2 while 127.0.0.1:1 sends"))
    w.apply(observation(190 * MS, rx_ns=200 * MS))
    s = w.snapshot(201 * MS)
    assert s.verdict is Decision.HOLD and HoldReason.POSE_CONFLICT in s.reasons
    flying(w, 210, 520)
    w.apply(observation(500 * MS, rx_ns=510 * MS, ident=2))
    s = w.snapshot(521 * MS)
    assert (s.selected, s.verdict) == ("1:1:2", Decision.PROCEED)


def test_poses_of_a_locking_clock_are_not_placed_and_hold_clock_not_locked():
    w = world()
    w.apply(up(0))
    for t in range(0, 300, 10):
        w.apply(pose(t * MS, velocity=NORTH_1_M_S, clock_status=ClockStatus.CONVERGING))
    w.apply(observation(290 * MS, rx_ns=295 * MS))
    s = w.snapshot(296 * MS)
    assert s.vehicle is None and s.verdict is Decision.HOLD
    assert HoldReason.CLOCK_NOT_LOCKED in s.reasons
    assert HoldReason.NO_POSE not in s.target("1:1:1").reasons  # the red team's FAIL 5
    assert w.stats()["poses_locking"] == 30
    flying(w, 300, 400)
    w.apply(observation(390 * MS, rx_ns=395 * MS, ident=2))
    assert w.snapshot(401 * MS).verdict is Decision.PROCEED


def test_a_sensors_new_clock_epoch_drops_its_older_readings_only():
    ranger = Ranger(WorldConfig())
    mount = SensorMount()
    ranger.add(LaserRange(100 * MS, 5.0, mount, sensor_id=1, epoch=0))
    ranger.add(LaserRange(100 * MS, 6.0, mount, sensor_id=2, epoch=0))
    ranger.add(LaserRange(200 * MS, 5.5, mount, sensor_id=1, epoch=1))
    kept = [(r.sensor_id, r.epoch, r.distance_m) for r in ranger.lasers]
    assert kept == [(2, 0, 6.0), (1, 1, 5.5)]
