"""Timers and sleeps on an injected clock, so timing is testable without waiting.

Everything that waits goes through a ``Scheduler``: the live layer's reconnect backoff, silence
check, stale timer and verdict re-publication, the emulator's recognition cycle, the simulator
stand-in's sends (``sleep_until_ns``, which a request can cut short), the paced playbacks
(``Pacer``) and every poll or periodic loop (``poll``, ``Scheduler.sleep``). No module outside
this one calls ``asyncio.sleep``. ``LoopScheduler`` is the real one: host time is
``time.monotonic_ns()`` (or the injected clock) and callbacks run on the running asyncio loop.
``ManualScheduler`` is the manual clock: time moves only when its owner calls ``advance``, and
every timer due by then runs, in order, exactly at its time. Offline replay runs the live host
on it (each recorded time in turn), and the timing tests run on it without sleeping.

``Backoff`` (defined in ``rfly_link.backoff``, which the UDP receiver's thread uses too) is the
one retry schedule of every reconnect loop.

A ``WallClock`` maps host time to ``CLOCK_REALTIME`` for what leaves the machine (the world
line's ``wall_ns``): ``realtime_of`` live, ``RecordedWallClock`` in an offline replay.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Protocol

from gizmo_host.manual_clock import ManualClock, advance_together
from rfly_link.backoff import Backoff

__all__ = [
    "Backoff",
    "LoopScheduler",
    "ManualScheduler",
    "Pacer",
    "RecordedWallClock",
    "Scheduler",
    "Timer",
    "WallClock",
    "advance_together",
    "call_after",
    "no_wall_clock",
    "poll",
    "realtime_of",
    "settle",
]

WallClock = Callable[[int], int | None]  # host ns -> CLOCK_REALTIME ns (None: not known)


def realtime_of(host_ns: int) -> int:
    """``host_ns`` (``CLOCK_MONOTONIC``) on ``CLOCK_REALTIME``, with the offset between the
    two sampled now: two vDSO reads (~100 ns), so an NTP step (a board without an RTC sets its
    clock minutes after boot) shows in the next snapshot rather than never. Only for times
    close to now, as a snapshot's is."""
    return host_ns + (time.time_ns() - time.monotonic_ns())


class RecordedWallClock:
    """A capture's one offset (``monotonic_ns_at_start`` and ``wall_clock_ns_at_start``,
    sampled together when recording began): a replay's ``wall_ns`` is deterministic."""

    __slots__ = ("offset_ns",)

    def __init__(self, monotonic_ns: int, wall_ns: int) -> None:
        self.offset_ns = wall_ns - monotonic_ns

    def __call__(self, host_ns: int) -> int:
        return host_ns + self.offset_ns


def no_wall_clock(host_ns: int) -> None:
    """A replayed capture that recorded no wall clock: ``wall_ns`` is null, not a guess."""
    return None


class Timer(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """Host time in ns, one-shot timers at a host time, and sleeps."""

    def now_ns(self) -> int: ...

    def call_at_ns(self, when_ns: int, callback: Callable[[], None]) -> Timer: ...

    async def sleep(self, seconds: float) -> None: ...

    async def sleep_until_ns(self, when_ns: int, wake: asyncio.Event | None = None) -> None:
        """Return at host time ``when_ns``, or earlier once ``wake`` is set; a time already
        past (or a ``wake`` already set) still yields to the loop once, so a task that is
        always behind lets others in."""


class LoopScheduler:
    """The running asyncio loop's timers, on ``clock`` (host monotonic time by default)."""

    def __init__(self, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.now_ns = clock

    def call_at_ns(self, when_ns: int, callback: Callable[[], None]) -> Timer:
        delay_s = max(0.0, (when_ns - self.now_ns()) / 1e9)
        return asyncio.get_running_loop().call_later(delay_s, callback)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def sleep_until_ns(self, when_ns: int, wake: asyncio.Event | None = None) -> None:
        delay_s = (when_ns - self.now_ns()) / 1e9
        if delay_s <= 0 or (wake is not None and wake.is_set()):
            await asyncio.sleep(0)
        elif wake is None:
            await asyncio.sleep(delay_s)
        else:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), delay_s)


