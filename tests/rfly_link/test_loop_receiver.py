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
