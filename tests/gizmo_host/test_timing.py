"""The timing helpers on the manual clock, without sleeping: ``Backoff`` (the one retry
schedule of every reconnect loop), ``Pacer`` (the paced playbacks) and ``poll``. The expected
times are written out, never computed by the code under test."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pathlib
import socket
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gizmo_host.rigs.board import BoardModel, PtyBoard, play
from gizmo_host.timing import (
    Backoff,
    ManualScheduler,
    Pacer,
    advance_together,
    call_after,
    poll,
    settle,
)
from gizmo_host.wire.protocol import FRAME_LEN

MS = 1_000_000
TIMEOUT_S = 5.0  # for real I/O only, never for manual time

# -- Backoff --------------------------------------------------------------------------------


def test_backoff_doubles_from_its_first_wait_to_its_cap_and_stays_there():
    backoff = Backoff(0.2, 5.0)
    assert [backoff.delay_s(n) for n in range(0, 10)] == [
        0.2, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0, 5.0,
    ]  # fmt: skip
    assert backoff.delay_s(10**12) == 5.0  # a loop failing for years computes no huge power
    assert Backoff(0.5, 0.5).delay_s(3) == 0.5
    assert [Backoff(1.0, 10.0, factor=3.0).delay_s(n) for n in (1, 2, 3, 4)] == [1, 3, 9, 10]
    assert Backoff(0.1, 2.0, factor=1.0).delay_s(50) == 0.1


@given(
    first_s=st.floats(1e-6, 10.0),
    ratio=st.floats(1.0, 1e4),
    factor=st.floats(1.0, 10.0),
    failures=st.lists(st.integers(0, 10_000), min_size=2, max_size=2),
)
def test_backoff_never_shrinks_with_more_failures_and_stays_within_its_bounds(
    first_s, ratio, factor, failures
):
    backoff = Backoff(first_s, first_s * ratio, factor)
    fewer, more = sorted(failures)
    assert first_s <= backoff.delay_s(fewer) <= backoff.delay_s(more) <= first_s * ratio


@pytest.mark.parametrize(
    ("first_s", "max_s", "factor"),
    [
        (0.0, 1.0, 2.0),
        (-0.1, 1.0, 2.0),
        (2.0, 1.0, 2.0),
        (float("nan"), 1.0, 2.0),
        (0.1, float("inf"), 2.0),
        (0.1, 1.0, 0.5),
        (0.1, 1.0, float("nan")),
    ],
)
def test_a_backoff_that_could_spin_or_never_return_is_refused(first_s, max_s, factor):
    with pytest.raises(ValueError, match="backoff: expected"):
        Backoff(first_s, max_s, factor)


class ArmedScheduler(ManualScheduler):
    """A manual clock that says when a timer is armed: a loop waiting on real I/O has
    reached its next wait."""

    def __init__(self) -> None:
        super().__init__()
        self._armed: asyncio.Event | None = None

    def call_at_ns(self, when_ns, callback):
        if self._armed is not None:
            self._armed.set()
        return super().call_at_ns(when_ns, callback)

    async def next_timer(self) -> None:
        if self._armed is None:
            self._armed = asyncio.Event()
        if not self.pending():
            await asyncio.wait_for(self._armed.wait(), TIMEOUT_S)
        self._armed.clear()


def test_the_mavlink_transport_reopens_on_the_backoff_exactly():
    """A TCP autopilot nobody listens for: each connect is refused at once, and the next one
    is due exactly 0.2, 0.4, 0.8, 1.6, 3.2, then 5 s later (the cap)."""
    from gizmo_host.mavlink.transport import MavlinkTransport
    from gizmo_host.mavlink.urls import parse_url

    with socket.socket() as probe:  # a port that was free a moment ago: connect is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    scheduler = ArmedScheduler()

    async def main() -> list[int]:
        transport = MavlinkTransport(
            parse_url(f"tcp:127.0.0.1:{port}"), lambda data, rx_ns: None, scheduler=scheduler
        )
        task = asyncio.create_task(transport.run())
        waits = []
        try:
            for failures in range(1, 9):
                await scheduler.next_timer()  # the refused connect is real I/O
                assert transport.open_failures == failures
                (due,) = scheduler.pending()
                waits.append(due - scheduler.now_ns())
                scheduler.advance(due - scheduler.now_ns())
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return waits

    assert asyncio.run(main()) == [m * MS for m in (200, 400, 800, 1600, 3200, 5000, 5000, 5000)]


# -- Pacer ----------------------------------------------------------------------------------


async def _drive(scheduler: ManualScheduler, task: asyncio.Task) -> None:
    """Move the manual clock to each next timer until ``task`` is done."""
    while not task.done():
        await settle()
        due = scheduler.pending()
        if due:
            scheduler.advance(due[0] - scheduler.now_ns())
    await asyncio.wait_for(task, TIMEOUT_S)


def test_the_pacer_wakes_at_the_recorded_times_scaled_by_speed():
    scheduler = ManualScheduler(start_ns=5_000 * MS)
    woke: list[int] = []
    times_ms = [100, 100, 300, 1100]

    async def playback(pacer: Pacer, times_ms: list[int]) -> None:
        for t_ms in times_ms:
            await pacer.wait(t_ms * MS)
            woke.append(scheduler.now_ns() - 5_000 * MS)

    async def main() -> None:
        await _drive(scheduler, asyncio.create_task(playback(Pacer(scheduler, 2.0), times_ms)))

    asyncio.run(main())
    assert woke == [0, 0, 100 * MS, 500 * MS]  # (t - 100 ms) / 2 after the anchor


def test_a_late_wake_up_does_not_delay_what_follows_and_a_shift_does():
    """Due times come from the anchor: waking 30 ms late at one step leaves the next step's
    due time where it was; ``shift`` moves all later ones."""
    scheduler = ManualScheduler(start_ns=0)
    pacer = Pacer(scheduler)
    pacer.start(1_000 * MS)
    assert pacer.due_ns(1_100 * MS) == 100 * MS
    scheduler.advance(130 * MS)  # woke late
    assert pacer.due_ns(1_200 * MS) == 200 * MS
    pacer.shift(50 * MS)  # waited 50 ms for a reader
    assert pacer.due_ns(1_200 * MS) == 250 * MS


def test_a_pacer_that_is_behind_goes_on_without_waiting_for_any_timer():
    scheduler = ManualScheduler(start_ns=0)
    pacer = Pacer(scheduler)

    async def main() -> None:
        pacer.start(0)
        scheduler.advance(1_000 * MS)
        for t_ms in (10, 20, 990):  # all due before now
            await asyncio.wait_for(pacer.wait(t_ms * MS), TIMEOUT_S)
        assert scheduler.pending() == []

    asyncio.run(main())


@pytest.mark.parametrize("speed", [0.0, -1.0, float("inf"), float("nan")])
def test_a_pacer_speed_that_means_nothing_is_refused(speed):
    with pytest.raises(ValueError, match="speed"):
        Pacer(ManualScheduler(), speed)


def test_the_emulator_plays_frames_at_the_board_period_on_the_manual_clock(tmp_path):
    """``play`` through a real pty: a frame at 0, then one each 33 ms of manual time, and no
    frame before its time."""
    scheduler = ManualScheduler(start_ns=0)
    link = str(tmp_path / "pty")

    async def main() -> list[tuple[int, int]]:
        seen: list[tuple[int, int]] = []
        with PtyBoard(link) as board:
            fd = os.open(os.path.realpath(link), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
            try:
                task = asyncio.create_task(play(board, BoardModel(period_ms=33), 4, scheduler))
                for _ in range(4):
                    await settle()
                    seen.append((scheduler.now_ns(), len(_read_all(fd)) // FRAME_LEN))
                    due = scheduler.pending()
                    if due:
                        scheduler.advance(due[0] - scheduler.now_ns())
                await asyncio.wait_for(task, TIMEOUT_S)
            finally:
                os.close(fd)
        return seen

    assert asyncio.run(main()) == [(0, 1), (33 * MS, 1), (66 * MS, 1), (99 * MS, 1)]


def _read_all(fd: int) -> bytes:
    out = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 4096):
            out += chunk
    return out


# -- poll -----------------------------------------------------------------------------------


def test_poll_checks_at_its_interval_and_gives_up_exactly_at_its_timeout():
    scheduler = ManualScheduler(start_ns=0)
    checks: list[int] = []

    def never() -> bool:
        checks.append(scheduler.now_ns())
        return False

    async def main() -> bool:
        task = asyncio.create_task(poll(scheduler, never, timeout_s=0.05, every_s=0.02))
        await _drive(scheduler, task)
        return task.result()

    assert asyncio.run(main()) is False
    assert checks == [0, 20 * MS, 40 * MS, 60 * MS]


def test_poll_returns_as_soon_as_the_condition_holds():
    scheduler = ManualScheduler(start_ns=0)
    ready_at = 30 * MS

    async def main() -> tuple[bool, int]:
        task = asyncio.create_task(
            poll(scheduler, lambda: scheduler.now_ns() >= ready_at, timeout_s=1.0, every_s=0.01)
        )
        await _drive(scheduler, task)
        return task.result(), scheduler.now_ns()

    assert asyncio.run(main()) == (True, 30 * MS)


def test_call_after_fires_once_exactly_that_long_from_now():
    scheduler = ManualScheduler(start_ns=7 * MS)
    fired: list[int] = []
    call_after(scheduler, 1.5, lambda: fired.append(scheduler.now_ns()))
    scheduler.advance(1_499 * MS)
    assert fired == []
    scheduler.advance(10_000 * MS)
    assert fired == [1_507 * MS]


def test_no_module_but_timing_sleeps_on_the_event_loop_directly():
    """Every wait goes through the Scheduler: a bare ``asyncio.sleep`` anywhere else is a
    timer the manual clock cannot drive (and that the docs say does not exist)."""
    root = pathlib.Path(__file__).resolve().parents[2]
    offenders = [
        f"{path.relative_to(root)}:{number}"
        for package in ("gizmo_host", "rfly_link", "fusion")
        for path in sorted((root / package).rglob("*.py"))
        if path.name != "timing.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "asyncio.sleep(" in line or "from asyncio import sleep" in line
    ]
    assert offenders == []


@given(
    st.lists(
        st.tuples(st.integers(0, 1000), st.booleans(), st.integers(0, 300)),
        max_size=40,
    )
)
def test_next_due_is_the_earliest_pending_timer_however_they_were_cancelled(steps):
    # (due in ms from now, cancel it, then advance by ms): replay asks before every input.
    scheduler = ManualScheduler(0)
    armed: list[list] = []  # [due_ns, cancelled, ran], kept here, not asked of the scheduler

    def expected() -> int | None:
        return min((due for due, cancelled, ran in armed if not (cancelled or ran)), default=None)

    for due_ms, cancel, advance_ms in steps:
        entry = [scheduler.now_ns() + due_ms * MS, cancel, False]
        armed.append(entry)
        timer = scheduler.call_at_ns(entry[0], lambda entry=entry: entry.__setitem__(2, True))
        if cancel:
            timer.cancel()
        assert scheduler.next_due_ns() == expected()
        scheduler.advance(advance_ms * MS)
        assert scheduler.next_due_ns() == expected()


_TIMER = st.tuples(
    st.integers(0, 1),  # the clock it arms on: 0 first, 1 second
    st.integers(0, 3),  # its delay in ms from that clock's now (0: due at once)
    st.lists(st.integers(0, 15), max_size=3),  # the timers it arms when it runs
    st.one_of(st.none(), st.integers(0, 15)),  # the timer it cancels when it runs
)


@given(
    st.lists(_TIMER, min_size=1, max_size=16),
    st.lists(st.tuples(st.integers(0, 15), st.integers(0, 6)), min_size=1, max_size=12),
)
def test_advancing_two_clocks_together_runs_what_advancing_each_in_turn_runs(timers, inputs):
    """``advance_together`` (offline replay's two clocks) against the sequence it stands for,
    written out: for each time a timer of either is due, the earliest (the first clock's at
    equal times), ``advance_to`` it on the first clock then the second; then both to the end.
    Timers arm timers on either clock, due at once or later, and cancel others; each input
    arms one (a verdict check at the input's time). Same timers, same order, same clocks."""

    def run(together: bool) -> list[tuple[int, int, int]]:
        clocks = (ManualScheduler(0), ManualScheduler(0))
        log: list[tuple[int, int, int]] = []
        armed: dict[int, object] = {}
        budget = [200]

        def arm(index: int) -> None:
            if budget[0] == 0:
                return
            budget[0] -= 1
            clock, delay_ms, _, _ = timers[index % len(timers)]
            scheduler = clocks[clock]
            armed[index] = scheduler.call_at_ns(
                scheduler.now_ns() + delay_ms * MS, lambda: fire(index)
            )

        def fire(index: int) -> None:
            log.append((index, clocks[0].now_ns(), clocks[1].now_ns()))
            _, _, arms, cancels = timers[index % len(timers)]
            if cancels is not None and cancels in armed:
                armed.pop(cancels).cancel()  # type: ignore[attr-defined]
            for j in arms:
                arm(j)

        def advance(end_ns: int) -> None:
            first, second = clocks
            if together:
                advance_together(first, second, end_ns)
                return
            while True:
                dues = [d for d in (first.next_due_ns(), second.next_due_ns()) if d is not None]
                if not dues or min(dues) > end_ns:
                    break
                first.advance_to(min(dues))
                second.advance_to(min(dues))
            first.advance_to(end_ns)
            second.advance_to(end_ns)

        for index, gap_ms in inputs:
            advance(clocks[0].now_ns() + gap_ms * MS)
            arm(index)
        advance(clocks[0].now_ns() + 10 * MS)
        assert clocks[0].now_ns() == clocks[1].now_ns()
        return log

    assert run(together=True) == run(together=False)


@pytest.mark.subprocess
def test_the_manual_clock_runs_where_mypy_is_not_installed():
    """An installed gizmo-host need not have mypy: without ``mypy_extensions`` the manual
    clock's mypyc attribute falls back to a no-op, and its timers still run in time order."""
    code = (
        "import sys; sys.modules['mypy_extensions'] = None\n"
        "from gizmo_host.timing import ManualScheduler\n"
        "s = ManualScheduler(0); ran = []\n"
        "s.call_at_ns(7, lambda: ran.append(('b', s.now_ns())))\n"
        "s.call_at_ns(3, lambda: ran.append(('a', s.now_ns())))\n"
        "s.advance(10); print(ran, s.now_ns())\n"
    )
    root = pathlib.Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[('a', 3), ('b', 7)] 10"
