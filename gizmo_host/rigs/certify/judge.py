"""Judge one certification run against the stand-in's truth (no I/O, no clock).

The :class:`Recorder` keeps what the run produced: every world snapshot's verdict and selected
target, and for every decoded frame how far the host's capture time is from the board's own
(the emulator's emit time less the frame's ``age_ms``). :func:`judge` then compares each
PROCEED with the truth the stand-in computes with its own camera model (not fusion's): the
target must be in the image, its data younger than the TTL, its bearing within
``BEARING_BOUND_DEG`` of the line of sight beyond the box-centre bias a box detector cannot
avoid, and its position within ``position_bound_m``. Anything else is a wrong PROCEED.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from fusion import TargetState, WorldSnapshot
from gizmo_host.rigs.board.emulation import Cycle
from gizmo_host.rigs.certify.plan import HOLD_BUDGET_S, TTL_S, RunPlan
from gizmo_host.rigs.demo.counters import counter_mismatches, injected_faults
from gizmo_host.rigs.demo.tally import GroundTruth
from gizmo_host.stream.events import ReceivedResult
from hil_geometry.pinhole import angle_deg, rotation_quaternion

BEARING_BOUND_DEG = 1.0  # beyond the box-centre bias
RECOVERY_WINDOW_S = 3.0  # a HOLD or a PROCEED is looked for this long after a fault
CAUSE_WINDOW_S = 1.0  # a HOLD that starts this long after a fault's end is not its doing
CAPTURE_SHIFTS_NS = (0, -16_000_000, 16_000_000, -33_000_000, 33_000_000)
_TRUTH_KEPT = 512  # frames whose board capture time is kept for the match (by sequence)


def position_bound_m(range_m: float) -> float:
    """A located target within 1 m of the vehicle's box, or 10% of its range beyond 10 m."""
    return max(1.0, 0.1 * range_m)


class Observation(NamedTuple):
    host_ns: int
    proceed: bool
    reasons: tuple[str, ...]
    target: TargetState | None  # the selected one


class Recorder:
    """What a run produced, bounded: the snapshots and the capture-time errors."""

    def __init__(self) -> None:
        self.observations: list[Observation] = []
        self.capture_errors_ms: list[tuple[int, float]] = []  # (host receive time, error)
        self._board_capture: OrderedDict[int, int] = OrderedDict()

    def on_snapshot(self, snapshot: WorldSnapshot) -> None:
        selected = next((t for t in snapshot.targets if t.key == snapshot.selected), None)
        reasons = tuple(r.value for r in snapshot.reasons)
        self.observations.append(Observation(snapshot.host_ns, snapshot.proceed, reasons, selected))

    def on_cycle(self, cycle: Cycle) -> None:
        for result in cycle.results:
            self._board_capture[result.sequence] = cycle.emit_ns - result.age_ms * 1_000_000
            self._board_capture.move_to_end(result.sequence)
            if len(self._board_capture) > _TRUTH_KEPT:
                self._board_capture.popitem(last=False)

    def on_message(self, message: object) -> None:
        if isinstance(message, ReceivedResult) and message.host_capture_ns is not None:
            board = self._board_capture.get(message.result.sequence)
            if board is not None:
                error_ms = (message.host_capture_ns - board) / 1e6
                self.capture_errors_ms.append((message.host_rx_ns, error_ms))


class WrongProceed(NamedTuple):
    t_s: float
    why: str  # "not there", "stale", "bearing", "position"
    detail: str


@dataclass(slots=True)
class RunResult:
    scenario: str
    seed: int
    wrong: list[WrongProceed] = field(default_factory=list)
    hold_latency_s: dict[str, list[float]] = field(default_factory=dict)
    recovery_s: dict[str, list[float]] = field(default_factory=dict)
    unrecovered: list[tuple[str, float]] = field(default_factory=list)  # (class, fault end s)
    bearing_deg: list[float] = field(default_factory=list)  # to the line of sight
    beyond_bias_deg: list[float] = field(default_factory=list)  # less the box-centre bias
    position_m: list[float] = field(default_factory=list)
    capture_ms: list[float] = field(default_factory=list)
    proceed_s: float = 0.0
    visible_s: float = 0.0
    mismatches: dict[str, tuple[int, int]] = field(default_factory=dict)
    injected: dict[str, int] = field(default_factory=dict)
    series: dict[str, list[Any]] = field(default_factory=dict)  # for the plots
    longest_hold: tuple[float, float, tuple[str, ...]] | None = None  # start s, length s, why


