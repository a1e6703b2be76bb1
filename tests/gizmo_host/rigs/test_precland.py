"""The stand-in autopilot's precision landing (``gizmo_host.rigs.autopilot.landing_vehicle``), on
its own clock with hand-made LANDING_TARGETs; and one closed loop through the host (realtime)."""

from __future__ import annotations

import asyncio
import itertools
import math
from pathlib import Path

import pytest

from fusion.geometry import quat_angle_rad, quat_rotate_inverse
from gizmo_host.cli.main import main
from gizmo_host.rigs.autopilot.landing_vehicle import Phase, PrecLandConfig, PrecLandVehicle
from gizmo_host.rigs.autopilot.standin import ReceivedTarget
from gizmo_host.rigs.board.faults import FaultTimeline, parse_fault
from gizmo_host.rigs.demo.precland import PrecLandSettings, play, settings_for_seed

MS = 1_000_000
PAD = (2.0, -1.0, 0.0)


def _px4(host_ns: int, point=PAD, age_ms: float = 30.0) -> ReceivedTarget:
    fields = {
        "time_usec": round((host_ns - age_ms * MS) / 1000),
        "frame": 1,
        "position_valid": 1,
        "x": point[0],
        "y": point[1],
        "z": point[2],
    }
    return ReceivedTarget(host_ns, host_ns, fields)  # boot clock = host clock here


def _fly(vehicle: PrecLandVehicle, until_ns: int, now_ns: int, targets: bool) -> int:
    step = round(vehicle.config.step_s * 1e9)
    while now_ns < until_ns and vehicle.phase is not Phase.LANDED:
        if targets:
            vehicle.on_target(_px4(now_ns))
        vehicle.step(now_ns)
        now_ns += step
    return now_ns


def test_it_lands_on_the_pad_while_targets_arrive_and_the_attitude_never_steps() -> None:
    vehicle = PrecLandVehicle(PrecLandConfig(pad_ned_m=PAD), 0)
    _fly(vehicle, 60_000 * MS, 0, targets=True)
    summary = vehicle.summary()
    assert summary["landed"] and summary["landing_error_m"] < 0.01
    assert summary["stale_descents"] == 0 and summary["holds"] == 0
    # ~2.2 m at <= 1.5 m/s, then 7.7 m at 0.7 m/s: between 12 and 20 s
    assert 12 < summary["time_to_land_s"] < 20
    q = [vehicle.truth(t * 20 * MS).quaternion_wxyz for t in range(600)]
    steps = [math.degrees(quat_angle_rad(a, b)) for a, b in itertools.pairwise(q)]
    assert max(steps) < 3.0  # the pose stream's jump rule allows 16° in 20 ms


