"""A camera on a turning gimbal whose status comes seldom, through the capture replay.

The generator's world case (the drone orbits a parked car) with the camera on the gimbal of
RflySim's built-in Config.json: the gimbal sweeps its pitch ±12° at up to 55°/s (under the 60°/s
limit, ``gimbal_max_rate_deg_s``), its status on port 20006 at 10 Hz (the RflySim stand-in's
default), each status the true attitude when sent. The board's boxes are drawn through the
gimbal's true attitude at each capture (``hil_geometry``'s pinhole: the truth, never fusion's
camera model). Red team rt41: a capture after the newest status took that status's angles as
they were, up to 100 ms old: PROCEEDs 2.2 m from the car (1.5 m of it the gimbal's turn) at a
claimed σ of 0.08 m. A capture after the newest status of a turning gimbal now waits for the
next one, and is placed between the two.
"""

from __future__ import annotations

import functools
import math
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from gizmo_host.app.host_config import StoreConfig
from gizmo_host.app.world_config import RflySimConfig, WorldSetup, resolve_world
from gizmo_host.rigs.board.detections import TargetInView
from gizmo_host.rigs.board.projection import project_box
from gizmo_host.rigs.rflysim import build_scenario
from gizmo_host.rigs.rflysim.sensorset import builtin_config_text
from gizmo_host.stream.store import parse_selector
from hil_geometry.pinhole import Pinhole
from rfly_link import messages as m
from tests.captures import generate

CAR = 2  # the orbit scenario's parked car
DURATION_S = 6.0
SWEEP_DEG, PEAK_DEG_S = 12.0, 55.0
# A box centre of the car is placed within this of its centre with a still gimbal (the
# documented offset of a standing target: 0.94-1.02 m here, rt41); before, 2.23 m.
TOLERANCE_M = 1.3
Attitude = Callable[[float], tuple[float, float, float]]  # seconds -> (roll, pitch, yaw) deg


def sweep(t_s: float) -> tuple[float, float, float]:
    omega = PEAK_DEG_S / SWEEP_DEG  # rad/s: the peak rate is the amplitude times it
    return (0.0, -45.0 + SWEEP_DEG * math.sin(omega * t_s), 0.0)


def sweep_then_still(t_s: float) -> tuple[float, float, float]:
    return sweep(min(t_s, 3.0))


@functools.cache
def _config_path() -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(builtin_config_text())
    return f.name


def gimbal_setup() -> WorldSetup:
    camera = {"rflysim_sensor": 1, "on_gimbal": True}  # the built-in Config.json's box camera
    rflysim = RflySimConfig(copter_id=1, config=_config_path())
    setup = resolve_world(
        camera, generate.WORLD, rflysim, StoreConfig(), parse_selector(generate.SELECT)
    )
    assert setup is not None and setup.camera.on_gimbal
    return setup


Statuses = list[tuple[float, tuple[float, float, float]]]  # (seconds, the angles it reports)


def every(hz: float, attitude: Attitude, until_s: float = DURATION_S) -> Statuses:
    return [(k / hz, attitude(k / hz)) for k in range(int(until_s * hz))]


def replay(
    attitude: Attitude, status_hz: float, status_until_s: float = DURATION_S
) -> tuple[list[dict[str, Any]], np.ndarray]:
    return replay_statuses(attitude, every(status_hz, attitude, status_until_s))


def replay_statuses(
    attitude: Attitude, statuses: Statuses
) -> tuple[list[dict[str, Any]], np.ndarray]:
    case = generate.Case("gimbal turns", DURATION_S, world=True)
    setup = gimbal_setup()
    scenario = build_scenario("orbit", time=case.sim_time)
    extents = {v.copter_id: tuple(x / 2 for x in v.size_m) for v in scenario.others}
    c = setup.camera

    def seen(capture_ns: int) -> list[TargetInView]:
        t_s = (capture_ns - generate.START_NS) / 1e9
        truth = scenario.truth(t_s)
        camera = Pinhole.from_table(
            c.width_px, c.height_px, hfov_deg=c.hfov_deg, vfov_deg=c.vfov_deg, fx_px=c.fx_px,
            fy_px=c.fy_px, cx_px=c.cx_px, cy_px=c.cy_px, mount_rpy_deg=attitude(t_s),
            mount_position_frd_m=c.mount_position_frd_m,
        )  # fmt: skip
        pose = camera.pose(truth.ego.state.position_ned_m, truth.ego.state.quaternion_wxyz)
        out = []
        for target in truth.targets:
            size = extents[target.copter_id]
            box = project_box(camera, pose, target.state.position_ned_m, size)
            if box is not None:
                out.append(TargetInView(str(target.copter_id), box, 80))
        return out

    recording = generate.Recording()
    generate.board_run(case, recording, seen=seen)
    generate.sim_run(case, recording, setup)
    for t_s, angles in statuses:
        status = m.GimbalStatus(
            seq_id=1, type_id=30, target_copter=1, data_width=640, data_height=480,
            camera_fov_deg=90.0, sensor_ang_eular=angles,
        )  # fmt: skip
        t_ns = generate.START_NS + round(t_s * 1e9) + generate.NET_NS
        recording.add(t_ns, _datagram(status.encode(), t_ns))
    car = np.array(scenario.truth(0.0).target(CAR).state.position_ned_m)
    return generate.replayed(recording, setup), car


