"""A box cut off by the image's edge, through the capture replay (``gizmo-host replay --offline``).

The capture is the generator's world case (the board and the RflySim stand-in: the drone orbits
a parked car, its camera on the car), with the board's box of the car cut by one edge of the
image for part of the run, as a detector reports a target that runs out of the image: the box
ends at the edge, and its centre moves inwards of where the target goes on. Red team rt37: a
ground target swept out of view PROCEEDed 2.4 m off with a covariance of 5 cm, every line while
its box touched the border. Every PROCEED ``world`` line is judged against the car's true
centre, from the scenario.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from gizmo_host.rigs.rflysim import build_scenario
from gizmo_host.wire.results import NormBox
from tests.captures import generate

CAR = 2  # the scenario's parked car
CUT_FROM_S, CUT_UNTIL_S = 1.2, 2.0  # the car's box is cut by an edge in this part of the run
DURATION_S = 3.5
TOLERANCE_M = 2.0  # an honest box centre of the car is placed within this (the lidar tests')


def cut(box: NormBox, edge: str) -> NormBox:
    """``box`` as a detector reports it when the target runs past ``edge``: the side toward
    that edge moved onto it (the target goes on beyond), the other side kept."""
    left, right = box.center_x - box.width / 2, box.center_x + box.width / 2
    top, bottom = box.center_y - box.height / 2, box.center_y + box.height / 2
    if edge == "right":
        right = 1000
    elif edge == "left":
        left = -1000
    elif edge == "top":
        top = -1000
    else:
        bottom = 1000
    centre = (round((left + right) / 2), round((top + bottom) / 2))
    return NormBox(*centre, round(right - left), round(bottom - top))


def replay(edge: str) -> list[dict[str, Any]]:
    """The replay's lines for the world case with the car's box cut by ``edge`` from
    ``CUT_FROM_S`` to ``CUT_UNTIL_S``."""

    def boxes(capture_ns: int, box: NormBox) -> NormBox:
        t_s = (capture_ns - generate.START_NS) / 1e9
        return cut(box, edge) if CUT_FROM_S <= t_s < CUT_UNTIL_S else box

    return generate.world_case_lines("truncated boxes", DURATION_S, boxes)


def at_s(ns: int) -> float:
    return (ns - generate.START_NS) / 1e9


@pytest.mark.parametrize("edge", ["right", "top"])
def test_a_box_cut_by_the_edge_never_proceeds_and_the_hold_ends_after_it(edge: str) -> None:
    lines = replay(edge)
    scenario = build_scenario("orbit", time=generate.CASES["clean"].sim_time)
    car = np.array(scenario.truth(0.0).target(CAR).state.position_ned_m)
    world = [w for w in lines if w["type"] == "world"]
    placed = [
        (at_s(t["capture_ns"]), math.dist(t["position_ned_m"], car), w)
        for w in world
        if w["verdict"] == "PROCEED"
        for t in w["targets"]
        if t["verdict"] == "PROCEED"
    ]
    assert len(placed) >= 10, "the rig's control: the car is placed outside the cut"
    assert max(off for _, off, _ in placed) < TOLERANCE_M
    # Nothing measured while the box was cut PROCEEDs (its capture in the cut)...
    assert [p[:2] for p in placed if CUT_FROM_S <= p[0] < CUT_UNTIL_S] == []
    # ... each line then says why: the target is truncated.
    during = [w for w in world if CUT_FROM_S + 0.1 <= at_s(w["host_ns"]) < CUT_UNTIL_S]
    assert during and all(w["verdict"] == "HOLD" for w in during)
    assert all("truncated" in t["reasons"] for w in during for t in w["targets"])
    # The HOLD ends once the box is whole again: a few frames confirm the track again.
    after = [s for s, _, _ in placed if s >= CUT_UNTIL_S]
    assert after and min(after) < CUT_UNTIL_S + 0.3, after[:3]
