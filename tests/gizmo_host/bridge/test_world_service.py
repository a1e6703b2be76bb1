"""The world service on a manual clock: when snapshots are published, and who gets them.

Fusion inputs go in through ``apply`` (what the adapters give); time moves only when the test
advances the ``ManualScheduler``, so every publication time is exact and no test sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion import LinkStatus, WorldSnapshot, placement
from gizmo_core import Decision, HoldReason, LinkState
from gizmo_core.clock import ClockStatus
from gizmo_host.bridge.world_service import WorldService
from gizmo_host.stream.events import LinkEvent, ReceivedResult
from gizmo_host.stream.tracker import SequenceEvent
from gizmo_host.timing import ManualScheduler, settle
from gizmo_host.wire.protocol import VisionResult
from tests.support.fusion_inputs import MS, observation, pose, up, world
from tests.support.native import interpreted_only

T0 = 1_000_000_000


def service(scheduler: ManualScheduler, **config: object) -> WorldService:
    return WorldService(world(**config), scheduler=scheduler, clock=scheduler.now_ns)


@contextlib.asynccontextmanager
async def up_and_heard(
    clock: ManualScheduler,
) -> AsyncIterator[tuple[WorldService, list[WorldSnapshot]]]:
    """A running service (1 Hz ticks, 250 ms TTL) whose link is up, and what it publishes."""
    got: list[WorldSnapshot] = []
    async with service(clock, rate_hz=1.0, ttl_ms=250.0) as svc:
        svc.add_listener(got.append)
        clock.advance(10 * MS)
        svc.apply(up(clock.now_ns() - 100 * MS))
        yield svc, got


def run(body: Callable[[ManualScheduler], Awaitable[None]]) -> None:
    async def main() -> None:
        await body(ManualScheduler(start_ns=T0))

    asyncio.run(main())


def test_snapshots_follow_rate_hz_with_consecutive_seq() -> None:
    async def body(clock: ManualScheduler) -> None:
        got: list[WorldSnapshot] = []
        async with service(clock, rate_hz=10.0, publish_on_change=False) as svc:
            svc.add_listener(got.append)
            clock.advance(1_000 * MS)
        assert [s.seq for s in got] == list(range(1, 11))
        assert [s.host_ns - T0 for s in got] == [n * 100 * MS for n in range(1, 11)]
        assert all(s.verdict is Decision.HOLD for s in got)  # nothing seen yet

    run(body)


def test_a_verdict_change_is_published_at_once_and_a_hold_at_its_deadline() -> None:
    """PROCEED the moment the result arrives, HOLD (stale) at capture + TTL exactly, with no
    input in between and the periodic tick a second away."""

    async def body(clock: ManualScheduler) -> None:
        got: list[WorldSnapshot] = []
        async with service(clock, rate_hz=1.0, ttl_ms=250.0) as svc:
            svc.add_listener(got.append)
            clock.advance(10 * MS)
            capture_ns = clock.now_ns() - 20 * MS
            svc.apply(up(capture_ns - 100 * MS))
            svc.apply(observation(capture_ns, rx_ns=clock.now_ns()))
            clock.advance(0)  # the end of this loop turn
            assert [s.verdict for s in got] == [Decision.PROCEED]
            assert got[0].host_ns == clock.now_ns()
            clock.advance(300 * MS)
        assert [s.verdict for s in got] == [Decision.PROCEED, Decision.HOLD]
        assert got[1].host_ns == capture_ns + 250 * MS + 1  # the first nanosecond past the TTL
        assert HoldReason.STALE in got[1].reasons
        held = got[1].targets[0]
        assert held.bearing_camera is None and held.position_ned_m is None

    run(body)


@pytest.mark.parametrize("checked_after_ns", [0, 50_000])
def test_the_reset_frames_snapshot_says_device_reset_however_late_the_check_runs(
    checked_after_ns: int,
) -> None:
    """Offline replay checks at the read's own time, the live host a moment later: with the
    default reset_hold_ms of 0 both publish device_reset for the reset frame (red team: only
    replay did), and neither for the frame after it."""

    async def body(clock: ManualScheduler) -> None:
        async with up_and_heard(clock) as (svc, got):
            clock.advance(33 * MS)
            before = len(got)
            read_ns = clock.now_ns() - checked_after_ns  # the check runs at now
            svc.apply(LinkStatus(read_ns, LinkState.UP, device_reset=True))
            svc.apply(observation(read_ns - 20 * MS, rx_ns=read_ns))
            clock.advance(0)
            reset = got[before:]
            assert reset and HoldReason.DEVICE_RESET in reset[0].reasons
            clock.advance(33 * MS)
            svc.apply(observation(clock.now_ns() - 20 * MS, rx_ns=clock.now_ns()))
            clock.advance(0)
            assert HoldReason.DEVICE_RESET not in got[-1].reasons
            assert HoldReason.DEVICE_RESET not in svc.snapshot().reasons

    run(body)


def test_a_burst_of_inputs_costs_one_snapshot_and_unchanged_verdicts_none() -> None:
    async def body(clock: ManualScheduler) -> None:
        got: list[WorldSnapshot] = []
        async with service(clock, rate_hz=1.0) as svc:
            svc.add_listener(got.append)
            svc.apply(up(clock.now_ns()))
            for n in range(5):  # five frames read in one chunk
                svc.apply(observation(clock.now_ns() - (30 - n) * MS, rx_ns=clock.now_ns()))
            clock.advance(0)
            clock.advance(20 * MS)
            svc.apply(observation(clock.now_ns() - 20 * MS, rx_ns=clock.now_ns()))
            clock.advance(0)  # still PROCEED on the same target: nothing new to say
        assert [s.verdict for s in got] == [Decision.PROCEED]
        assert svc.stats()["inputs"] == 7

    run(body)


def test_a_steady_proceed_is_renewed_before_its_valid_until_runs_out() -> None:
    """One tick a second, a 250 ms TTL: a renewed PROCEED is re-published half-way to its
    ``valid_until_ns``, not on every input, so a consumer honouring it never sees a gap."""

    async def body(clock: ManualScheduler) -> None:
        got: list[WorldSnapshot] = []
        async with service(clock, rate_hz=1.0) as svc:
            svc.add_listener(got.append)
            svc.apply(up(clock.now_ns()))
            for _ in range(30):  # 600 ms of frames, 20 ms old when read
                svc.apply(observation(clock.now_ns() - 20 * MS, rx_ns=clock.now_ns()))
                clock.advance(20 * MS)
        assert {s.verdict for s in got} == {Decision.PROCEED}
        assert 4 <= len(got) <= 6  # about every 115 ms, not 30 times
        for before, after in itertools.pairwise(got):
            assert before.host_ns < after.host_ns <= before.valid_until_ns
            assert after.host_ns >= (before.host_ns + before.valid_until_ns) // 2

    run(body)


def test_iterators_are_bounded_and_end_when_the_service_stops() -> None:
    async def body(clock: ManualScheduler) -> None:
        svc = service(clock, rate_hz=100.0, publish_on_change=False)
        await svc.start()
        slow = svc.snapshots(maxsize=2)
        clock.advance(50 * MS)  # five snapshots for a consumer that takes none
        assert svc.stats()["subscriber_drops"] == 3
        await svc.stop()
        assert [s.seq async for s in slow] == [4, 5]
        assert svc.stats()["subscriber_drops"] == 3  # still counted once the iterator ended
        with pytest.raises(ValueError, match="maxsize"):
            svc.snapshots(maxsize=0)

    run(body)


def test_a_listener_that_raises_is_counted_and_the_others_still_hear() -> None:
    async def body(clock: ManualScheduler) -> None:
        got: list[int] = []

        def broken(_snapshot: WorldSnapshot) -> None:
            raise RuntimeError("consumer bug")

        async with service(clock, rate_hz=50.0, publish_on_change=False) as svc:
            svc.add_listener(broken)
            svc.add_listener(lambda s: got.append(s.seq))
            clock.advance(100 * MS)
            stats = svc.stats()
        assert got == [1, 2, 3, 4, 5]
        assert stats["listener_errors"] == 5 and svc.failure is None

    run(body)


def test_no_timer_before_start_or_after_stop() -> None:
    async def body(clock: ManualScheduler) -> None:
        svc = service(clock)
        svc.apply(up(clock.now_ns()))
        svc.apply(observation(clock.now_ns(), rx_ns=clock.now_ns()))
        assert clock.pending() == []  # applied, but not running: nothing armed
        await svc.start()
        svc.apply(observation(clock.now_ns(), rx_ns=clock.now_ns()))
        assert clock.pending()
        await svc.stop()
        await settle()
        assert clock.pending() == []
        with pytest.raises(RuntimeError, match="already running"):
            await svc.start()
            await svc.start()
        await svc.stop()

    run(body)


def test_each_published_snapshot_carries_its_time_on_the_wall_clock() -> None:
    """``wall_ns`` is the wall clock's mapping of each snapshot's own ``host_ns``."""

    async def body(clock: ManualScheduler) -> None:
        got: list[WorldSnapshot] = []
        model = world(rate_hz=10.0, publish_on_change=False)
        offset_ns = 1_700_000_000_000_000_000
        svc = WorldService(model, scheduler=clock, wall_clock=lambda ns: ns + offset_ns)
        async with svc:
            svc.add_listener(got.append)
            clock.advance(300 * MS)
        assert [s.wall_ns for s in got] == [T0 + n * 100 * MS + offset_ns for n in (1, 2, 3)]
        assert got[0].to_dict()["wall_ns"] == T0 + 100 * MS + offset_ns

    run(body)


_RESULT = st.tuples(
    st.sampled_from(list(SequenceEvent)),
    st.sampled_from(list(ClockStatus)),
    st.sampled_from([0, 1, 5]),  # no target, a face, a pedestrian
    st.sampled_from([0, 1, 3, 5]),  # flags: tracked, lost
    st.sampled_from([0, 300, 2_500]),  # x: 2 500 is off the spec's scale (dropped, counted)
    st.integers(0, 3),  # the device clock's epoch
    st.booleans(),  # a capture time, or none (the receive time stands in)
)


@given(st.lists(_RESULT | st.sampled_from(list(LinkState)), max_size=30))
def test_a_result_on_gizmo_applies_what_the_adapters_result_gives(messages) -> None:
    """``on_gizmo`` applies a result's observation without ``GizmoAdapter.result``'s tuple:
    every input, count and verdict is what applying ``result``'s items gives, device resets
    (the marker first), boxes off the scale, every clock status and link state alike."""
    direct, twin = WorldService(world()), WorldService(world())
    t = 1_000 * MS
    previous = LinkState.DOWN
    for k, message in enumerate(messages):
        t += 7 * MS
        if isinstance(message, LinkState):
            event = LinkEvent(message, previous, t, "test", "/dev/test", k)
            previous = message
            direct.on_gizmo(event)
            twin.apply(twin.gizmo.link(event))
            continue
        sequence_event, status, result_type, flags, x, epoch, captured = message
        result = VisionResult(
            sequence=k, result_type=result_type, result_sequence=k, confidence=80, flags=flags,
            x=x, y=-30, w=200, h=300, id=11, timestamp_ms=k,
        )  # fmt: skip
        received = ReceivedResult(
            result, t, t - 20 * MS if captured else None, k, epoch, status, sequence_event, t
        )
        direct.on_gizmo(received)
        for item in twin.gizmo.result(received):
            twin.apply(item)
    assert direct.stats() == twin.stats()
    assert direct.snapshot(t).verdict_key() == twin.snapshot(t).verdict_key()


class _NotAnInput:
    """What an adapter's bug could hand the model: it raises on it (``TypeError``)."""


