"""JSON Lines sinks over real sockets: Unix stream clients (fast and stalled) and UDP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gizmo_core import Decision, HoldReason, LinkState, Selector
from gizmo_host.app.host_config import parse_host_port
from gizmo_host.jsonl import encode_line
from gizmo_host.publish import unix_socket
from gizmo_host.publish.lines import JsonLinesPublisher
from gizmo_host.publish.sinks import stdout_sink, udp_sink
from gizmo_host.publish.unix_socket import UnixSocketServer
from gizmo_host.stream.clock import ClockStatus
from gizmo_host.stream.events import LinkEvent, ReceivedResult, version_message
from gizmo_host.stream.store import LinkVerdict
from gizmo_host.stream.tracker import SequenceEvent
from tests.support.schemas import validate_as
from tests.support.strategies import vision_results

TIMEOUT_S = 5.0


def link_event(n: int) -> LinkEvent:
    return LinkEvent(
        LinkState.UP,
        LinkState.SYNCING,
        10**9 + n,
        "valid frame received" + "." * 900,
        "/dev/gizmo0",
        n,
    )


def greeting(line: bytes) -> dict:
    """A greeting line without its ``socket`` object (the server's counts at the connection)."""
    message = json.loads(line)
    assert set(message.pop("socket")) >= {"clients", "max_clients", "refused", "peers"}
    return message


@pytest.fixture
def socket_path(tmp_path):
    return str(tmp_path / "results.sock")


def test_clients_get_the_version_first_then_every_line(socket_path):
    async def main():
        server = UnixSocketServer(socket_path, encode_line(version_message("0.1.0", "/dev/x")))
        await server.start()
        publisher = JsonLinesPublisher(clock=lambda: 5)
        publisher.add_sink(server)
        try:
            clients = [await asyncio.open_unix_connection(socket_path) for _ in range(3)]
            versions = [
                json.loads(await asyncio.wait_for(r.readline(), TIMEOUT_S)) for r, _ in clients
            ]
            for version in versions:
                validate_as(version, "version")
            assert server.client_count == 3
            for n in range(1, 4):
                publisher(link_event(n))
            publisher.publish_batch([link_event(n) for n in range(4, 8)])  # one read's worth
            for reader, _ in clients:
                lines = [
                    json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT_S))
                    for _ in range(7)
                ]
                assert [line["transitions"] for line in lines] == [1, 2, 3, 4, 5, 6, 7]
                for line in lines:
                    validate_as(line, "link")
            for _, writer in clients:
                writer.close()
        finally:
            await server.close()

    asyncio.run(main())


def test_a_stalled_client_is_dropped_and_does_not_delay_the_others(socket_path):
    async def main():
        server = UnixSocketServer(socket_path, b'{"type":"version"}\n', max_buffer_bytes=32_768)
        await server.start()
        publisher = JsonLinesPublisher()
        publisher.add_sink(server)
        stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect(socket_path)  # never reads
        try:
            reader, writer = await asyncio.open_unix_connection(socket_path)
            await reader.readline()
            while server.client_count < 2:  # the stalled client's handler has run
                await asyncio.sleep(0)
            received: list[int] = []

            async def read_all(count: int) -> None:
                while len(received) < count:
                    line = await reader.readline()
                    received.append(json.loads(line)["transitions"])

            total = 2000  # ~2 MB: far more than the stalled client's buffers hold
            fast_reader = asyncio.create_task(read_all(total))
            for n in range(1, total + 1):
                publisher(link_event(n))  # synchronous: it cannot wait for anyone
                await asyncio.sleep(0)
                # The fast client is never more than a few lines behind the publisher.
                assert n - len(received) < 64
            await asyncio.wait_for(fast_reader, TIMEOUT_S)
            assert received == list(range(1, total + 1))
            assert server.clients_dropped == 1 and server.client_count == 1
            writer.close()
        finally:
            stalled.close()
            await server.close()

    asyncio.run(main())