def judge(
    plan: RunPlan,
    recorder: Recorder,
    truth: GroundTruth,
    target_class: int,
    start_ns: int,
    stats: dict[str, Any],
) -> RunResult:
    """``start_ns``: the host time of emulation second 0 (the fault windows' origin)."""
    result = RunResult(plan.scenario, plan.seed)
    obs = recorder.observations
    t_s = [(o.host_ns - start_ns) / 1e9 for o in obs]
    # In view: wholly in the image. A box the image's edge cuts holds ``truncated`` by design.
    views = [truth.view(target_class, o.host_ns) for o in obs]
    visible = [v is not None and not v.cut_off for v in views]
    errors: list[tuple[float, float, float]] = []
    seen: set[int] = set()
    for o, t in zip(obs, t_s, strict=True):
        if not o.proceed:
            continue
        wrong, sample = _judge_proceed(o, truth, target_class)
        if wrong is not None:
            result.wrong.append(WrongProceed(round(t, 3), *wrong))
        if sample is not None and o.target is not None and o.target.capture_ns not in seen:
            seen.add(o.target.capture_ns)
            bearing, beyond, position = sample
            result.bearing_deg.append(bearing)
            result.beyond_bias_deg.append(beyond)
            errors.append((t, bearing, beyond))
            if position is not None:
                result.position_m.append(position)
    for (o, t, vis), following in zip(zip(obs, t_s, visible, strict=True), obs[1:], strict=False):
        dt = (following.host_ns - o.host_ns) / 1e9
        if vis and t > 0:
            result.visible_s += dt
            result.proceed_s += dt if o.proceed else 0.0
    _windows(plan, obs, t_s, visible, result)
    result.longest_hold = _longest_hold(obs, t_s, visible)
    result.capture_ms = [e for _, e in recorder.capture_errors_ms]
    result.mismatches = counter_mismatches(stats)
    board = stats["board"]
    result.injected = injected_faults(board)
    result.series = {
        "t_s": [round(t, 3) for t in t_s],
        "proceed": [o.proceed for o in obs],
        "visible": visible,
        "error_t_s": [round(t, 3) for t, _, _ in errors],
        "error_deg": [round(e, 4) for _, e, _ in errors],
        "beyond_bias_deg": [round(e, 4) for _, _, e in errors],
        "windows": [[w.name, w.start_s, w.end_s] for w in plan.windows],
    }
    return result


def _judge_proceed(
    o: Observation, truth: GroundTruth, target_class: int
) -> tuple[tuple[str, str] | None, tuple[float, float, float | None] | None]:
    """(why it is wrong, or None; (bearing error, that less the box-centre bias, position
    error off the body) or None)."""
    target = o.target
    if target is None or target.bearing_ned is None:
        return ("not there", "PROCEED with no located target"), None
    age_s = (o.host_ns - target.capture_ns) / 1e9
    if age_s > TTL_S + 1e-3:
        return ("stale", f"{target.label} captured {age_s * 1000:.0f} ms before"), None
    # The host's capture time is a few ms off the board's: at the image's edge, the target is
    # there if the truth has it in the image within a vision period of that time.
    view = next(
        (
            v
            for shift_ns in CAPTURE_SHIFTS_NS
            if (v := truth.view(target.id, target.capture_ns + shift_ns)) is not None
        ),
        None,
    )
    if view is None:
        return ("not there", f"{target.label} is not in the image at its capture"), None
    bearing = angle_deg(target.bearing_ned, view.bearing_ned)
    beyond = bearing - view.box_bias_deg
    position = None
    if target.position_ned_m is not None:
        position = _off_body_m(truth, target.id, target.capture_ns, target.position_ned_m)
    sample = (bearing, beyond, position)
    if beyond > BEARING_BOUND_DEG:
        return ("bearing", f"{beyond:.2f}° off beyond the box bias"), sample
    if position is not None and position > position_bound_m(view.range_m):
        return ("position", f"{position:.2f} m off the vehicle at {view.range_m:.1f} m"), sample
    return None, sample


