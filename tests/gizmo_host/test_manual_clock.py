"""Timing on a manual clock, exactly: the link's state table, the reconnect backoff, HOLD on time,
an older capture bringing HOLD forward, and the steady re-publication. No sleeps: time moves
only when the test advances it. Frames still travel through a real pty."""

from __future__ import annotations

import asyncio
import contextlib
import itertools

import pytest

from gizmo_core import Decision, HoldReason, LinkState, Selector
from gizmo_host.errors import IllegalTransition
from gizmo_host.live.link import SerialLink
from gizmo_host.live.link_config import LinkConfig, PipelineConfig
from gizmo_host.live.service import GizmoService
from gizmo_host.rigs.board import BoardModel, PtyBoard
from gizmo_host.stream.events import LinkEvent
from gizmo_host.stream.linkstate import TRANSITIONS, LinkInput, LinkStateMachine
from gizmo_host.timing import ManualScheduler, settle

MS = 1_000_000
TIMEOUT_S = 5.0  # for real I/O (the pty, the open in the executor), never for fake time


def test_the_link_state_table_gives_events_only_on_changes_and_refuses_the_rest():
    machine = LinkStateMachine("/dev/gizmo0")
    walk = [
        (LinkInput.OPEN_STARTED, LinkState.CONNECTING),
        (LinkInput.OPENED, LinkState.SYNCING),
        (LinkInput.FRAME, LinkState.UP),
        (LinkInput.FRAME, None),  # no change, no event
        (LinkInput.SILENCE, LinkState.SILENT),
        (LinkInput.SILENCE, None),
        (LinkInput.FRAME, LinkState.UP),
        (LinkInput.LOST, LinkState.DOWN),
        (LinkInput.STOPPED, None),
    ]
    for count, (link_input, expected) in enumerate(walk):
        event = machine.feed(link_input, "why", count)
        assert (event and event.state) == expected
        if event is not None:
            assert event.host_ns == count and event.transitions == machine.transitions
    assert machine.transitions == 6
    every_input = set(LinkInput)
    for state, allowed in TRANSITIONS.items():
        for link_input in every_input - set(allowed):
            stuck = LinkStateMachine("p")
            stuck.state = state
            with pytest.raises(IllegalTransition, match=link_input.value):
                stuck.feed(link_input, "why", 0)


def test_reopening_backs_off_exactly_doubling_to_the_cap(tmp_path):
    """A missing device: each open fails at once, and the next attempt comes exactly after
    0.1, 0.2, 0.4, 0.8, 1.6, then 2.0 s (the cap) for ever. Never a spin."""
    scheduler = ManualScheduler()
    events: asyncio.Queue[LinkEvent] = asyncio.Queue()
    link = SerialLink(
        str(tmp_path / "missing"),
        on_results=lambda results, rx_ns: None,
        on_event=events.put_nowait,
        scheduler=scheduler,
    )

    async def next_attempt() -> int:
        while (event := await asyncio.wait_for(events.get(), TIMEOUT_S)).state is not (
            LinkState.CONNECTING
        ):
            pass
        return event.host_ns

    async def main() -> list[int]:
        task = asyncio.create_task(link.run())
        attempts = [await next_attempt()]
        try:
            for _ in range(8):
                while not scheduler.pending():  # the failed open is still in the executor
                    await asyncio.wait_for(events.get(), TIMEOUT_S)
                    await settle()
                (due,) = scheduler.pending()
                scheduler.advance(due - scheduler.now_ns())
                attempts.append(await next_attempt())
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return attempts

    attempts = asyncio.run(main())
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert gaps == [m * MS for m in (100, 200, 400, 800, 1600, 2000, 2000, 2000)]
    assert link.stats().open_attempts == 9  # the 9th was still opening when cancelled


class FakeTimeBoard:
    """A service on a manual clock reading a real pty; each frame is sent, then read, at an
    exact fake time (``send`` waits for the real read before time moves on)."""

    def __init__(self, board: PtyBoard, svc: GizmoService, scheduler: ManualScheduler) -> None:
        self.board, self.svc, self.scheduler = board, svc, scheduler
        self.results = svc.results()
        self.verdicts = svc.verdicts(Selector(source_id=1, result_type=5, id=11))
        self.model = BoardModel(period_ms=33, latency_ms=12)

    async def send(self, **fields: int):
        self.board.write(self.model.next_frame(**fields))
        received = await self.results.get(TIMEOUT_S)
        self.scheduler.advance(33 * MS)
        return received

    def published(self) -> list:
        out = []
        while True:
            try:
                out.append(self.verdicts.get_nowait())
            except asyncio.QueueEmpty:
                return out