def test_udp_sink_sends_one_datagram_per_line_and_counts_refusals():
    async def main():
        receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        receiver.bind(("127.0.0.1", 0))
        receiver.setblocking(False)
        port = receiver.getsockname()[1]
        sink = await udp_sink(*parse_host_port(f"127.0.0.1:{port}"))
        publisher = JsonLinesPublisher()
        publisher.add_sink(sink)
        loop = asyncio.get_running_loop()
        try:
            for n in range(1, 4):
                publisher(link_event(n))
            got = [
                json.loads(await asyncio.wait_for(loop.sock_recv(receiver, 65536), TIMEOUT_S))
                for _ in range(3)
            ]
            assert [g["transitions"] for g in got] == [1, 2, 3]
            receiver.close()  # nobody listens now: sends are refused, never raised
            deadline = loop.time() + TIMEOUT_S
            n = 4
            while sink.errors == 0:  # the loopback ICMP refusal comes back on the next turns
                assert loop.time() < deadline, "a refused datagram was never counted"
                publisher(link_event(n))
                n += 1
                await asyncio.sleep(0)
            assert sink.errors >= 1 and publisher.lines == n - 1
            assert sink.stats()["disconnected"] == 0  # a refusal is not the end: keep sending
        finally:
            await sink.close()
            receiver.close()

    asyncio.run(main())


def test_stdout_sink_on_a_regular_file_writes_every_line(tmp_path):
    path = tmp_path / "out.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        sink = stdout_sink(fd)
        publisher = JsonLinesPublisher()
        publisher.add_sink(sink)
        for n in range(1, 4):
            publisher(link_event(n))
        asyncio.run(sink.close())
    finally:
        os.close(fd)
    lines = path.read_bytes().splitlines()
    assert [json.loads(line)["transitions"] for line in lines] == [1, 2, 3]
    assert sink.stats()["written"] == 3 and sink.stats()["dropped"] == 0


@pytest.mark.parametrize("text", ["localhost", "host:0", "host:70000", ":9", "h:x"])
def test_bad_udp_address_names_the_expected_form(text):
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_host_port(text)


def test_stale_socket_file_is_replaced(socket_path):
    async def main():
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(socket_path)
        stale.close()  # the file stays, as after a crash
        server = UnixSocketServer(socket_path, b"{}\n")
        await server.start()
        reader, writer = await asyncio.open_unix_connection(socket_path)
        assert greeting(await asyncio.wait_for(reader.readline(), TIMEOUT_S)) == {}
        writer.close()
        await server.close()
        assert not os.path.exists(socket_path)

    asyncio.run(main())


def test_a_live_socket_is_never_taken_over(socket_path):
    async def main():
        first = UnixSocketServer(socket_path, b"{}\n")
        await first.start()
        second = UnixSocketServer(socket_path, b"{}\n")
        with pytest.raises(OSError, match="another process is serving"):
            await second.start()
        reader, writer = await asyncio.open_unix_connection(socket_path)  # still the first
        assert greeting(await asyncio.wait_for(reader.readline(), TIMEOUT_S)) == {}
        writer.close()
        await first.close()

    asyncio.run(main())


def test_a_successors_socket_file_is_left_alone_on_close(socket_path):
    async def main():
        old = UnixSocketServer(socket_path, b"old\n")
        await old.start()
        os.unlink(socket_path)  # e.g. an operator cleaned up; a new instance took the path
        new = UnixSocketServer(socket_path, b"new\n")
        await new.start()
        await old.close()
        reader, writer = await asyncio.open_unix_connection(socket_path)
        assert await asyncio.wait_for(reader.readline(), TIMEOUT_S) == b"new\n"
        writer.close()
        await new.close()

    asyncio.run(main())