def test_an_input_the_model_raises_on_holds_with_model_fault_until_data_is_good_again() -> None:
    """Before, the exception went up to the link's listener wrapper (counted) and the model
    went on judging from a half-applied input; now the model drops what it held and HOLDs,
    published at once, until a measurement is placed again."""

    async def body(clock: ManualScheduler) -> None:
        async with up_and_heard(clock) as (svc, got):
            svc.apply(observation(clock.now_ns() - 20 * MS, rx_ns=clock.now_ns()))
            clock.advance(0)
            assert [s.verdict for s in got] == [Decision.PROCEED]
            clock.advance(10 * MS)
            svc.apply(_NotAnInput())  # type: ignore[arg-type]
            clock.advance(0)  # the check at the end of this loop turn
            assert [s.verdict for s in got] == [Decision.PROCEED, Decision.HOLD]
            assert HoldReason.MODEL_FAULT in got[-1].reasons and got[-1].targets == ()
            assert got[-1].host_ns == clock.now_ns()
            assert svc.stats()["input_errors"] == 1 and svc.stats()["inputs"] == 2
            clock.advance(10 * MS)
            svc.apply(observation(clock.now_ns() - 20 * MS, rx_ns=clock.now_ns()))
            clock.advance(0)
        assert [s.verdict for s in got] == [Decision.PROCEED, Decision.HOLD, Decision.PROCEED]
        assert HoldReason.MODEL_FAULT not in got[-1].reasons

    run(body)


