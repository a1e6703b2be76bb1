"""What a certification run injects: one fault of each class, spaced so each is judged alone.

A run is one scenario and one seed: after a warm-up (the first PROCEED comes after about half a
second), each fault class in turn, ``spacing_s`` apart. The order rotates with the seed, so
over the seeds each class meets the scenario at another moment (a target in view, turning,
out of view). Classes that must make the host HOLD have a latency budget: the host must HOLD
within one vision period plus the TTL (the data's own expiry) plus the verdict tick. Every
class has a recovery: a HOLD that never ends is a fault too (issue 29).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gizmo_host.rigs.board.faults import Fault, FaultKind, FaultTimeline

WARMUP_S = 3.0
SPACING_S = 3.5  # the longest recovery window (RECOVERY_WINDOW_S) after the longest fault
VISION_PERIOD_S = 1 / 30
TTL_S = 0.25  # [store] ttl_ms, the demo host's default
HOLD_BUDGET_S = VISION_PERIOD_S + TTL_S + 0.1

# class -> the fault at offset 0 (its parameters); duration-less ones are one-off events.
FAULT_CLASSES: dict[str, Fault] = {
    "silence": Fault(FaultKind.SILENCE, duration_s=0.6),
    "hangup": Fault(FaultKind.HANGUP, duration_s=0.5),
    "reset": Fault(FaultKind.RESET, down_s=0.5),
    "clock_jump": Fault(FaultKind.CLOCK_JUMP, delta_ms=3000),
    "bit_errors": Fault(FaultKind.BIT_ERRORS, duration_s=1.0, ber=0.002),
    "drop_bytes": Fault(FaultKind.DROP_BYTES, duration_s=1.0, bytes=3, probability=0.3),
    "garbage": Fault(FaultKind.GARBAGE, duration_s=1.0, bytes=48, probability=0.3),
    "truncate": Fault(FaultKind.TRUNCATE, duration_s=1.0, probability=0.3),
    "duplicate": Fault(FaultKind.DUPLICATE, duration_s=1.0, probability=0.3),
    "wrap": Fault(FaultKind.WRAP, sequence=65500),
    "clock_skew": Fault(FaultKind.CLOCK_SKEW, ppm=100.0),
    "clock_step_back": Fault(FaultKind.CLOCK_JUMP, delta_ms=-150),
    # The line delivers 20 ms later for 2 s: the device clock keeps its mapping (ages stay
    # true), holds briefly (jumped) and accepts the new latency in a new epoch.
    "latency_rise": Fault(FaultKind.DELAY, delta_ms=20, duration_s=2.0),
}
MUST_HOLD = frozenset({"silence", "hangup", "reset", "clock_jump", "clock_step_back"})
SCENARIOS = ("orbit", "approach", "track")


@dataclass(frozen=True, slots=True)
class Window:
    """One injected fault: its class and when it acts, in emulation seconds."""

    name: str
    start_s: float
    end_s: float  # when it stops acting (its onset, for a one-off event)

    @property
    def must_hold(self) -> bool:
        return self.name in MUST_HOLD


@dataclass(frozen=True, slots=True)
class RunPlan:
    scenario: str
    seed: int
    timeline: FaultTimeline
    windows: tuple[Window, ...]
    duration_s: float


def fault_end_s(fault: Fault) -> float:
    """When a fault stops acting: a reset's board is back, a latency rise is its onset (the
    drop back is no fault), a one-off event ends where it starts."""
    if fault.kind is FaultKind.RESET:
        return fault.at_s + fault.down_s
    if fault.kind is FaultKind.DELAY:
        return fault.at_s
    return fault.at_s + fault.duration_s


def plan_run(
    scenario: str, seed: int, classes: Sequence[str], spacing_s: float = SPACING_S
) -> RunPlan:
    """``classes`` one after another from ``WARMUP_S``, the order rotated by ``seed``."""
    names = list(classes)
    if names:
        shift = seed % len(names)
        names = names[shift:] + names[:shift]
    faults, windows = [], []
    for index, name in enumerate(names):
        at_s = WARMUP_S + index * spacing_s
        fault = _at(FAULT_CLASSES[name], at_s)
        faults.append(fault)
        windows.append(Window(name, at_s, fault_end_s(fault)))
    duration = WARMUP_S + len(names) * spacing_s + (0.0 if names else 2.0)
    return RunPlan(scenario, seed, FaultTimeline(tuple(faults), seed), tuple(windows), duration)


def _at(fault: Fault, at_s: float) -> Fault:
    values = {name: getattr(fault, name) for name in Fault.__slots__}
    return Fault(**{**values, "at_s": at_s})