def test_a_client_refused_when_every_client_keeps_up_is_told_why(socket_path):
    """Issue 10 item 9: a refused client was closed without a word."""

    async def main():
        server = UnixSocketServer(socket_path, b"{}\n", max_clients=2)
        await server.start()
        kept = []
        try:
            for _ in range(2):
                reader, writer = await asyncio.open_unix_connection(socket_path)
                assert greeting(await asyncio.wait_for(reader.readline(), TIMEOUT_S)) == {}
                kept.append(writer)  # read everything sent so far: keeping up
            reader, writer = await asyncio.open_unix_connection(socket_path)
            refusal = await asyncio.wait_for(reader.read(), TIMEOUT_S)  # one line, then EOF
            assert refusal.count(b"\n") == 1
            message = json.loads(refusal)
            validate_as(message, "error")
            assert message["reason"] == "too_many_clients" and "2 client slots" in message["detail"]
            assert server.stats()["refused"] == 1 and server.client_count == 2
            assert server.stats()["evicted"] == 0
            writer.close()
        finally:
            for w in kept:
                w.close()
            await server.close()

    asyncio.run(main())


def test_a_new_client_takes_the_slot_of_the_client_furthest_behind(socket_path):
    """Issue 10 item 9: clients that never read held every slot until their backlog reached
    the drop limit. A newcomer now evicts the one with the most unread bytes."""

    async def main():
        server = UnixSocketServer(socket_path, b"{}\n", max_clients=2)
        await server.start()
        publisher = JsonLinesPublisher()
        publisher.add_sink(server)
        idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        idle.connect(socket_path)  # never reads
        try:
            reader, writer = await asyncio.open_unix_connection(socket_path)
            await asyncio.wait_for(reader.readline(), TIMEOUT_S)
            while server.client_count < 2:  # the idle client's handler has run
                await asyncio.sleep(0)
            for n in range(1, 11):  # ~10 kB: the idle client is behind, far from any limit
                publisher(link_event(n))
            for n in range(1, 11):
                line = await asyncio.wait_for(reader.readline(), TIMEOUT_S)
                assert json.loads(line)["transitions"] == n  # the reader keeps up
            new_reader, new_writer = await asyncio.open_unix_connection(socket_path)
            assert greeting(await asyncio.wait_for(new_reader.readline(), TIMEOUT_S)) == {}
            assert server.stats()["evicted"] == 1 and server.stats()["refused"] == 0
            publisher(link_event(11))
            for r in (reader, new_reader):
                line = await asyncio.wait_for(r.readline(), TIMEOUT_S)
                assert json.loads(line)["transitions"] == 11
            idle.setblocking(False)
            loop = asyncio.get_running_loop()
            with contextlib.suppress(ConnectionResetError):  # what was queued for it, then the end
                while await asyncio.wait_for(loop.sock_recv(idle, 1 << 16), TIMEOUT_S):
                    pass
            writer.close()
            new_writer.close()
        finally:
            idle.close()
            await server.close()

    asyncio.run(main())


def test_a_burst_of_refusals_asks_the_kernel_about_the_clients_once(socket_path, monkeypatch):
    """Red team rt58: a local process connecting in a loop at the slot limit made the server
    ask the kernel for every client's unread bytes twice a refusal (at 256 clients, 1.2 ms a
    refusal, the event loop held up to 170 ms). With none behind enough, it does not look
    again for ``REFUSAL_RECHECK_NS``; past that, a client that fell behind is dropped for a
    newcomer as before."""
    now = [0]
    asked: list[object] = []
    real = unix_socket._unread_bytes
    monkeypatch.setattr(unix_socket, "_unread_bytes", lambda c: asked.append(c) or real(c))

    async def refused() -> dict:
        reader, writer = await asyncio.open_unix_connection(socket_path)
        line = await asyncio.wait_for(reader.read(), TIMEOUT_S)  # one line, then EOF
        writer.close()
        return json.loads(line)

    async def main():
        server = UnixSocketServer(socket_path, b"{}\n", max_clients=2, clock=lambda: now[0])
        await server.start()
        publisher = JsonLinesPublisher()
        publisher.add_sink(server)
        idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        idle.connect(socket_path)  # reads nothing: its greeting alone is not behind enough
        try:
            reader, writer = await asyncio.open_unix_connection(socket_path)
            await asyncio.wait_for(reader.readline(), TIMEOUT_S)
            asked.clear()
            for _ in range(20):
                message = await refused()
                assert message["reason"] == "too_many_clients"
                assert [peer["pid"] for peer in message["socket"]["peers"]] == [os.getpid()] * 2
            assert server.stats()["refused"] == 20
            assert len(asked) == 2  # one look at the two clients, for all 20
            for n in range(1, 11):  # ~10 kB: now the idle client is behind
                publisher(link_event(n))
            for _ in range(10):
                assert json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT_S))
            assert (await refused())["reason"] == "too_many_clients"  # not looked at again
            assert len(asked) == 2 and server.stats()["evicted"] == 0
            now[0] += unix_socket.REFUSAL_RECHECK_NS
            new_reader, new_writer = await asyncio.open_unix_connection(socket_path)
            assert greeting(await asyncio.wait_for(new_reader.readline(), TIMEOUT_S)) == {}
            assert server.stats()["evicted"] == 1 and server.stats()["refused"] == 21
            writer.close()
            new_writer.close()
        finally:
            idle.close()
            await server.close()

    asyncio.run(main())