@interpreted_only(placement, "injects a placement bug into the model's Placer")
def test_a_placement_that_raises_when_its_wait_ends_faults_the_model_too() -> None:
    """The same failure met one step later (review 7): a measurement newer than the newest
    pose waits, and is placed when its wait ends, by a verdict check rather than ``apply``.
    Raising there faults the model as well; before, the deadline latched a service failure and
    the next tick published the PROCEED of a measurement received before it."""
    bad_capture: list[int] = []

    async def body(clock: ManualScheduler) -> None:
        got: list[WorldSnapshot] = []
        model = world(rate_hz=1.0, ttl_ms=2_000.0, pose_ttl_ms=2_000.0, pose_required=True)
        real_place = model._placer.place

        def place(obs, arrival, waited, required, empty=None):  # type: ignore[no-untyped-def]
            if bad_capture and obs.host_capture_ns == bad_capture[0] and waited:
                raise RuntimeError("a placement bug (as issue 31's succession fault)")
            return real_place(obs, arrival, waited, required, empty)

        model._placer.place = place  # type: ignore[method-assign]
        async with WorldService(model, scheduler=clock, clock=clock.now_ns) as svc:
            svc.add_listener(got.append)
            t = clock.now_ns()
            svc.apply(up(t - 500 * MS))
            svc.apply(pose(t - 100 * MS))
            svc.apply(pose(t))
            svc.apply(observation(t - 50 * MS, rx_ns=t))
            clock.advance(0)
            assert got and got[-1].verdict is Decision.PROCEED
            clock.advance(10 * MS)
            t = clock.now_ns()
            bad_capture.append(t - 5 * MS)  # newer than the newest pose: it waits
            svc.apply(observation(t - 5 * MS, rx_ns=t))
            assert svc.model.stats()["pending"] == 1
            clock.advance(30 * MS)  # its wait ends: the deadline's check places it, and raises
            clock.advance(1_000 * MS)  # the next tick
            assert svc.failure is None and svc.stats()["input_errors"] == 1
        after = [s for s in got if s.host_ns >= T0 + 30 * MS]
        assert after and all(s.verdict is Decision.HOLD for s in after)
        assert HoldReason.MODEL_FAULT in after[0].reasons

    run(body)
