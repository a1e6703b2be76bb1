"""The emulator's and the stand-in's runners on the host's one ``Scheduler``: driven by a
``ManualScheduler``, they do exactly what their pure cores do when stepped by hand, at exactly
the due times, and nobody sleeps. The pty and the UDP sockets are real."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any

from gizmo_host.rigs.board.builtin_scene import BoardScenario
from gizmo_host.rigs.board.port import PtyPort
from gizmo_host.rigs.board.runner import Runner
from gizmo_host.rigs.board.target_sources import ScenarioSource
from gizmo_host.rigs.rflysim import StandIn, build_scenario
from gizmo_host.rigs.rflysim.sim_runner import SimRunner
from gizmo_host.timing import LoopScheduler, ManualScheduler, settle
from tests.support.emulate_host import (
    START_NS,
    ParsingHost,
    expected,
    make_emulation,
    run_through_host,
)

SECOND = 1_000_000_000
TIMEOUT_S = 5.0  # for real I/O only, never for fake time


async def drive(
    scheduler: ManualScheduler, work: Coroutine[Any, Any, Any], started: asyncio.Event | None = None
) -> Any:
    """Run ``work``, moving the manual clock to each next timer whenever it waits on one (once
    ``started`` is set: binding sockets takes real loop turns)."""
    task = asyncio.ensure_future(work)
    if started is not None:
        await asyncio.wait_for(started.wait(), TIMEOUT_S)
    while True:
        await settle()
        if task.done():
            return task.result()
        pending = scheduler.pending()
        assert pending, "the runner waits on something other than the clock"
        scheduler.advance(max(0, pending[0] - scheduler.now_ns()))


def test_fake_sleep_until_returns_at_its_time_or_when_woken() -> None:
    async def body() -> None:
        scheduler = ManualScheduler(start_ns=0)
        wake = asyncio.Event()
        sleeping = asyncio.ensure_future(scheduler.sleep_until_ns(5 * SECOND, wake))
        await settle()
        scheduler.advance(5 * SECOND - 1)
        await settle()
        assert not sleeping.done()
        wake.set()
        await settle()
        assert sleeping.done() and scheduler.pending() == []  # the timer went with the sleep
        await scheduler.sleep_until_ns(0)  # already past: returns after one turn
        timed = asyncio.ensure_future(scheduler.sleep_until_ns(7 * SECOND))
        await settle()
        scheduler.advance(7 * SECOND - 1 - scheduler.now_ns())
        await settle()
        assert not timed.done()
        scheduler.advance(1)
        await settle()
        assert timed.done() and scheduler.now_ns() == 7 * SECOND

    asyncio.run(body())


def test_loop_sleep_until_is_cut_short_by_wake() -> None:
    async def body() -> None:
        scheduler = LoopScheduler()
        wake = asyncio.Event()
        asyncio.get_running_loop().call_soon(wake.set)
        far = scheduler.now_ns() + 3600 * SECOND
        await asyncio.wait_for(scheduler.sleep_until_ns(far, wake), TIMEOUT_S)

    asyncio.run(body())


def test_the_emulator_runner_on_a_manual_clock_writes_what_the_emulation_decides() -> None:
    """Every cycle of one second, byte for byte, as the pure emulation stepped by hand."""
    period_ns = make_emulation().period_ns
    cycles = -(-SECOND // period_ns)  # every capture before the end: 31 at 30 Hz
    by_hand = run_through_host(make_emulation(), cycles * period_ns / 1e9, BoardScenario())
    expected = b"".join(by_hand[1])

    async def body() -> bytes:
        scheduler = ManualScheduler(start_ns=START_NS - 50_000_000)  # the reader's settle time
        port = PtyPort()
        path = port.plug()
        reader = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            runner = board_runner(port, scheduler, 1.0)
            await drive(scheduler, runner.run())
            assert runner.emulation is not None and runner.emulation.start_ns == START_NS
            assert runner.cycles_skipped == 0
            assert scheduler.now_ns() == runner.pacer.busy_until_ns + runner.drain_ns
            return _read_all(reader)
        finally:
            os.close(reader)
            await port.close()

    assert asyncio.run(body()) == expected


def board_runner(port: PtyPort, scheduler: ManualScheduler, duration_s: float) -> Runner:
    """The emulator's runner for the board scenario on ``port``, on the manual clock."""
    return Runner(
        lambda start_ns: make_emulation(start_ns=start_ns),
        port,
        ScenarioSource(BoardScenario()),
        scheduler=scheduler,
        duration_s=duration_s,
    )