async def _served(socket_path: str) -> tuple[UnixSocketServer, JsonLinesPublisher, socket.socket]:
    """A started server with a publisher on it, and one client connected (blocking)."""
    server = UnixSocketServer(socket_path, b"{}\n")
    await server.start()
    publisher = JsonLinesPublisher()
    publisher.add_sink(server)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(socket_path)
    return server, publisher, client


def test_a_client_that_closes_its_sending_side_keeps_receiving(socket_path):
    """Issue 10 item 8: shutdown(SHUT_WR) (``socat`` fed from /dev/null) got the version line,
    then was disconnected. End of a client's input is not the end of its reading."""

    async def main():
        server, publisher, client = await _served(socket_path)
        client.shutdown(socket.SHUT_WR)
        try:
            reader, writer = await asyncio.open_unix_connection(sock=client)
            assert greeting(await asyncio.wait_for(reader.readline(), TIMEOUT_S)) == {}
            for n in range(1, 4):
                for _ in range(5):  # loop turns: the server reads the EOF; it must not hang up
                    await asyncio.sleep(0)
                publisher(link_event(n))
                line = await asyncio.wait_for(reader.readline(), TIMEOUT_S)
                assert json.loads(line)["transitions"] == n
            assert server.client_count == 1 and server.clients_dropped == 0
            writer.close()
            await writer.wait_closed()
            deadline = asyncio.get_running_loop().time() + TIMEOUT_S
            n = 4
            while server.client_count:  # gone for good: the next write fails, and it is freed
                assert asyncio.get_running_loop().time() < deadline
                publisher(link_event(n))
                n += 1
                await asyncio.sleep(0)
        finally:
            await server.close()

    asyncio.run(main())


def test_a_client_that_floods_its_input_is_never_read_and_still_served(socket_path):
    """Red team rt12: clients writing as fast as they could cost the host 80 % of a core to
    read and throw away. Their input is never read now: a client's writes stop at the
    kernel's buffers (a few hundred KiB, never the 8 MiB it tries), and it still gets every
    line."""

    async def main():
        server, publisher, flooder = await _served(socket_path)
        flooder.setblocking(False)
        try:
            reader, writer = await asyncio.open_unix_connection(sock=flooder)
            assert greeting(await asyncio.wait_for(reader.readline(), TIMEOUT_S)) == {}
            sent, chunk = 0, b"x" * 65_536
            for _ in range(128):  # 8 MiB offered, the loop turning between writes
                with contextlib.suppress(BlockingIOError):
                    sent += flooder.send(chunk)
                await asyncio.sleep(0)
            assert sent < 4 * 1024 * 1024  # blocked at the buffers: nobody reads it
            publisher(link_event(1))
            line = await asyncio.wait_for(reader.readline(), TIMEOUT_S)
            assert json.loads(line)["transitions"] == 1
            assert server.client_count == 1
            writer.close()
        finally:
            await server.close()

    asyncio.run(main())


