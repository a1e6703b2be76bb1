"""One clock core: a foreign clock (a board's device clock, a simulation's time, an
autopilot's boot clock) mapped onto the host clock in epochs, never fresher within one.

A leaf: the standard library only, no I/O, nothing of ours. The device clock
(``gizmo_host.stream.clock``), the simulator clocks (``fusion.simclock``) and TIMESYNC
(``fusion.timesync``) are thin sample adapters around :class:`EpochClock`.
"""

from gizmo_core.clock.mapping import EpochClock
from gizmo_core.clock.status import ClockCounts, ClockEvent, ClockReading, ClockStatus, LatePolicy

__all__ = [
    "ClockCounts",
    "ClockEvent",
    "ClockReading",
    "ClockStatus",
    "EpochClock",
    "LatePolicy",
]
