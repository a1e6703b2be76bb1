"""A read is one chunk: its frames applied in order, the verdicts evaluated after all of them,
and everything it produced handed over at once (one list to a batch listener, one write per
sink), on a manual clock through the link's own per-read entry point."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gizmo_core import Decision, HoldReason, Selector
from gizmo_host.live.link_config import LinkConfig
from gizmo_host.live.service import GizmoService
from gizmo_host.publish.lines import JsonLinesPublisher
from gizmo_host.publish.sinks import QueuedSink
from gizmo_host.rigs.board import BoardModel
from gizmo_host.stream.events import LinkEvent, ReceivedResult
from gizmo_host.stream.linkstate import REASON_OPENED, LinkInput
from gizmo_host.stream.store import LinkVerdict
from gizmo_host.timing import ManualScheduler
from gizmo_host.wire.protocol import ResultFlags

MS = 1_000_000
PERIOD_MS = 33


class Harness:
    """A service on a manual clock, its port opened by hand; ``read`` is one tty read."""

    def __init__(self) -> None:
        self.scheduler = ManualScheduler()
        self.service = GizmoService(LinkConfig("/dev/gizmo0"), scheduler=self.scheduler)
        self.service.watch(Selector())
        self.batches: list[list[object]] = []
        self.items: list[object] = []
        self.service.add_listener(self.items.append)
        self.service.add_batch_listener(lambda batch: self.batches.append(list(batch)))
        self.service.start(run_link=False)
        self.service.link.replay_input(LinkInput.OPEN_STARTED, "opening")
        self.service.link.replay_input(LinkInput.OPENED, REASON_OPENED)
        self.board = BoardModel(period_ms=PERIOD_MS, latency_ms=12)

    def read(self, *frames: bytes) -> None:
        self.service.link.replay_chunk(b"".join(frames))

    def steady(self, count: int) -> None:
        """``count`` frames, one read each at the board's pace: the clock locks."""
        for _ in range(count):
            self.scheduler.advance(PERIOD_MS * MS)
            self.read(self.board.next_frame())


def test_a_read_of_many_frames_is_one_batch_of_results_then_its_verdict():
    h = Harness()
    h.scheduler.advance(PERIOD_MS * MS)
    frames = [h.board.next_frame() for _ in range(12)]  # a backlog: the run path
    before = len(h.batches)
    h.read(*frames)
    new = h.batches[before:]
    link_up, chunk = new  # UP comes with the read that holds the first frames, on its own
    assert [type(m) for m in link_up] == [LinkEvent]
    results = [m for m in chunk if isinstance(m, ReceivedResult)]
    assert [r.result.encode() for r in results] == frames
    assert chunk[: len(results)] == results  # results first, in order, then the verdict
    (verdict,) = chunk[len(results) :]
    assert isinstance(verdict, LinkVerdict) and verdict.decision is Decision.HOLD
    # The same messages, in the same order, reach a listener that takes them one at a time.
    assert h.items == [m for batch in h.batches for m in batch]


def test_a_lost_frame_at_the_end_of_a_read_holds_what_the_read_began_with():
    # The verdict is evaluated once every frame of the read is applied: a read whose first
    # frames show the target and whose last says it is lost publishes HOLD (lost), never a
    # PROCEED for the frames before.
    h = Harness()
    h.steady(45)  # 1.5 s: the device clock is locked
    proceeds = [m for m in h.items if isinstance(m, LinkVerdict) and m.proceed]
    assert proceeds, "a steady stream must reach PROCEED first"
    h.scheduler.advance(PERIOD_MS * MS)
    before = len(h.batches)
    lost = int(ResultFlags.LOST | ResultFlags.RELATIVE)
    h.read(h.board.next_frame(), h.board.next_frame(), h.board.next_frame(flags=lost))
    (chunk,) = h.batches[before:]
    verdicts = [m for m in chunk if isinstance(m, LinkVerdict)]
    assert [v.decision for v in verdicts] == [Decision.HOLD]
    assert HoldReason.LOST in verdicts[0].reasons
    assert [type(m) for m in chunk[:3]] == [ReceivedResult] * 3


@pytest.mark.parametrize(
    "flags",
    [
        ResultFlags.TRACKED | ResultFlags.RELATIVE,  # NONE with the tracked bit: red team
        ResultFlags.TRACKED,
        ResultFlags.RELATIVE,
        ResultFlags.LOST,
    ],
)
def test_a_nothing_tracked_frame_ends_the_proceed_at_its_own_read(flags):
    # The spec's result_type 0 (NONE) is the board's "not detected" frame: it ends every
    # earlier result of its source, whatever its flags say. The read that holds it publishes
    # the HOLD; the PROCEED does not stand until its target's TTL runs out.
    h = Harness()
    h.steady(45)
    proceeds = [m for m in h.items if isinstance(m, LinkVerdict) and m.proceed]
    assert proceeds, "a steady stream must reach PROCEED first"
    h.scheduler.advance(PERIOD_MS * MS)
    before = len(h.batches)
    h.read(h.board.next_frame(result_type=0, id=0, flags=int(flags)))
    (chunk,) = h.batches[before:]
    verdicts = [m for m in chunk if isinstance(m, LinkVerdict)]
    assert [v.decision for v in verdicts] == [Decision.HOLD]
    assert HoldReason.LOST in verdicts[0].reasons and verdicts[0].result is None


