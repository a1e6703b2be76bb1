"""Judging a chain's output: errors against the truth, verdict timelines, counters per window."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from fusion.geometry import angle_between_rad
from gizmo_host.emulator.faults import Fault, FaultKind
from rfly_link.sim.views import target_view
from tests.hil.chain import Chain, host_counters, selected

World = dict[str, Any]


def fault_end_s(fault: Fault) -> float:
    """When a fault stops acting (its onset for one-off events)."""
    if fault.kind is FaultKind.RESET:
        return fault.at_s + fault.down_s
    return fault.at_s + fault.duration_s


def truth_errors(chain: Chain, world: World) -> tuple[float, float | None] | None:
    """(bearing error in degrees, 3D position error in metres or None) of the selected target
    against the truth at its capture time; None when nothing is located."""
    target = selected(world)
    if target is None or target["bearing_ned"] is None:
        return None
    t_s = (target["capture_ns"] - chain.sim_start_ns) / 1e9
    truth = chain.scenario.truth(t_s)
    true_position = truth.target(chain.target_id).state.position_ned_m
    view = target_view(chain.camera, truth.ego.state, chain.target_id, true_position)
    bearing = math.degrees(angle_between_rad(tuple(target["bearing_ned"]), view.bearing_ned))
    position = target["position_ned_m"]
    if position is None:
        return bearing, None
    return bearing, math.dist(position, true_position)


def measurements(chain: Chain, intervals: Iterable[tuple[float, float]]) -> list[World]:
    """PROCEED snapshots within ``intervals``, one per capture (a capture is published on
    every world tick until the next one; it counts once)."""
    out: dict[int, World] = {}
    for start_s, end_s in intervals:
        for world in chain.world_between(start_s, end_s):
            target = selected(world)
            if world["verdict"] == "PROCEED" and target is not None:
                out.setdefault(target["capture_ns"], world)
    return list(out.values())


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (``q`` in 0..100)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def first_world(
    chain: Chain, after_s: float, predicate: Callable[[World], bool], before_s: float = math.inf
) -> World | None:
    for world in chain.world_between(after_s, before_s):
        if predicate(world):
            return world
    return None


def holding(reason: str | None = None) -> Callable[[World], bool]:
    def check(world: World) -> bool:
        return world["verdict"] == "HOLD" and (reason is None or reason in world["reasons"])

    return check


def proceeding(world: World) -> bool:
    return bool(world["verdict"] == "PROCEED")


def verdicts_between(chain: Chain, start_s: float, end_s: float) -> list[dict[str, Any]]:
    return [v for v in chain.of_type("verdict") if start_s <= chain.at_s(v["host_ns"]) < end_s]


def links_between(chain: Chain, start_s: float, end_s: float) -> list[dict[str, Any]]:
    return [v for v in chain.of_type("link") if start_s <= chain.at_s(v["host_ns"]) < end_s]


def host_delta(
    chain: Chain, before_s: float, after_s: float, margin_s: float = 0.1
) -> dict[str, int]:
    """The host's counters (and clock and parser error counts) from a stats line taken at
    ``before_s`` to one taken at ``after_s`` (each within ``margin_s`` after it)."""
    first = chain.stats_between(before_s, before_s + margin_s)
    last = chain.stats_between(after_s, after_s + margin_s)

    def counts(stats: dict[str, Any]) -> dict[str, int]:
        clock = stats["clock"]
        link = stats["link"]
        return {
            **host_counters(stats),
            "parse_errors": link["crc_errors"] + link["header_errors"],
            "clock_resets": clock["resets"],
            "clock_phase_errors": clock["phase_errors"],
            "clock_jumps": clock["jumps"],
            "clock_epoch": clock["epoch"],
        }

    a, b = counts(first), counts(last)
    return {key: b[key] - a[key] for key in a}


def emulator_delta(chain: Chain, before_s: float, after_s: float) -> dict[str, Any]:
    """The emulator's ``host`` table and fault counts between two snapshots."""
    a = chain.snapshots[before_s]
    b = chain.snapshots.get(after_s, chain.emulator)

    def diff(x: Any, y: Any) -> Any:
        if isinstance(x, dict):
            return {key: diff(x[key], y[key]) for key in x}
        return y - x if isinstance(x, (int, float)) and not isinstance(x, bool) else y

    return {"host": diff(a["host"], b["host"]), "faults": diff(a["faults"], b["faults"])}