@contextlib.asynccontextmanager
async def fake_time_service(link_path: str, silent_after_s: float = 1.0, **kwargs):
    scheduler = ManualScheduler()
    with PtyBoard(link_path) as board:
        svc = GizmoService(
            LinkConfig(link_path, silent_after_s=silent_after_s),
            PipelineConfig(transport_delay_ns=0, ttl_ms=150, **kwargs),
            scheduler=scheduler,
        )
        async with svc:
            events = svc.link_events()
            while (await events.get(TIMEOUT_S)).state is not LinkState.SYNCING:
                pass
            yield FakeTimeBoard(board, svc, scheduler)


def test_hold_comes_exactly_when_the_last_target_goes_stale(link_path):
    async def main():
        async with fake_time_service(link_path, verdict_interval_s=60.0) as h:
            for _ in range(45):
                last = await h.send()
            await settle()
            assert [v.decision for v in h.published()][-1] is Decision.PROCEED
            stale_at = last.host_capture_ns + 150 * MS + 1 * MS  # TTL + the timer's margin
            # A steady stream moves the stale timer along lazily: never later than that moment.
            assert min(h.scheduler.pending()) <= stale_at
            h.scheduler.advance(stale_at - 1 - h.scheduler.now_ns())
            await settle()
            # Not a nanosecond early; meanwhile, at most the last PROCEED renewed (the timer
            # fired when the published one ran out, and the target was still fresh).
            assert all(v.decision is Decision.PROCEED for v in h.published())
            h.scheduler.advance(1)
            await settle()
            (hold,) = h.published()
            assert hold.decision is Decision.HOLD and hold.reasons == (HoldReason.STALE,)
            assert hold.host_ns == stale_at

    asyncio.run(main())


def test_a_steady_proceed_is_renewed_before_its_valid_until_runs_out(link_path):
    """A consumer that acts on its last line only until ``valid_until_ns`` sees a steady
    PROCEED as steady: each line comes before the previous one runs out (the once-a-minute
    re-publication is far away), and the last one runs out when its target goes stale."""

    async def main():
        async with fake_time_service(link_path, verdict_interval_s=60.0) as h:
            for _ in range(45):
                last = await h.send()
            await settle()
            published = h.published()
            proceeds = [v for v in published if v.decision is Decision.PROCEED]
            assert len(proceeds) >= 3  # after the clock locks (a second of frames)
            first = published.index(proceeds[0])
            assert all(v.decision is Decision.PROCEED for v in published[first:])
            for before, after in itertools.pairwise(proceeds):  # renewed half a TTL early
                assert after.host_ns <= before.valid_until_ns - 75 * MS + 33 * MS
            stale_at = last.host_capture_ns + 150 * MS
            assert proceeds[-1].valid_until_ns <= stale_at
            h.scheduler.advance(stale_at + 1 * MS - h.scheduler.now_ns())  # the stream stopped
            await settle()
            *renewed, hold = h.published()
            # The last frames came before the renewal window: the stale timer renews the line
            # when it runs out (the target is still fresh), then holds when the target goes.
            assert [v.decision for v in renewed] in ([], [Decision.PROCEED])
            assert [*proceeds, *renewed][-1].valid_until_ns == stale_at
            assert hold.decision is Decision.HOLD and hold.host_ns == stale_at + 1 * MS
            assert hold.valid_until_ns in h.scheduler.pending()  # the next steady re-publication

    asyncio.run(main())


def test_a_routine_result_with_an_older_capture_brings_hold_forward_at_once(link_path):
    async def main():
        async with fake_time_service(link_path, verdict_interval_s=60.0) as h:
            for _ in range(45):
                await h.send()
            older = await h.send(age_ms=100)  # in order, captured 100 ms before it was sent
            await settle()
            renewed = h.published()[-1]  # at once: the published valid_until_ns was too late
            assert renewed.decision is Decision.PROCEED
            assert renewed.valid_until_ns == older.host_capture_ns + 150 * MS
            stale_at = older.host_capture_ns + 151 * MS
            assert min(h.scheduler.pending()) == stale_at
            h.scheduler.advance(stale_at - h.scheduler.now_ns())
            await settle()
            (hold,) = h.published()
            assert hold.reasons == (HoldReason.STALE,) and hold.host_ns == stale_at

    asyncio.run(main())


def test_an_unchanged_verdict_is_republished_exactly_at_the_steady_rate(link_path):
    """Nothing changes (port open, no data): the same HOLD still comes every interval, so a
    consumer that missed it, or joined late, is never left without a current verdict."""

    async def main():
        async with fake_time_service(link_path, verdict_interval_s=0.25, silent_after_s=60.0) as h:
            h.published()  # the transitions' verdicts
            start = h.scheduler.now_ns()
            steady = []
            for _ in range(3):
                h.scheduler.advance(250 * MS)
                await settle()
                steady += h.published()
        assert [v.host_ns - start for v in steady] == [250 * MS, 500 * MS, 750 * MS]
        assert all(v.decision is Decision.HOLD for v in steady)
        assert all(HoldReason.NO_DATA in v.reasons for v in steady)

    asyncio.run(main())