def _datagram(data: bytes, t_ns: int) -> Callable[[Any], object]:
    return lambda w: w.datagram(20006, "127.0.0.1", ("127.0.0.1", 47003), data, t_ns)


def placed(lines: list[dict[str, Any]], car: np.ndarray) -> list[tuple[float, float]]:
    """(host seconds, metres from the car) of each target PROCEEDing on a world line."""
    return [
        ((w["host_ns"] - generate.START_NS) / 1e9, math.dist(t["position_ned_m"], car))
        for w in lines
        if w["type"] == "world" and w["verdict"] == "PROCEED"
        for t in w["targets"]
        if t["verdict"] == "PROCEED"
    ]


def test_a_turning_gimbal_with_a_status_at_10_hz_places_where_the_target_is() -> None:
    lines, car = replay(sweep, 10.0)
    proceeds = placed(lines, car)
    assert len(proceeds) > 20  # it PROCEEDs through the sweep, or the test says nothing
    assert max(off for _, off in proceeds) < TOLERANCE_M, sorted(p[1] for p in proceeds)[-5:]


def test_the_hold_of_a_turn_ends_once_the_gimbal_is_still() -> None:
    """It sweeps for 3 s, then holds still, heard at 10 Hz: the captures after its newest
    status need no wait then, and it PROCEEDs on."""
    lines, car = replay(sweep_then_still, 10.0)
    proceeds = placed(lines, car)
    assert [t for t, _ in proceeds if t > 3.5]
    assert max(off for _, off in proceeds) < TOLERANCE_M


def test_statuses_that_stop_mid_turn_hold_and_never_place_by_the_last() -> None:
    lines, car = replay(sweep, 10.0, status_until_s=2.0)
    proceeds = placed(lines, car)
    assert [t for t, _ in proceeds if t < 2.0]  # it PROCEEDed before they stopped
    assert not [t for t, _ in proceeds if t > 2.2]
    held = [
        w["reasons"]
        for w in lines
        if w["type"] == "world" and (w["host_ns"] - generate.START_NS) / 1e9 > 2.2
    ]
    assert held and all("pose_gap" in r or "stale" in r for r in held), held[:3]


def test_a_status_sent_twice_does_not_make_a_turning_gimbal_still() -> None:
    """Red team rt42: each status sent twice 1 ms apart made the rate between the two 0, and
    PROCEEDs were 2.23 m off again at a claimed σ of 0.084 m with the first fix. (A sender
    that repeats stale angles, faster than they change, is believed: a documented limit.)"""
    twice = [(t + dt, angles) for t, angles in every(10.0, sweep) for dt in (0.0, 0.001)]
    lines, car = replay_statuses(sweep, twice)
    proceeds = placed(lines, car)
    assert len(proceeds) > 20
    assert max(off for _, off in proceeds) < TOLERANCE_M, sorted(p[1] for p in proceeds)[-3:]


def test_a_slow_pan_reported_in_steps_proceeds() -> None:
    """Red team rt43: a pan at 1°/s, its status at 100 Hz rounded to 0.1° (a step every
    100 ms), HOLDs for as long as it panned under the second fix (0 PROCEEDs in 6 s)."""

    def pan(t_s: float) -> tuple[float, float, float]:
        return (0.0, -45.0 + 1.0 * t_s, 0.0)

    steps = [(t, (0.0, round(angles[1], 1), 0.0)) for t, angles in every(100.0, pan)]
    lines, car = replay_statuses(pan, steps)
    proceeds = placed(lines, car)
    assert len([t for t, _ in proceeds if t > 1.0]) > 10
    assert max(off for _, off in proceeds) < TOLERANCE_M


def test_a_still_gimbal_heard_at_4_hz_proceeds() -> None:
    """Red team rt42: with the first version a still gimbal whose status came every 250 ms
    HOLDs `pose_gap` for good (before it: 25 PROCEEDs)."""
    lines, car = replay(lambda _t: (0.0, -45.0, 0.0), 4.0)
    proceeds = placed(lines, car)
    assert len([t for t, _ in proceeds if t > 1.0]) > 10
    assert max(off for _, off in proceeds) < TOLERANCE_M
