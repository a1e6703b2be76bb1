"""Receivers the event loop serves (``thread=False``): no thread per port, the same pipeline,
allow-list and counters as a threaded one, and a flood that cannot starve the loop."""

from __future__ import annotations

import asyncio
import socket
import threading

from rfly_link import io as rio
from rfly_link import messages as m
from rfly_link.io.receiver import LOOP_DRAIN_MAX

WAIT_S = 5.0


def udp_socket(host: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, 0))
    return sock


def test_many_loop_served_receivers_start_no_thread_and_deliver_in_order() -> None:
    """Issue 17 item 5: one thread per receiver (3,004 threads for 3,000 sensors)."""

    async def main() -> None:
        threads_before = threading.active_count()
        receivers = [
            rio.UdpReceiver(
                rio.MessagePipeline(20006), port=0, allowed_senders={"127.0.0.1"}, thread=False
            )
            for _ in range(40)
        ]
        for receiver in receivers:
            await receiver.start()
        try:
            assert threading.active_count() == threads_before
            crash = m.CopterSimCrash(copter_id=1, target_id=2).encode()
            with udp_socket("127.0.0.1") as sim, udp_socket("127.0.0.2") as stranger:
                for receiver in receivers:
                    stranger.sendto(crash, ("127.0.0.1", receiver.bound_port))
                    for target_id in range(3):
                        packet = m.CopterSimCrash(copter_id=1, target_id=target_id).encode()
                        sim.sendto(packet, ("127.0.0.1", receiver.bound_port))
                for receiver in receivers:
                    got = [await asyncio.wait_for(receiver.get(), WAIT_S) for _ in range(3)]
                    assert [e.value.target_id for e in got] == [0, 1, 2]
                    assert all(e.sender[0] == "127.0.0.1" for e in got)
                    assert receiver.stats.drops == {"sender_not_allowed": 1}
                    assert receiver.stats.datagrams == 4
        finally:
            for receiver in receivers:
                await receiver.close()
            await receivers[0].close()  # twice is fine

    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_flood_is_drained_in_slices_so_the_loop_keeps_turning() -> None:
    """A port flooded faster than it is read: each wake-up reads at most LOOP_DRAIN_MAX
    datagrams, so a timer armed meanwhile still fires before the flood is drained."""

    async def main() -> None:
        receiver = rio.UdpReceiver(
            rio.MessagePipeline(20006), port=0, thread=False, queue_size=10_000
        )
        async with receiver:
            count = LOOP_DRAIN_MAX * 8
            crash = m.CopterSimCrash(copter_id=1, target_id=2).encode()
            with udp_socket("127.0.0.1") as sim:
                for _ in range(count):
                    sim.sendto(crash, ("127.0.0.1", receiver.bound_port))
                seen_by_timer: list[int] = []
                loop = asyncio.get_running_loop()
                loop.call_soon(lambda: seen_by_timer.append(receiver.stats.datagrams))
                await receiver.wait_delivered(count)
            assert seen_by_timer and seen_by_timer[0] < count
            assert receiver.stats.events == count

    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_group_starts_all_or_none_and_a_bad_event_does_not_end_its_pump() -> None:
    """Issue 18: the emulator's receiver group left the receivers it had started running when
    a later bind failed."""

    async def main() -> None:
        threads_before = threading.active_count()
        with udp_socket("127.0.0.1") as taken:
            busy_port = taken.getsockname()[1]
            first = rio.UdpReceiver(rio.MessagePipeline(20006), port=0, thread=False)
            second = rio.UdpReceiver(rio.MessagePipeline(20006), port=busy_port)
            group = rio.ReceiverGroup([first, second], lambda event: None)
            try:
                await group.start()
            except OSError as exc:
                assert str(busy_port) in str(exc)
            else:
                raise AssertionError("a bind on a port in use must fail")
            assert first.local_address is None and second.local_address is None
            # The failed start left no reader thread behind.
            assert threading.active_count() == threads_before

        handled: list[int] = []
        errors: list[str] = []

        def handle(event: rio.Event) -> None:
            if event.value.target_id == 0:
                raise ValueError("a bug on one message")
            handled.append(event.value.target_id)

        receiver = rio.UdpReceiver(rio.MessagePipeline(20006), port=0, thread=False)
        group = rio.ReceiverGroup([receiver], handle, on_error=lambda r, e: errors.append(str(e)))
        async with group:
            with udp_socket("127.0.0.1") as sim:
                for target_id in (0, 1, 2):
                    packet = m.CopterSimCrash(copter_id=1, target_id=target_id).encode()
                    sim.sendto(packet, ("127.0.0.1", receiver.bound_port))
                await receiver.wait_delivered(3)
                while len(handled) < 2:
                    await asyncio.sleep(0)  # the pump task runs on the same loop
        assert handled == [1, 2] and errors == ["a bug on one message"]
        await group.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_an_awaiting_handler_holds_its_pump_so_events_wait_in_the_bounded_queue() -> None:
    """Back-pressure (``gizmo-host rfly`` before a stalled stdout): while the handler's
    awaitable is pending the pump takes nothing more, so the receiver's own queue (2 here)
    fills and drops the oldest, counted, instead of the events piling up in between."""

    async def main() -> None:
        release = asyncio.Event()
        handled: list[int] = []

        async def handle(event: rio.Event) -> None:
            handled.append(event.value.target_id)
            await release.wait()

        receiver = rio.UdpReceiver(rio.MessagePipeline(20006), port=0, thread=False, queue_size=2)
        async with rio.ReceiverGroup([receiver], handle):
            with udp_socket("127.0.0.1") as sim:
                for target_id in range(6):
                    packet = m.CopterSimCrash(copter_id=1, target_id=target_id).encode()
                    sim.sendto(packet, ("127.0.0.1", receiver.bound_port))
                    await receiver.wait_delivered(target_id + 1)
                    while not handled:
                        await asyncio.sleep(0)  # the pump takes the first and holds it
                for _ in range(20):
                    await asyncio.sleep(0)  # a pump not held would take the next events now
                assert handled == [0]
                assert receiver.stats.drops == {"queue_full": 3}  # 1..3 dropped, 4 and 5 held
                release.set()
                while len(handled) < 3:
                    await asyncio.sleep(0)
        assert handled == [0, 4, 5]

    asyncio.run(asyncio.wait_for(main(), 30))