def test_the_attitude_turns_at_a_finite_rate_across_every_controller_step() -> None:
    """A command that stepped would step the acceleration and the tilt with it (by up to 2°
    at once, which no airframe does, and a pose interpolated across such a step is off by as
    much): across each step's instant, 1 ms apart, the attitude turns less than 0.1°."""
    vehicle = PrecLandVehicle(PrecLandConfig(pad_ned_m=PAD, pad_velocity_ned_m_s=(1.5, -1.0, 0)), 0)
    step = round(vehicle.config.step_s * 1e9)
    now, turns = 0, []
    while now < 8_000 * MS:
        vehicle.on_target(_px4(now, vehicle.pad_at(now - 30 * MS)))
        vehicle.step(now)
        before, after = vehicle.truth(now - MS // 2), vehicle.truth(now + MS // 2)
        turns.append(math.degrees(quat_angle_rad(before.quaternion_wxyz, after.quaternion_wxyz)))
        now += step
    tilt = max(quat_angle_rad(vehicle.truth(t * step).quaternion_wxyz, (1.0, 0.0, 0.0, 0.0))
               for t in range(160))  # fmt: skip
    assert math.degrees(tilt) > 5.0  # it manoeuvres hard
    assert max(turns) < 0.1, max(turns)


def test_without_fresh_targets_it_holds_then_climbs_back_and_never_descends() -> None:
    config = PrecLandConfig(pad_ned_m=PAD)
    vehicle = PrecLandVehicle(config, 0)
    now = _fly(vehicle, 9_000 * MS, 0, targets=True)  # over the pad, descending
    assert vehicle.phase is Phase.DESCEND
    lost_ns, height = now, vehicle.height_m(now)
    # Targets keep coming, but captured 0.8 s ago: stale on the autopilot's clock.
    step = round(config.step_s * 1e9)
    while now < lost_ns + 2_500 * MS:
        vehicle.on_target(_px4(now, age_ms=800.0))
        vehicle.step(now)
        now += step
    assert vehicle.phase is Phase.HOLD and vehicle.counts["targets_unusable"] > 0
    # Descending until the last fresh target is target_timeout_s old, then the lag's braking.
    allowed_m = config.descent_m_s * (config.target_timeout_s + config.tau_s) + 0.02
    assert vehicle.height_m(now) >= height - allowed_m
    now = _fly(vehicle, lost_ns + 6_000 * MS, now, targets=False)
    assert vehicle.phase is Phase.SEARCH and vehicle.counts["climbs"] > 0
    assert vehicle.height_m(now) > height + 0.5  # climbing back to search altitude
    assert vehicle.counts["stale_descents"] == 0


def test_ardupilot_angles_become_the_pad_with_the_vehicles_own_attitude() -> None:
    vehicle = PrecLandVehicle(PrecLandConfig(pad_ned_m=PAD), 0)
    _fly(vehicle, 1_500 * MS, 0, targets=True)  # accelerating: tilted
    now = 1_520 * MS
    truth = vehicle.truth(now)
    assert quat_angle_rad(truth.quaternion_wxyz, (1.0, 0.0, 0.0, 0.0)) > math.radians(1)
    p = truth.position_ned_m
    bx, by, bz = quat_rotate_inverse(
        truth.quaternion_wxyz, (PAD[0] - p[0], PAD[1] - p[1], PAD[2] - p[2])
    )
    fields = {
        "time_usec": now // 1000,
        "frame": 12,
        "position_valid": 0,
        "angle_x": math.atan2(by, bz),
        "angle_y": math.atan2(-bx, bz),
    }
    before = vehicle.counts["targets_used"]
    vehicle.estimate = None
    vehicle.on_target(ReceivedTarget(now, now, fields))
    assert vehicle.counts["targets_used"] == before + 1
    assert vehicle.estimate is not None and math.dist(vehicle.estimate, PAD) < 1e-6
    garbage = {**fields, "angle_x": 1.15e18}  # MAVROS #1363
    vehicle.on_target(ReceivedTarget(now, now, garbage))
    assert vehicle.counts["targets_unusable"] == 1


def test_precland_demo_options_are_checked_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--scenario", "precland", "--protocol"]) == 2
    assert main(["demo", "--scenario", "precland", "--duration", "0"]) == 2
    assert main(["demo", "--scenario", "preclnd"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and "precland" in err[2] and not any("Traceback" in e for e in err)


LOOP = PrecLandConfig(
    start_ned_m=(0.0, 0.0, -3.0), pad_ned_m=(0.8, 0.5, 0.0), search_alt_m=3.0, descent_m_s=1.0
)


@pytest.mark.realtime
@pytest.mark.long
def test_the_closed_loop_lands_within_bound_with_and_without_faults(tmp_path: Path) -> None:
    """The host's LANDING_TARGETs alone bring the stand-in's vehicle down onto the pad; the
    board's silence and hang-up mid-descent stop the descent (no target: no descent)."""
    faults = FaultTimeline(
        (
            parse_fault({"kind": "silence", "at_s": 2.5, "duration_s": 0.8}, "silence"),
            parse_fault({"kind": "hangup", "at_s": 3.6, "duration_s": 0.4}, "hangup"),
        ),
        7,
    )

    async def both() -> list[dict]:  # side by side: the rigs share nothing but the loop
        runs = []
        for timeline, name in ((FaultTimeline(), "clean"), (faults, "faults")):
            workdir = tmp_path / name
            workdir.mkdir()
            settings = PrecLandSettings(timeline, "px4", 1, LOOP)
            runs.append(play(settings, workdir, 30.0, asyncio.Event()))
        return list(await asyncio.gather(*runs))

    for summary, name in zip(asyncio.run(both()), ("clean", "faults"), strict=True):
        assert summary["landed"], summary
        assert summary["landing_error_m"] <= 0.10, summary
        assert summary["stale_descents"] == 0
        sent = summary["host"]["landing_target"]
        assert sent["sent"] == summary["autopilot"]["landing_targets"] > 20
        if name == "faults":
            assert summary["holds"] >= 1 and sent["held"]["not_proceed"] > 0


def test_a_moving_pad_is_followed_at_its_velocity_and_no_target_stops_the_descent() -> None:
    """On its own clock: a pad driving at 2 m/s, seen 30 ms late; the vehicle lands on where
    the pad is at touchdown (its truth). Targets that stop arriving stop the descent after
    ``target_timeout_s``; a ``position_valid = 0`` message (PX4 would fuse it as an IR-LOCK
    report) is counted and changes nothing."""
    velocity = (1.2, -1.6, 0.0)
    config = PrecLandConfig(pad_ned_m=PAD, pad_velocity_ned_m_s=velocity, max_speed_m_s=4.0)
    vehicle = PrecLandVehicle(config, 0)
    step = round(config.step_s * 1e9)
    now = 0
    while now < 6_000 * MS:
        capture = now - 30 * MS
        vehicle.on_target(_px4(now, vehicle.pad_at(capture)))
        vehicle.step(now)
        now += step
    assert vehicle.phase is Phase.DESCEND
    invalid = dict(_px4(now)._asdict()["fields"], position_valid=0, x=0.0, y=0.0, z=0.0)
    used = vehicle.counts["targets_used"]
    vehicle.on_target(ReceivedTarget(now, now, invalid))
    assert vehicle.counts["invalid_positions"] == 1 and vehicle.counts["targets_used"] == used
    silent_until = now + round(config.target_timeout_s * 1e9) + 10 * step
    while now < silent_until:  # no target: the descent stops once the timeout has passed
        vehicle.step(now)
        now += step
    height, descents = vehicle.height_m(now), vehicle.counts["descent_steps"]
    assert vehicle.phase is Phase.HOLD
    for _ in range(10):
        vehicle.step(now)
        now += step
    assert vehicle.counts["descent_steps"] == descents  # no descent commanded
    assert vehicle.height_m(now) >= height - config.descent_m_s * config.tau_s - 1e-6
    while vehicle.phase is not Phase.LANDED and now < 60_000 * MS:
        vehicle.on_target(_px4(now, vehicle.pad_at(now - 30 * MS)))
        vehicle.step(now)
        now += step
    summary = vehicle.summary()
    assert summary["landed"] and summary["landing_error_m"] <= 0.05, summary
    assert summary["stale_descents"] == 0


@pytest.mark.realtime
@pytest.mark.long
def test_the_closed_loop_lands_on_a_pad_driving_at_2_m_s(tmp_path: Path) -> None:
    """Through the host (tracking its estimate): the vehicle, steered by LANDING_TARGET alone,
    lands on the moving pad; its manoeuvres never push the pad out of its own track's gate."""
    # Seed 6 manoeuvres hard on its approach: with a stand-in whose tilt stepped 2° at each
    # controller step, its own detections fell out of the track's gate there (a HOLD).
    settings = settings_for_seed(FaultTimeline(), 6, "px4", pad_speed_m_s=2.0)
    summary = asyncio.run(play(settings, tmp_path, 40.0, asyncio.Event()))
    assert summary["landed"] and summary["landing_error_m"] <= 0.15, summary
    assert summary["pad_speed_m_s"] == 2.0
    assert summary["stale_descents"] == 0
    # Once it PROCEEDs, a clean run HOLDs only when the data is late (the rig is one process:
    # on a starved machine its poses and frames can be), never for the estimator alone (a
    # detection out of its own track's gate: tentative, coasting). And the vehicle descends
    # through a HOLD only as its autopilot does, until its target timeout (0.5 s at 20 Hz).
    holds = summary["world_holds"]
    assert not [why for why in holds if set(why.split("+")) <= {"tentative", "coasting"}]
    assert summary["descents_on_hold"] <= 10 * sum(holds.values())
    sent = summary["host"]["landing_target"]
    assert sent["sent"] == summary["autopilot"]["landing_targets"] > 20