class Pacer:
    """A recorded timeline played on a scheduler's clock at ``speed``.

    ``wait(t_ns)`` returns once host time reaches the anchor plus ``(t_ns - t0_ns) / speed``,
    where the first ``wait`` (or ``start``) anchors ``t0_ns`` at the current host time. Each
    due time is computed from the anchor, never from the previous wait, so late wake-ups do
    not add up; a playback that falls behind goes on at once (yielding to the loop once per
    wait). ``shift(ns)`` moves the rest of the timeline later: time spent waiting for
    something the recording does not contain (a reader opening the port).
    """

    __slots__ = ("_anchor_host_ns", "_anchor_t_ns", "_scheduler", "speed")

    def __init__(self, scheduler: Scheduler, speed: float = 1.0) -> None:
        if not (speed > 0 and speed != float("inf")):
            raise ValueError(f"speed: expected a finite factor > 0, got {speed!r}")
        self._scheduler = scheduler
        self.speed = speed
        self._anchor_t_ns: int | None = None
        self._anchor_host_ns = 0

    def start(self, t_ns: int = 0) -> None:
        """Anchor the timeline's ``t_ns`` at the current host time."""
        self._anchor_t_ns = t_ns
        self._anchor_host_ns = self._scheduler.now_ns()

    def due_ns(self, t_ns: int) -> int:
        """The host time at which the timeline reaches ``t_ns`` (anchoring it if not yet)."""
        if self._anchor_t_ns is None:
            self.start(t_ns)
        assert self._anchor_t_ns is not None
        return self._anchor_host_ns + round((t_ns - self._anchor_t_ns) / self.speed)

    def shift(self, ns: int) -> None:
        """Everything still to come, ``ns`` later."""
        self._anchor_host_ns += ns

    async def wait(self, t_ns: int) -> None:
        await self._scheduler.sleep_until_ns(self.due_ns(t_ns))


def call_after(scheduler: Scheduler, seconds: float, callback: Callable[[], None]) -> Timer:
    """``callback`` once, ``seconds`` from now on ``scheduler``'s clock (a run's duration)."""
    return scheduler.call_at_ns(scheduler.now_ns() + round(seconds * 1e9), callback)


async def poll(
    scheduler: Scheduler, ready: Callable[[], bool], timeout_s: float, every_s: float
) -> bool:
    """Check ``ready()`` every ``every_s`` until it holds (True) or ``timeout_s`` has passed
    (False): for what announces itself by no event (a pty's hang-up flag, a port number)."""
    deadline_ns = scheduler.now_ns() + round(timeout_s * 1e9)
    while not ready():
        if scheduler.now_ns() >= deadline_ns:
            return False
        await scheduler.sleep(every_s)
    return True


class ManualScheduler(ManualClock):
    """A manual clock: ``advance(ns)`` runs every timer due, in time order, at its own time.
    Offline replay moves it to each recorded time; tests move it by hand.

    Sleeps are timers that resolve a future, so a coroutine sleeping on this clock wakes when
    the test advances past its deadline (after the loop gets a turn: ``await settle()``).
    """

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        self.call_at_ns(self._now_ns + round(seconds * 1e9), wake)
        await future

    async def sleep_until_ns(self, when_ns: int, wake: asyncio.Event | None = None) -> None:
        if when_ns <= self._now_ns or (wake is not None and wake.is_set()):
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def due() -> None:
            if not future.done():
                future.set_result(None)

        timer = self.call_at_ns(when_ns, due)
        woken = None if wake is None else asyncio.ensure_future(wake.wait())
        try:
            if woken is None:
                await future
            else:
                await asyncio.wait((future, woken), return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            future.cancel()
            if woken is not None:
                woken.cancel()


async def settle(turns: int = 5) -> None:
    """Give the event loop a few turns, so woken coroutines run up to their next wait."""
    for _ in range(turns):
        await asyncio.sleep(0)
