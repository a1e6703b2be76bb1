"""The manual clock's timers: time moves only when its owner says, and every timer due by then
runs, in time order, at its own time.

Apart from :mod:`gizmo_host.timing` (whose ``ManualScheduler`` adds the sleeps) so that it is
compiled: offline replay arms, checks and runs a timer or two for every serial chunk it feeds,
on two of these clocks (``advance_together``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # interpreted, without mypy: the attribute only tells mypyc

    def mypyc_attr(*_args: object, **_kwargs: object) -> Callable[[_T], _T]:  # type: ignore[misc]
        return lambda cls: cls


class ManualTimer:
    """A timer of a :class:`ManualClock`; ``cancel`` keeps it from running."""

    __slots__ = ("callback", "cancelled", "when_ns")

    def __init__(self, when_ns: int, callback: Callable[[], None]) -> None:
        self.when_ns = when_ns
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


@mypyc_attr(allow_interpreted_subclasses=True)
class ManualClock:
    """Timers on a clock that ``advance`` and ``advance_to`` move."""

    def __init__(self, start_ns: int = 1_000_000_000) -> None:
        self._now_ns = start_ns
        # (due, order armed, timer): a heap, ties run in the order they were armed
        self._timers: list[tuple[int, int, ManualTimer]] = []
        self._sequence = 0

    def now_ns(self) -> int:
        return self._now_ns

    def call_at_ns(self, when_ns: int, callback: Callable[[], None]) -> ManualTimer:
        timer = ManualTimer(when_ns, callback)
        self._sequence += 1
        heapq.heappush(self._timers, (when_ns, self._sequence, timer))
        return timer

    def pending(self) -> list[int]:
        """Due times of the timers not yet run or cancelled, earliest first."""
        return sorted(when for when, _, t in self._timers if not t.cancelled)

    def next_due_ns(self) -> int | None:
        """The due time of the earliest timer not yet run or cancelled (``pending()[0]``
        without sorting them all: offline replay asks before every input)."""
        timers = self._timers
        while timers and timers[0][2].cancelled:
            heapq.heappop(timers)
        return timers[0][0] if timers else None

    def advance(self, ns: int) -> None:
        """Move time forward by ``ns``, running each due timer at its own due time."""
        self.advance_to(self._now_ns + ns)

    def advance_to(self, end_ns: int) -> None:
        """``advance`` to the time ``end_ns`` (offline replay's recorded times)."""
        timers = self._timers
        while timers and timers[0][0] <= end_ns:
            when_ns, _, timer = heapq.heappop(timers)
            if timer.cancelled:
                continue
            self._now_ns = max(self._now_ns, when_ns)
            timer.callback()
        self._now_ns = end_ns


def advance_together(first: ManualClock, second: ManualClock, end_ns: int) -> None:
    """Two manual clocks moved to ``end_ns`` together: for each time a timer of either is due
    by then, earliest first, ``first`` then ``second`` advance to it (``first``'s timers run
    first at equal times, and a timer of one that arms the other's by then runs in its turn);
    then both to ``end_ns``. What that sequence of ``advance_to`` does, with the heads read
    directly: offline replay moves its two clocks before every input."""
    a, b = first._timers, second._timers
    while True:
        while a and a[0][2].cancelled:
            heapq.heappop(a)
        while b and b[0][2].cancelled:
            heapq.heappop(b)
        if a:
            due = a[0][0]
            if b and b[0][0] < due:
                due = b[0][0]
        elif b:
            due = b[0][0]
        else:
            break
        if due > end_ns:
            break
        first.advance_to(due)
        second.advance_to(due)
    first._now_ns = second._now_ns = end_ns  # nothing is due by then: the clocks move
