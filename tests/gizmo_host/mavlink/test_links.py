"""The transports end to end: URLs, loopback UDP (send_to), TCP, a serial pty, and an
autopilot that is not there (a down link, counted, never a traceback)."""

from __future__ import annotations

import asyncio
import os
import tty

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pymavlink.dialects.v20 import common as mavlink

from gizmo_host.mavlink import (
    AutopilotSession,
    Endpoint,
    Kind,
    MavlinkPoseSource,
    MavlinkTransport,
    parse_url,
)
from gizmo_host.mavlink.codec import Codec
from gizmo_host.rigs.autopilot.standin import StandinAutopilot
from gizmo_host.timing import LoopScheduler
from tests.support.mavlink_rig import circling, rig, until

pytestmark = [pytest.mark.realtime]


@pytest.mark.parametrize(
    ("url", "send_to", "expected"),
    [
        ("udpin:0.0.0.0:14540", None, Endpoint(Kind.UDPIN, "0.0.0.0", 14540)),
        ("udpout:127.0.0.1:14550", None, Endpoint(Kind.UDPOUT, "127.0.0.1", 14550)),
        ("tcp:localhost:5760", None, Endpoint(Kind.TCP, "localhost", 5760)),
        ("/dev/ttyAMA1:921600", None, Endpoint(Kind.SERIAL, "/dev/ttyAMA1", 921600)),
        ("/dev/ttyACM0", None, Endpoint(Kind.SERIAL, "/dev/ttyACM0", 115200)),
        (
            "udpin:0.0.0.0:20101",
            "127.0.0.1:20100",
            Endpoint(Kind.UDPIN, "0.0.0.0", 20101, ("127.0.0.1", 20100)),
        ),
    ],
)
def test_urls(url, send_to, expected):
    assert parse_url(url, send_to) == expected


@pytest.mark.parametrize(
    ("url", "send_to"),
    [
        ("", None),
        ("udp:1.2.3.4:5", None),
        ("udpin:14540", None),
        ("udpout:host:port", None),
        ("tcp:host:70000", None),
        ("tcp:host:0", None),
        ("/dev/ttyS0:fast", None),
        ("/dev/ttyS0:0", None),
        ("udpout:127.0.0.1:14540", "127.0.0.1:14541"),
        ("udpin:0.0.0.0:20101", "20100"),
    ],
)
def test_a_bad_url_is_one_line_naming_it(url, send_to):
    with pytest.raises(ValueError) as caught:
        parse_url(url, send_to)
    message = str(caught.value)
    assert "\n" not in message
    assert repr(url) in message or repr(send_to) in message


def test_udp_with_the_standin_both_ways():
    async def main():
        async with rig(lag_ms=(8.0, 16.0)) as r:  # udpout stand-in -> udpin host
            await until(lambda: r.session.locked and len(r.poses) > 10)
            await until(lambda: r.standin.heard_heartbeat)

    asyncio.run(main())


def test_rflysim_shape_listen_on_one_port_and_send_to_another():
    """RflySim's companion ports: the host listens on one port (20100+2N-1) and sends to
    another (20100+2N-2), where the autopilot listens; here both ports are free ones."""

    async def main():
        standin = StandinAutopilot("udpin:127.0.0.1:0", circling, skew_ppm=-40.0)
        task = asyncio.ensure_future(standin.run())
        assert standin.transport is not None
        await until(lambda: standin.transport.local_port is not None)
        holder: list[MavlinkTransport] = []
        session = AutopilotSession(lambda d, to: bool(holder[0].send(d, to)), LoopScheduler())
        poses = []
        MavlinkPoseSource(session, poses.append)
        url = parse_url("udpin:127.0.0.1:0", f"127.0.0.1:{standin.transport.local_port}")
        transport = MavlinkTransport(url, session.feed)
        holder.append(transport)
        tasks = [task, asyncio.ensure_future(transport.run())]
        session.start()
        # The stand-in hears the host first (send_to), then answers the port it heard.
        await until(lambda: standin.heard_heartbeat)
        await until(lambda: session.locked and len(poses) > 10)
        await until(lambda: standin.px4_samples > 0)  # answered once locked
        session.stop()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())


def test_tcp_peer_brings_the_link_up():
    async def main():
        peer = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
        heard = asyncio.Event()

        async def serve(reader, writer):
            writer.write(peer.heartbeat_encode(2, 3, 0, 0, 4).pack(peer))
            await reader.read(100)
            heard.set()
            await reader.read()  # until the host closes
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        holder: list[MavlinkTransport] = []
        session = AutopilotSession(lambda d, to: bool(holder[0].send(d, to)), LoopScheduler())
        transport = MavlinkTransport(parse_url(f"tcp:127.0.0.1:{port}"), session.feed)
        holder.append(transport)
        task = asyncio.ensure_future(transport.run())
        session.start()
        await until(lambda: session.link_up)
        await asyncio.wait_for(heard.wait(), 10)
        session.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        server.close()
        await server.wait_closed()

    asyncio.run(main())