@pytest.mark.parametrize("evaluated_after_ns", [0, 50_000])
def test_the_reset_frames_verdict_says_device_reset_however_late_it_is_evaluated(
    evaluated_after_ns,
):
    # Offline replay evaluates a read's verdicts at the read's own time; the live host a
    # moment later (its clock moved on). With the default reset_hold_ms of 0 both publish
    # device_reset on the reset frame's verdict (red team: only replay did), and neither on
    # the next frame's.
    h = Harness()
    h.steady(45)
    h.scheduler.advance(PERIOD_MS * MS)
    h.board.reset(boot_ms=300)
    before = len(h.batches)
    read_ns = h.scheduler.now_ns() - evaluated_after_ns
    h.service.link._data_received(h.board.next_frame(), now_ns=read_ns)
    (chunk,) = h.batches[before:]
    (result,) = [m for m in chunk if isinstance(m, ReceivedResult)]
    assert result.sequence_event.value == "reset"
    verdicts = [m for m in chunk if isinstance(m, LinkVerdict)]
    assert [v.decision for v in verdicts] == [Decision.HOLD]
    assert HoldReason.DEVICE_RESET in verdicts[0].reasons
    h.scheduler.advance(PERIOD_MS * MS)
    h.service.link._data_received(h.board.next_frame(), now_ns=h.scheduler.now_ns())
    now = h.service.pipeline.verdict(Selector(), h.scheduler.now_ns())
    assert now.decision is Decision.HOLD and HoldReason.DEVICE_RESET not in now.reasons


class Sink:
    """A line sink with ``send_lines``: records each call."""

    name = "sink"

    def __init__(self) -> None:
        self.calls: list[list[bytes]] = []

    def send(self, line: bytes) -> None:
        self.calls.append([line])

    def send_lines(self, lines: list[bytes]) -> None:
        self.calls.append(list(lines))

    def stats(self) -> dict[str, int]:
        return {}


class LineSink(Sink):
    """A sink with ``send`` only."""

    send_lines = None  # type: ignore[assignment]


def test_the_publisher_hands_a_reads_lines_to_each_sink_at_once():
    h = Harness()
    h.scheduler.advance(PERIOD_MS * MS)
    frames = [h.board.next_frame() for _ in range(5)]
    h.read(frames[0])  # UP and the first verdict
    publisher = JsonLinesPublisher(clock=h.scheduler.now_ns)
    together, single = Sink(), LineSink()
    publisher.add_sink(together)
    publisher.add_sink(single)
    h.service.add_batch_listener(publisher.publish_batch)
    h.scheduler.advance(PERIOD_MS * MS)
    h.read(*frames[1:])
    (lines,) = together.calls
    assert [json.loads(line)["result"]["sequence"] for line in lines] == [1, 2, 3, 4]
    assert single.calls == [[line] for line in lines]
    # Each line is what the publisher makes of that message alone, at that time.
    alone = JsonLinesPublisher(clock=h.scheduler.now_ns)
    one = Sink()
    alone.add_sink(one)
    for message in h.batches[-1]:
        alone(message)
    assert [call[0] for call in one.calls] == lines


class Writer:
    """A non-blocking descriptor: takes at most ``budget`` bytes in all, then would block
    until ``open``; records every write call."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.out = bytearray()
        self.calls = 0

    def __call__(self, data: bytes | memoryview) -> int:
        self.calls += 1
        n = min(len(data), self.budget)
        if n == 0:
            raise BlockingIOError
        self.budget -= n
        self.out += data[:n]
        return n


@given(
    lengths=st.lists(st.integers(1, 60), min_size=1, max_size=30),
    budget=st.integers(0, 2000),
)
def test_send_lines_is_one_write_and_queues_what_is_left_as_send_would(lengths, budget):
    lines = [bytes([65 + i % 26]) * (n - 1) + b"\n" for i, n in enumerate(lengths)]
    batched, each = Writer(budget), Writer(budget)
    together = QueuedSink("together", batched, None)
    apart = QueuedSink("apart", each, None)
    together.send_lines(lines)
    for line in lines:
        apart.send(line)
    assert batched.calls == 1  # one system call for the whole read, however it went
    assert bytes(batched.out) == bytes(each.out)
    assert together.stats() == apart.stats()
    # The reader comes back: the rest arrives whole and in order.
    for writer, sink in ((batched, together), (each, apart)):
        writer.budget = 10**9
        sink._drain()
        assert bytes(writer.out) == b"".join(lines)
    assert together.stats() == apart.stats()