def _off_body_m(
    truth: GroundTruth, class_id: int, capture_ns: int, point: Sequence[float]
) -> float:
    """How far ``point`` is from the vehicle's box (0 on or in it): a ground-plane fix lands
    where the box centre's ray meets the ground, under the vehicle, not at its centre."""
    copter = truth.vehicle_by_class[class_id]
    at = truth.scenario.truth(max(0.0, (capture_ns - (truth.start_ns or 0)) / 1e9))
    state = at.target(copter).state
    size = next(v.size_m for v in truth.scenario.others if v.copter_id == copter)
    rotation = rotation_quaternion(state.quaternion_wxyz)  # body -> NED
    offset = np.asarray(point, dtype=float) - np.asarray(state.position_ned_m, dtype=float)
    local = rotation.T @ offset
    outside = np.maximum(np.abs(local) - np.asarray(size, dtype=float) / 2, 0.0)
    return float(np.linalg.norm(outside))


def _longest_hold(
    obs: Sequence[Observation], t_s: Sequence[float], visible: Sequence[bool]
) -> tuple[float, float, tuple[str, ...]] | None:
    """The longest HOLD while the vehicle stayed in view, with every reason it gave."""
    best: tuple[float, float, tuple[str, ...]] | None = None
    start: int | None = None
    for i, o in enumerate(obs):
        holding = not o.proceed and visible[i] and t_s[i] > 0
        if holding and start is None:
            start = i
        if start is not None and (not holding or i == len(obs) - 1):
            length = t_s[i] - t_s[start]
            if best is None or length > best[1]:
                reasons = sorted({r for x in obs[start : i + 1] for r in x.reasons})
                best = (round(t_s[start], 3), round(length, 3), tuple(reasons))
            start = None
    return best


def _windows(
    plan: RunPlan,
    obs: Sequence[Observation],
    t_s: Sequence[float],
    visible: Sequence[bool],
    result: RunResult,
) -> None:
    """HOLD latency per fault window (must-hold classes) and recovery (every class): from the
    fault's end to the first PROCEED after the HOLD it caused (one starting by
    ``CAUSE_WINDOW_S`` after its end; 0 when there was none), where the vehicle was in view;
    with no PROCEED within ``RECOVERY_WINDOW_S`` of the end while the vehicle stayed in
    view, the fault is unrecovered."""
    for window in plan.windows:
        before = [i for i, t in enumerate(t_s) if t < window.start_s]
        limit_s = window.end_s + RECOVERY_WINDOW_S
        if window.must_hold and before and obs[before[-1]].proceed:
            held = next(
                (
                    t - window.start_s
                    for o, t in zip(obs, t_s, strict=True)
                    if window.start_s <= t <= limit_s and not o.proceed
                ),
                math.inf,
            )
            result.hold_latency_s.setdefault(window.name, []).append(held)
        during = [i for i, t in enumerate(t_s) if window.start_s <= t <= limit_s]
        cause_s = window.end_s + CAUSE_WINDOW_S
        hold = next((i for i in during if not obs[i].proceed and t_s[i] <= cause_s), None)
        if hold is None:
            if during and visible[during[0]]:
                result.recovery_s.setdefault(window.name, []).append(0.0)
            continue
        if not visible[hold]:
            continue  # the vehicle left the image: not the fault's HOLD
        back = next((t_s[i] for i in during if i > hold and obs[i].proceed), None)
        if back is not None:
            result.recovery_s.setdefault(window.name, []).append(max(0.0, back - window.end_s))
        elif all(visible[i] for i in during if i > hold):
            result.unrecovered.append((window.name, window.end_s))


__all__ = ["HOLD_BUDGET_S", "Observation", "Recorder", "RunResult", "WrongProceed", "judge"]