def test_serial_over_a_pty():
    async def main():
        master, slave = os.openpty()
        tty.setraw(slave)
        path = os.ttyname(slave)
        loop = asyncio.get_running_loop()
        peer = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
        parser = mavlink.MAVLink(None)
        heard: list[str] = []

        def readable():
            for msg in parser.parse_buffer(os.read(master, 4096)) or []:
                heard.append(msg.get_type())

        loop.add_reader(master, readable)
        holder: list[MavlinkTransport] = []
        session = AutopilotSession(lambda d, to: bool(holder[0].send(d, to)), LoopScheduler())
        transport = MavlinkTransport(parse_url(f"{path}:921600"), session.feed)
        holder.append(transport)
        task = asyncio.ensure_future(transport.run())
        session.start()
        await until(lambda: transport.is_open)
        os.write(master, peer.heartbeat_encode(2, 12, 0, 0, 4).pack(peer))
        await until(lambda: session.link_up)
        await until(lambda: "HEARTBEAT" in heard and "COMMAND_LONG" in heard)
        session.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        loop.remove_reader(master)
        os.close(master)
        os.close(slave)

    asyncio.run(main())


@pytest.mark.parametrize("url", ["udpout:127.0.0.1:9", "tcp:127.0.0.1:9", "/dev/nonexistent:57600"])
def test_an_unreachable_autopilot_is_a_down_link_with_a_reason(url):
    async def main():
        holder: list[MavlinkTransport] = []
        session = AutopilotSession(lambda d, to: bool(holder[0].send(d, to)), LoopScheduler())
        transport = MavlinkTransport(parse_url(url), session.feed, backoff_max_s=0.2)
        holder.append(transport)
        task = asyncio.ensure_future(transport.run())
        session.start()
        await until(lambda: session.counts["timesync_requests"] >= 5)
        stats = session.stats(0)
        assert stats["link"] == "DOWN" and stats["autopilot"] is None
        t = transport.stats()
        if url.startswith("udp"):
            assert t["open"]  # a socket opens; nobody answers
        else:
            assert t["open_failures"] >= 1 and "\n" not in t["last_error"]
            assert url.split(":", 1)[-1].split(":")[0] in t["last_error"] or "9" in t["last_error"]
        session.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert not task.exception() if not task.cancelled() else True

    asyncio.run(main())


@given(st.text(max_size=40), st.one_of(st.none(), st.text(max_size=20)))
def test_any_url_text_parses_or_is_one_line_value_error(url, send_to):
    try:
        parse_url(url, send_to)
    except ValueError as exc:
        assert "\n" not in str(exc)


@given(st.lists(st.binary(max_size=300), max_size=8), st.integers(0, 7))
def test_the_codec_never_raises_and_finds_messages_between_garbage(chunks, where):
    """Garbage without MAVLink's start bytes never hides the message after it."""
    sender = Codec(1, 1)
    message = sender.encode(sender.mav.heartbeat_encode(2, 12, 0, 0, 4))
    clean = [bytes(b for b in c if b not in (0xFD, 0xFE)) for c in chunks]
    clean.insert(min(where, len(clean)), message)
    receiver = Codec(2, 1)
    found = []
    for chunk in clean:
        found += receiver.decode(chunk)
    for chunk in chunks:  # hostile bytes, start markers included: never an exception
        receiver.decode(chunk)
    assert [m.get_type() for m in found] == ["HEARTBEAT"]


def test_an_oversized_datagram_is_dropped_unread_and_the_autopilot_still_heard():
    """Finding 8: a 60 KB datagram cost 6 ms of parsing on the loop that reads the UART."""

    async def main():
        fed: list[int] = []
        transport = MavlinkTransport(
            parse_url("udpin:127.0.0.1:0"), lambda data, _ns, _src: fed.append(len(data))
        )
        task = asyncio.ensure_future(transport.run())
        await until(lambda: transport.local_port is not None)
        sender = Codec(1, 1)
        heartbeat = sender.encode(sender.mav.heartbeat_encode(2, 12, 0, 0, 4))
        loop = asyncio.get_running_loop()
        out, _ = await loop.create_datagram_endpoint(
            asyncio.DatagramProtocol, remote_addr=("127.0.0.1", transport.local_port)
        )
        for i in range(5):  # one at a time: five at once overflow the socket's buffer
            out.sendto(os.urandom(60_000))
            out.sendto(heartbeat)
            await until(lambda i=i: len(fed) == i + 1)
        assert transport.oversized == 5
        assert fed == [len(heartbeat)] * 5 and transport.stats()["oversized"] == 5
        out.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