def test_close_with_connected_clients_is_quiet(socket_path, caplog):
    async def main():
        server = UnixSocketServer(socket_path, b"{}\n")
        await server.start()
        clients = [await asyncio.open_unix_connection(socket_path) for _ in range(3)]
        for reader, _ in clients:
            await asyncio.wait_for(reader.readline(), TIMEOUT_S)
        await server.close()
        for _, writer in clients:
            writer.close()

    with caplog.at_level("DEBUG", logger="asyncio"):
        asyncio.run(main())
    assert not [
        r
        for r in caplog.records
        if "CancelledError" in r.getMessage()
        or (r.exc_info and r.exc_info[0] is asyncio.CancelledError)
    ]


@settings(max_examples=100, deadline=None)
@given(
    result=vision_results,
    rx_ns=st.integers(0, 2**62),
    capture_offset_ns=st.one_of(st.none(), st.integers(-(10**9), 10**9)),
    published_after_ns=st.integers(0, 10**10),
    status=st.sampled_from(ClockStatus),
    event=st.sampled_from(SequenceEvent),
)
def test_result_json_line_parses_to_exactly_to_dict(
    result, rx_ns, capture_offset_ns, published_after_ns, status, event
):
    capture = None if capture_offset_ns is None else rx_ns - capture_offset_ns
    reference = rx_ns if capture is None else capture
    received = ReceivedResult(
        result, rx_ns, capture, 123, 2, status, event, reference + 250_000_000
    )
    now = rx_ns + published_after_ns
    line = received.to_json_line(now)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == received.to_dict(now)
    validate_as(json.loads(line), "result")


@settings(max_examples=200, deadline=None)
@given(
    result=vision_results,
    result_type=st.sampled_from([1, 5]),  # colour blobs and detectors: box and other kinds
    ident=st.integers(0, 16),
    capture_offset_ns=st.one_of(st.none(), st.integers(-(10**9), 10**9)),
)
def test_result_json_line_of_every_colour_and_detector_parses_to_exactly_to_dict(
    result, result_type, ident, capture_offset_ns
):
    """The kinds that locate a box have a line template of their own (the interpretation in
    it): each, and the kinds beside them, still parse to exactly ``to_dict``."""
    rx_ns = 10**15
    capture = None if capture_offset_ns is None else rx_ns - capture_offset_ns
    result = result._replace(result_type=result_type, id=ident)
    received = ReceivedResult(
        result, rx_ns, capture, 7, 1, ClockStatus.LOCKED, SequenceEvent.IN_ORDER, rx_ns + 1
    )
    line = received.to_json_line(rx_ns + 12_345_678)
    assert line.endswith(b"}}\n") and line.count(b"\n") == 1
    assert json.loads(line) == received.to_dict(rx_ns + 12_345_678)
    validate_as(json.loads(line), "result")


optional_ints = st.one_of(st.none(), st.integers(0, 255))


@given(
    decision=st.sampled_from(Decision),
    reasons=st.lists(st.sampled_from(HoldReason), unique=True, max_size=4),
    selector=st.builds(
        Selector,
        optional_ints,
        optional_ints,
        st.one_of(st.none(), st.integers(-(2**15), 2**15 - 1)),
    ),
    host_ns=st.integers(0, 2**63 - 1),
    valid_for_ns=st.integers(0, 10**10),
    target=st.one_of(st.none(), st.tuples(vision_results, st.integers(-(10**10), 10**12))),
)
def test_verdict_json_line_is_the_encoders_line_byte_for_byte(
    decision, reasons, selector, host_ns, valid_for_ns, target
):
    # The template must write what the JSON encoder writes for ``to_dict()`` (the goldens
    # were made by the encoder), including the float it makes of the target's age.
    result = None
    if target is not None:
        value, age_ns = target
        capture = host_ns - age_ns
        result = ReceivedResult(
            value, capture, capture, 0, 0, ClockStatus.LOCKED, SequenceEvent.IN_ORDER, capture
        )
    verdict = LinkVerdict(
        decision, tuple(reasons), selector, host_ns, host_ns + valid_for_ns, result
    )
    assert verdict.to_json_line() == encode_line(verdict.to_dict())
