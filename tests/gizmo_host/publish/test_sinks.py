"""Bounded per-sink queues: a slow sink drops its oldest lines (counted) and never delays
another; stdout on a real pipe nobody reads never blocks the loop, and a gone reader counts."""

from __future__ import annotations

import asyncio
import json
import os

from hypothesis import given
from hypothesis import strategies as st

from gizmo_host.publish.lines import JsonLinesPublisher, encode_line
from gizmo_host.publish.sinks import LineQueue, QueuedSink, stdout_sink
from gizmo_host.timing import ManualScheduler

TIMEOUT_S = 5.0


class Valve:
    """A writer that takes nothing until opened, then everything (a reader that stalls)."""

    def __init__(self) -> None:
        self.open = False
        self.out = bytearray()

    def __call__(self, data: bytes | memoryview) -> int:
        if not self.open:
            raise BlockingIOError
        self.out += data
        return len(data)


class Collect:
    name = "collect"

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def send(self, line: bytes) -> None:
        self.lines.append(line)

    def stats(self) -> dict[str, int]:
        return {"queued": len(self.lines), "dropped": 0, "disconnected": 0}


def seq_line(clock: ManualScheduler, n: int) -> bytes:
    """Line ``n``, the same length for every ``n`` below 10,000."""
    return encode_line({"type": "t", "n": n, "pad": "_" * (4 - len(str(n))), "at": clock.now_ns()})


def test_a_slow_sink_drops_its_oldest_lines_while_another_gets_everything():
    clock = ManualScheduler()
    valve = Valve()
    slow = QueuedSink("slow", valve, None, max_bytes=10 * len(seq_line(clock, 0)))
    fast = Collect()
    publisher = JsonLinesPublisher(clock=clock.now_ns)
    publisher.add_sink(slow)
    publisher.add_sink(fast)
    for n in range(100):
        clock.advance(1_000_000)
        publisher.send_line(seq_line(clock, n))
    assert [json.loads(line)["n"] for line in fast.lines] == list(range(100))
    stats = slow.stats()
    assert stats["queued"] == 100 and stats["written"] == 0
    assert stats["dropped"] == 90 and stats["disconnected"] == 0
    assert stats["pending_bytes"] == 10 * len(seq_line(clock, 0))
    valve.open = True  # the reader is back: it gets the newest lines, whole, in order
    clock.advance(1_000_000)
    publisher.send_line(seq_line(clock, 100))
    got = [json.loads(line)["n"] for line in bytes(valve.out).splitlines()]
    assert got == list(range(91, 101))
    assert publisher.sink_stats()["slow"] == {
        "queued": 101,
        "written": 10,
        "dropped": 91,
        "expired": 0,
        "disconnected": 0,
        "errors": 0,
        "pending_bytes": 0,
    }


@given(
    lengths=st.lists(st.integers(1, 50), min_size=1, max_size=60),
    max_bytes=st.integers(1, 200),
    first_write=st.integers(0, 49),
)
def test_line_queue_keeps_whole_newest_lines_within_budget(lengths, max_bytes, first_write):
    queue = LineQueue(max_bytes)
    lines = [bytes([65 + i % 26]) * (n - 1) + b"\n" for i, n in enumerate(lengths)]
    queue.push(lines[0])
    started = min(first_write, len(lines[0]) - 1)
    if started:
        queue.consumed(started)  # a partly written head line is always finished
    for line in lines[1:]:
        queue.push(line)
    out = bytearray(lines[0][:started])  # what the reader already has
    while queue:
        head = queue.head()
        out += head
        queue.consumed(len(head))
    kept = bytes(out).splitlines(keepends=True)
    assert queue.dropped + len(kept) == len(lines) and queue.nbytes == 0
    assert kept[-1] == lines[-1]  # the newest line is never dropped
    newest = kept[1:] if started else kept  # the lines not started when they were queued
    assert newest == lines[len(lines) - len(newest) :]
    if started:
        assert kept[0] == lines[0]
    budget = max_bytes + (len(lines[0]) - started if started else 0)
    assert len(newest) <= 1 or sum(map(len, kept)) - started <= budget


def test_stdout_on_a_pipe_nobody_reads_never_blocks_and_shutdown_drops_the_rest():
    async def main() -> None:
        read_fd, write_fd = os.pipe()
        try:
            sink = stdout_sink(write_fd, max_bytes=64 * 1024)
            line = b"x" * 999 + b"\n"
            for _ in range(1000):  # 1 MB: far more than the pipe (64 KiB) and the queue hold
                sink.send(line)
            stats = sink.stats()
            assert stats["written"] >= 1 and stats["dropped"] >= 800
            assert stats["pending_bytes"] <= 64 * 1024
            assert os.get_blocking(write_fd)  # our own description is non-blocking, not this
            loop = asyncio.get_running_loop()
            started = loop.time()
            await sink.close(flush_s=0.2)  # nobody reads: it gives up, never hangs
            assert loop.time() - started < TIMEOUT_S
            assert sink.stats()["pending_bytes"] == 0 and sink.closed
            assert sink.stats()["dropped"] + sink.stats()["written"] == 1000
            data = b""
            os.set_blocking(read_fd, False)
            while True:
                try:
                    chunk = os.read(read_fd, 1 << 16)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                data += chunk
            assert data and set(data.splitlines(keepends=True)) == {line}  # whole lines only
        finally:
            os.close(read_fd)
            os.close(write_fd)

    asyncio.run(main())


def test_a_stalled_pipe_drains_when_its_reader_comes_back():
    async def main() -> None:
        read_fd, write_fd = os.pipe()
        try:
            sink = stdout_sink(write_fd, max_bytes=1 << 20)
            line = b"y" * 99 + b"\n"
            for _ in range(2000):  # 200 kB: the pipe takes 64 KiB, the rest waits in the queue
                sink.send(line)
            assert sink.stats()["pending_bytes"] > 0
            reader = asyncio.StreamReader()
            loop = asyncio.get_running_loop()
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0)
            )
            data = await asyncio.wait_for(reader.readexactly(2000 * len(line)), TIMEOUT_S)
            assert data == line * 2000
            assert sink.stats()["written"] == 2000 and sink.stats()["dropped"] == 0
            await sink.close()
            transport.close()
        finally:
            os.close(write_fd)

    asyncio.run(main())


def test_a_reader_that_goes_away_disconnects_the_sink():
    async def main() -> None:
        read_fd, write_fd = os.pipe()
        try:
            sink = stdout_sink(write_fd)
            sink.send(b"{}\n")
            os.close(read_fd)
            sink.send(b"{}\n")  # EPIPE (SIGPIPE is ignored by Python)
            sink.send(b"{}\n")
            assert sink.stats()["disconnected"] == 1
            assert sink.stats()["written"] == 1 and sink.stats()["dropped"] == 2
            await sink.close()
        finally:
            os.close(write_fd)

    asyncio.run(main())


def test_a_closed_stdout_disconnects_at_the_first_line():
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    os.close(write_fd)  # as ``gizmo-host run >&-`` leaves fd 1
    sink = stdout_sink(write_fd)
    sink.send(b"{}\n")
    sink.send(b"{}\n")
    assert sink.stats()["disconnected"] == 1 and sink.stats()["dropped"] == 2
