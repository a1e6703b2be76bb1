"""A HOLD names the break it holds for: a silence is not a hang-up.

The generator's world case (the drone orbits a parked car, its camera on the car) through the
capture replay (``gizmo-host replay --offline``), the board falling silent for 1.5 s with its
port open, or its port hanging up for 0.6 s. Red team rt40: in the silence every world line
said ``link_down`` (a target read before the silence, and the line itself) although the link
went UP -> SILENT -> UP and never down: a consumer that tells a reboot's hang-up from a
stalled detector was told the wrong one.
"""

from __future__ import annotations

from typing import Any

import pytest

from gizmo_host.rigs.board.faults import Fault, FaultKind
from tests.captures import generate

START_S, LENGTH_S = 1.0, 1.5
UP_BY_S = 0.5  # the link is up and the car PROCEEDs by then (asserted)
DURATION_S = 4.0


def replay(fault: Fault) -> list[dict[str, Any]]:
    case = generate.Case("link reasons", DURATION_S, (fault,), world=True)
    setup = generate.world_setup(case)
    recording = generate.Recording()
    generate.board_run(case, recording)
    generate.sim_run(case, recording, setup)
    return generate.replayed(recording, setup)


def seconds(line: dict[str, Any]) -> float:
    return (line["host_ns"] - generate.START_NS) / 1e9


def said(world: list[dict[str, Any]], reason: str) -> list[float]:
    """When a world line, or a target on it, gave ``reason``, once the link was first up and
    before the capture's end (before and after, the port is not open)."""
    return [
        seconds(w)
        for w in world
        if UP_BY_S < seconds(w) < DURATION_S
        and (reason in w["reasons"] or any(reason in t["reasons"] for t in w["targets"]))
    ]


def test_a_silence_is_named_a_silence_never_a_hang_up() -> None:
    lines = replay(Fault(FaultKind.SILENCE, at_s=START_S, duration_s=LENGTH_S))
    states = [line["state"] for line in lines if line["type"] == "link"]
    assert "SILENT" in states and states.count("DOWN") <= 1  # the one before the port opened
    world = [line for line in lines if line["type"] == "world"]
    assert any(w["verdict"] == "PROCEED" for w in world if UP_BY_S < seconds(w) < START_S)
    held = [
        seconds(w)
        for w in world
        if any("link_silent" in t["reasons"] for t in w["targets"])  # the car, read before
    ]
    assert held and min(held) >= START_S  # the silence was held, for the target read before
    assert said(world, "link_down") == []  # before: every line of the silence
    after = [seconds(w) for w in world if w["verdict"] == "PROCEED" and seconds(w) > min(held)]
    assert after and min(after) < START_S + LENGTH_S + 0.6  # and the HOLD ends


def test_a_hang_up_is_still_named_link_down() -> None:
    lines = replay(Fault(FaultKind.HANGUP, at_s=START_S, duration_s=0.6))
    assert "DOWN" in [line["state"] for line in lines if line["type"] == "link"][1:]
    world = [line for line in lines if line["type"] == "world"]
    down = said(world, "link_down")
    assert down and START_S <= min(down) < START_S + 0.6
    after = [seconds(w) for w in world if w["verdict"] == "PROCEED" and seconds(w) > max(down)]
    assert after  # the HOLD ends once the link is back


@pytest.mark.parametrize("kind", [FaultKind.SILENCE, FaultKind.HANGUP])
def test_no_target_read_before_the_break_proceeds_after_it(kind: FaultKind) -> None:
    """The barrier itself is unchanged: a PROCEED after the break is on a target read after
    it (its capture after the break's start)."""
    fault = Fault(kind, at_s=START_S, duration_s=LENGTH_S if kind is FaultKind.SILENCE else 0.6)
    world = [line for line in replay(fault) if line["type"] == "world"]
    late = [
        (t["capture_ns"] - generate.START_NS) / 1e9
        for w in world
        if seconds(w) > START_S + 0.3
        for t in w["targets"]
        if t["verdict"] == "PROCEED"
    ]
    assert late and min(late) > START_S
