"""Consumers that fall behind (issue 29): a sink never writes a line whose ``valid_until_ns``
has passed, it counts the ones it skipped, and lines without validity (link transitions,
stats) are still delivered in order. Through a real pipe and a real Unix socket; the time that
decides expiry is a manual clock, so nothing here sleeps or depends on the machine's speed.
The 17th socket client of 16 idle ones is refused, told why, counted and logged once."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gizmo_host.publish.lines import encode_line
from gizmo_host.publish.sinks import LineQueue, stdout_sink, valid_until_ns
from gizmo_host.publish.unix_socket import UnixSocketServer
from gizmo_host.stream.clock import ClockStatus
from gizmo_host.stream.events import ReceivedResult, version_message
from gizmo_host.stream.tracker import SequenceEvent
from gizmo_host.timing import ManualScheduler
from tests.support.pipes import full_pipe
from tests.support.schemas import validate_as
from tests.support.strategies import vision_results

TIMEOUT_S = 5.0
MS = 1_000_000
CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def line(n: int, until_ns: int | None, pad: int = 200) -> bytes:
    body: dict = {"type": "verdict" if until_ns is not None else "link", "n": n}
    if until_ns is not None:
        body["valid_until_ns"] = until_ns
    body["pad"] = "." * pad
    return encode_line(body)


def numbers(data: bytes) -> list[int]:
    """The ``n`` of each whole line (after the pipe's filler, which has no newline)."""
    return [
        json.loads(x.lstrip(b"#"))["n"] for x in data.splitlines(keepends=True) if x[-1:] == b"\n"
    ]


# -- reading a line's validity --------------------------------------------------------------


def test_every_line_the_host_wrote_in_the_goldens_reads_its_own_validity():
    """The oracle is the JSON parser: the top-level ``valid_until_ns`` of each real line
    (result, verdict, world; none for link, stats)."""
    kinds: set[str] = set()
    for path in sorted(CAPTURES.glob("*.golden.jsonl")):
        for raw in path.read_bytes().splitlines(keepends=True):
            message = json.loads(raw)
            kinds.add(message["type"])
            assert valid_until_ns(raw) == message.get("valid_until_ns"), (path.name, raw[:80])
    assert kinds >= {"result", "verdict", "world", "link", "stats"}


@given(
    result=vision_results,
    rx_ns=st.integers(0, 2**62),
    capture=st.one_of(st.none(), st.integers(0, 2**62)),
    until=st.integers(0, 2**62),
)
def test_a_result_line_reads_its_validity_whatever_its_fields(result, rx_ns, capture, until):
    received = ReceivedResult(
        result, rx_ns, capture, 5, 0, ClockStatus.LOCKED, SequenceEvent.IN_ORDER, until
    )
    assert valid_until_ns(received.to_json_line(rx_ns)) == until


def test_a_quoted_key_inside_a_string_is_not_the_lines_validity():
    tricky = encode_line({"type": "link", "reason": '"valid_until_ns":1', "n": 0})
    assert valid_until_ns(tricky) is None
    assert valid_until_ns(encode_line({"type": "x", "valid_until_ns": None})) is None


# -- the queue ------------------------------------------------------------------------------


def test_over_its_budget_a_queue_drops_expired_lines_before_the_oldest_valid_ones():
    queue = LineQueue(max_bytes=5 * len(line(0, 0)))
    queue.push(line(0, None))  # no validity: kept
    for n in (1, 2, 3):
        queue.push(line(n, 100))
    queue.push(line(4, 900))
    queue.push(line(5, 900), now_ns=500)  # over budget at 500: 1, 2, 3 expired
    assert queue.expired == 3 and queue.dropped == 0 and len(queue) == 3
    got = []
    while queue:
        got.append(json.loads(queue.pop())["n"])
    assert got == [0, 4, 5] and queue.nbytes == 0


def test_a_half_written_line_is_finished_even_if_it_expired_meanwhile():
    queue = LineQueue(max_bytes=1 << 20)
    queue.push(line(1, 100))
    queue.push(line(2, 100))
    queue.consumed(10)  # the reader has part of line 1: cutting it would corrupt the stream
    queue.skip_expired(now_ns=500)
    assert len(queue) == 2 and queue.expired == 0
    queue.consumed(len(queue.head()))
    queue.skip_expired(now_ns=500)
    assert len(queue) == 0 and queue.expired == 1


# -- a real stalled pipe --------------------------------------------------------------------


def test_a_stalled_pipe_gets_the_current_lines_after_the_stall_not_the_backlog():
    """Everything queues (the pipe is full). While the reader stalls, 300 lines expire; the
    link line among them does not. When it reads again it gets the link line, then the lines
    still valid, in order, and the sink counts the 300."""
    clock = ManualScheduler(start_ns=0)

    async def main() -> tuple[list[int], dict]:
        read_fd, write_fd = full_pipe()
        try:
            sink = stdout_sink(write_fd, clock=clock.now_ns)
            for n in range(300):
                sink.send(line(n, clock.now_ns() + 100 * MS))
                if n == 150:
                    sink.send(line(1000, None))  # a transition: true of its time, kept
                clock.advance(MS)
            clock.advance(1_000 * MS)  # the stall: all 300 are stale now
            for n in range(300, 310):
                sink.send(line(n, clock.now_ns() + 100 * MS))
            assert sink.stats()["written"] == 0
            reader = asyncio.StreamReader()
            loop = asyncio.get_running_loop()
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0)
            )
            data = b""
            while numbers(data)[-1:] != [309]:
                data += await asyncio.wait_for(reader.read(1 << 16), TIMEOUT_S)
            stats = sink.stats()
            await sink.close()
            transport.close()
            return numbers(data), stats
        finally:
            os.close(write_fd)

    got, stats = asyncio.run(main())
    assert got == [1000, *range(300, 310)]
    assert stats["expired"] == 300 and stats["dropped"] == 0
    assert stats["queued"] == 311 == stats["written"] + stats["expired"]