def _read_all(fd: int) -> bytes:
    """What the pty holds (it is non-blocking: empty raises)."""
    got = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return got
        if not chunk:
            return got
        got += chunk


def test_the_stand_in_runner_on_a_manual_clock_polls_exactly_when_due() -> None:
    """The truths arrive at the stand-in's own due times, the run ends at its duration, and it
    sends what a punctual poll loop sends."""
    punctual = StandIn(build_scenario("orbit"))
    due: list[int] = []
    t_ns = 0
    sent = 0
    while t_ns <= SECOND:
        output = punctual.poll(t_ns, 0)
        sent += len(output.datagrams)
        due += [t_ns] * len(output.truths)
        t_ns = punctual.next_due_ns()

    async def body() -> None:
        scheduler = ManualScheduler(start_ns=START_NS)
        stand_in = StandIn(build_scenario("orbit"))
        truths: list[int] = []
        runner = SimRunner(
            stand_in,
            scheduler=scheduler,
            wall_ms=lambda: 0,
            on_truth=lambda _truth, host_ns: truths.append(host_ns),
            control_ports={p: 0 for p in stand_in.control_ports()},
        )
        stats = await drive(scheduler, runner.run(1.0), runner.started)
        assert runner.start_ns == START_NS
        assert [h - START_NS for h in truths] == due
        assert scheduler.now_ns() == START_NS + SECOND
        assert stats.send.sent + stats.send.failed == sent

    asyncio.run(body())


def test_a_stalled_process_skips_cycles_and_the_host_counts_no_reset_for_it() -> None:
    """Issue 29 item 6: under load, the lean certify matrix counted 2 device resets for 1
    injected (all three rigs run on one event loop). The process stops for 1.2 s, as a loaded
    machine stops it: the runner wakes more than a second behind and skips the missed cycles
    (the next frame's device time is 1.2 s on, its sequence one on), and the host reads the
    frame written just before the stop together with the ones after it. On receive times alone
    the device clock moved a second further than the host's clock allows, and the host called
    it a device reset; the emulator, on its send times, counted none. The host was the side that
    miscounted: a sequence that keeps its order is no restart."""

    async def body() -> tuple[dict[str, int], dict[str, int], int]:
        scheduler = ManualScheduler(start_ns=START_NS - 50_000_000)  # the reader's settle time
        port = PtyPort()
        reader = os.open(port.plug(), os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        host = ParsingHost()
        try:
            runner = board_runner(port, scheduler, 3.0)
            task = asyncio.ensure_future(runner.run())
            stop_at, stopped = START_NS + 3 * SECOND // 2, False
            while True:
                await settle()
                now = scheduler.now_ns()
                stopping = not stopped and now >= stop_at
                if not stopping and (chunk := _read_all(reader)):
                    host.feed(chunk, now)  # the host reads what came, when it comes
                if task.done():
                    break
                pending = scheduler.pending()
                assert pending, "the runner waits on something other than the clock"
                step = max(0, pending[0] - now)
                if stopping:  # the process stops: what was just written waits unread
                    stopped, step = True, step + 1_200_000_000
                scheduler.advance(step)
            await task
            assert runner.emulation is not None
            return host.counters(), expected(runner.emulation), runner.cycles_skipped
        finally:
            os.close(reader)
            await port.close()

    counted, announced, skipped = asyncio.run(body())
    assert skipped > 30
    assert counted["resets"] == announced["resets"] == 0
    assert counted == announced
