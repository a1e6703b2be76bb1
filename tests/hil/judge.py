"""Judging a chain's output: errors against the truth, verdict timelines, counters per window."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from gizmo_host.rigs.board.faults import Fault, FaultKind
from gizmo_host.rigs.rflysim.views import box_centre_ray_ned, camera_pose, image_box, target_view
from hil_geometry.pinhole import angle_deg
from tests.hil.chain import Chain, host_counters, selected

World = dict[str, Any]


def fault_end_s(fault: Fault) -> float:
    """When a fault stops acting (its onset for one-off events)."""
    if fault.kind is FaultKind.RESET:
        return fault.at_s + fault.down_s
    return fault.at_s + fault.duration_s


def truth_errors(chain: Chain, world: World) -> tuple[float, float | None] | None:
    """(bearing error in degrees, 3D position error in metres or None) of the selected target
    against the truth at its capture time; None when nothing is located. The truth is the
    stand-in's: the line of sight from its camera to the target's centre, and that centre."""
    target = selected(world)
    if target is None or target["bearing_ned"] is None:
        return None
    t_s = (target["capture_ns"] - chain.sim_start_ns) / 1e9
    truth = chain.scenario.truth(t_s)
    true_position = truth.target(chain.target_id).state.position_ned_m
    view = target_view(chain.camera, truth.ego.state, chain.target_id, true_position)
    bearing = angle_deg(target["bearing_ned"], view.bearing_ned)
    position = target["position_ned_m"]
    if position is None:
        return bearing, None
    return bearing, math.dist(position, true_position)


def box_bias_deg(chain: Chain, world: World) -> float | None:
    """How far the ray through the centre of the target's box in the stand-in's image is from
    the line of sight to the target's centre, at the selected target's capture (None when the
    box is not in the image): the part of the bearing error a box detector cannot avoid."""
    target = selected(world)
    if target is None:
        return None
    truth = chain.scenario.truth((target["capture_ns"] - chain.sim_start_ns) / 1e9)
    placed = next(p for p in chain.scenario.placed(truth) if p.body.copter_id == chain.target_id)
    pose = camera_pose(chain.camera, truth.ego.state)
    box = image_box(chain.camera, pose, placed)
    if box is None:
        return None
    view = target_view(chain.camera, truth.ego.state, chain.target_id, placed.position_ned_m)
    return angle_deg(box_centre_ray_ned(chain.camera, pose, box), view.bearing_ned)


class Accuracy(NamedTuple):
    """A chain's accuracy over some captures: nearest-rank 95th percentiles."""

    captures: int
    bearing_p95_deg: float
    position_p95_m: float
    box_bias_p95_deg: float

    def meets(self, bearing_deg: float, position_m: float) -> bool:
        return self.bearing_p95_deg <= bearing_deg and self.position_p95_m <= position_m

    def text(self, name: str) -> str:
        return (
            f"{name}: {self.captures} captures, bearing p95 {self.bearing_p95_deg:.3f}°, "
            f"position p95 {self.position_p95_m:.3f} m, box-centre bias p95 "
            f"{self.box_bias_p95_deg:.3f}°"
        )


def accuracy(chain: Chain, located: Sequence[World]) -> Accuracy:
    """Bearing and position errors against the stand-in's truth, and the box-centre bias."""
    errors = [e for e in (truth_errors(chain, w) for w in located) if e is not None]
    bearings = [e[0] for e in errors]
    positions = [e[1] for e in errors if e[1] is not None]
    biases = [b for b in (box_bias_deg(chain, w) for w in located) if b is not None]
    return Accuracy(
        len(bearings),
        percentile(bearings, 95),
        percentile(positions, 95) if positions else math.inf,
        percentile(biases, 95) if biases else math.nan,
    )


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
            "clock_steps": clock["steps"],
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
