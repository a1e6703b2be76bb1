"""CopterSim paused and resumed, through the capture replay (``gizmo-host replay --offline``).

The generator's world case (the drone orbits a parked car, its camera on the car), with the
simulation paused for a while: CopterSim goes on sending its frozen state at 100 Hz, the sim
time standing still, and the board sees the frozen scene. After the pause every input is
honest and on time again. Red team rt36: a pause that began while the state stream's clock
settled (the host started during a pause, or one within its first 250 ms, or a second pause
while the first one's new epoch settled) held ``clock_jump`` for good.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gizmo_host.rigs.rflysim import build_scenario, builders
from rfly_link import ports
from tests.captures import generate

CAR = 2  # the scenario's parked car
DURATION_S = 3.0
TOLERANCE_M = 2.0  # an honest box centre of the car is placed within this (the lidar tests')
Pauses = list[tuple[float, float]]  # (from s, for s)


def scene_time(pauses: Pauses) -> Callable[[float], float]:
    """Seconds from the start -> the scenario's time then: standing still in each pause."""

    def at(t_s: float) -> float:
        lost = 0.0
        for start_s, length_s in pauses:
            if t_s >= start_s + length_s:
                lost += length_s
            elif t_s >= start_s:
                return start_s - lost
        return t_s - lost

    return at


def replay(pauses: Pauses) -> list[dict[str, Any]]:
    case = generate.Case("sim pauses", DURATION_S, world=True)
    setup = generate.world_setup(case)
    scene_s = scene_time(pauses)
    recording = generate.Recording()
    generate.board_run(case, recording, scene_s=scene_s)
    scenario = build_scenario("orbit", time=case.sim_time)
    port = ports.coptersim_state_port(1)
    for k in range(round(DURATION_S * 100)):  # CopterSim's state, 100 Hz, frozen in a pause
        t_s = k / 100
        truth = scenario.truth(scene_s(t_s))
        state = builders.state_168(1, scenario.ego.vehicle_type, truth.ego.state, truth.sim_time_s)
        recording.datagram(generate.START_NS + round(t_s * 1e9) + generate.NET_NS, port,
                           state.encode())  # fmt: skip
    return generate.replayed(recording, setup)


@pytest.mark.parametrize(
    "pauses",
    [[(0.0, 0.5)], [(0.15, 0.3)], [(0.8, 0.2), (1.15, 0.2)], [(0.8, 0.3)]],
    ids=["host started in a pause", "a pause while locking", "two pauses", "one pause"],
)
def test_after_a_pause_the_world_proceeds_again_on_the_car(pauses: Pauses) -> None:
    lines = replay(pauses)
    scenario = build_scenario("orbit", time=generate.CASES["clean"].sim_time)
    car = np.array(scenario.truth(0.0).target(CAR).state.position_ned_m)
    end_s = max(start + length for start, length in pauses)
    world = [w for w in lines if w["type"] == "world"]
    placed = [
        ((w["host_ns"] - generate.START_NS) / 1e9, math.dist(t["position_ned_m"], car))
        for w in world
        if w["verdict"] == "PROCEED"
        for t in w["targets"]
        if t["verdict"] == "PROCEED"
    ]
    after = [at for at, _ in placed if at >= end_s]
    assert after, [
        (round((w["host_ns"] - generate.START_NS) / 1e9, 3), w["reasons"]) for w in world[-3:]
    ]
    assert min(after) < end_s + 0.6  # the clock locks again about 0.35 s after the pause
    assert max(off for _, off in placed) < TOLERANCE_M