# -- a real Unix socket ---------------------------------------------------------------------


@pytest.fixture
def socket_path(tmp_path):
    return str(tmp_path / "results.sock")


def test_a_socket_client_back_from_a_stall_skips_what_expired_while_it_was_away(socket_path):
    """The client stops reading. Lines go to its transport until that is full, then wait in its
    queue. The clock moves past their validity; when it reads again it gets what had already
    left (a prefix, written while valid), the link line, and the current lines: none of the
    queued lines that expired, and the server counts exactly those."""
    clock = ManualScheduler(start_ns=0)

    async def main() -> tuple[list[int], dict]:
        version = encode_line(version_message("0.1.0", "/dev/gizmo0"))
        server = UnixSocketServer(
            socket_path, version, max_buffer_bytes=4 << 20, clock=clock.now_ns
        )
        await server.start()
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            client.connect(socket_path)
            reader, writer = await asyncio.open_unix_connection(sock=client)
            greeting = json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT_S))
            validate_as(greeting, "version")
            stalled = 3000  # ~700 kB: far beyond the kernel's buffers and the transport's
            for n in range(stalled):
                server.send(line(n, clock.now_ns() + 100 * MS))
                if n == stalled - 10:
                    server.send(line(100_000, None))
                clock.advance(MS // 10)
            clock.advance(1_000 * MS)
            for n in range(stalled, stalled + 10):
                server.send(line(n, clock.now_ns() + 100 * MS))
            got: list[int] = []
            while got[-1:] != [stalled + 9]:
                raw = await asyncio.wait_for(reader.readline(), TIMEOUT_S)
                got.append(json.loads(raw)["n"])
            writer.close()
            return got, server.stats()
        finally:
            client.close()
            await server.close()

    got, stats = asyncio.run(main())
    stalled = 3000
    link_at = got.index(100_000)
    prefix, rest = got[:link_at], got[link_at + 1 :]
    assert prefix == list(range(len(prefix)))  # what had left before the stall, in order
    assert 0 < len(prefix) < stalled - 10  # some had to wait in the queue
    assert rest == list(range(stalled, stalled + 10))
    assert stats["expired"] == stalled - len(prefix)
    assert stats["disconnected"] == 0 and stats["dropped"] == 0


def test_a_17th_client_is_refused_while_16_idle_clients_hold_the_socket(socket_path, caplog):
    """Issue 29: refused, told why (with who holds the slots), counted, and logged once per
    interval however often it retries."""

    async def main() -> tuple[list[dict], dict]:
        server = UnixSocketServer(socket_path, b'{"type":"version"}\n')
        await server.start()
        idle = []
        refusals = []
        try:
            for _ in range(16):
                reader, writer = await asyncio.open_unix_connection(socket_path)
                json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT_S))
                idle.append(writer)  # connected, reading nothing more, never behind
            for _ in range(5):  # one that retries at once
                reader, writer = await asyncio.open_unix_connection(socket_path)
                answer = await asyncio.wait_for(reader.read(), TIMEOUT_S)  # a line, then EOF
                assert answer.count(b"\n") == 1
                refusals.append(json.loads(answer))
                writer.close()
            return refusals, server.stats()
        finally:
            for writer in idle:
                writer.close()
            await server.close()

    with caplog.at_level(logging.WARNING, logger="gizmo_host.publish.unix_socket"):
        refusals, stats = asyncio.run(main())
    for refusal in refusals:
        validate_as(refusal, "error")
        assert refusal["reason"] == "too_many_clients"
    first = refusals[0]["socket"]
    assert first["clients"] == first["max_clients"] == 16 and first["refused"] == 1
    assert [p["pid"] for p in first["peers"]] == [os.getpid()] * 16
    assert [r["socket"]["refused"] for r in refusals] == [1, 2, 3, 4, 5]
    assert stats["refused"] == 5 and stats["clients"] == 16 and stats["evicted"] == 0
    logged = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(logged) == 1 and "16 client slots" in logged[0].getMessage()
