"""The thread-to-loop hand-off: bounded even while the event loop is stalled, newest kept."""

from __future__ import annotations

import asyncio
import threading
import weakref

import pytest

from rfly_link.io.handoff import Handoff


class Item:
    __slots__ = ("__weakref__", "n")

    def __init__(self, n: int) -> None:
        self.n = n


def test_a_stalled_loop_keeps_only_maxsize_items_alive() -> None:
    async def main() -> None:
        handoff: Handoff[Item] = Handoff(4)
        handoff.attach(asyncio.get_running_loop())
        refs: list[weakref.ref[Item]] = []

        def produce() -> None:
            for n in range(100):
                item = Item(n)
                refs.append(weakref.ref(item))
                assert handoff.put_many([item])

        producer = threading.Thread(target=produce)
        producer.start()
        producer.join()  # the loop is blocked here, as by a write to a full stdout pipe
        alive = [ref() for ref in refs]
        assert sum(item is not None for item in alive) == 4  # nothing else holds the rest
        del alive
        assert (handoff.put_count, handoff.dropped, len(handoff)) == (100, 96, 4)
        assert [(await handoff.get()).n for _ in range(4)] == [96, 97, 98, 99]
        with pytest.raises(asyncio.QueueEmpty):
            handoff.get_nowait()

    asyncio.run(asyncio.wait_for(main(), 10))


def test_get_waits_for_a_put_from_another_thread() -> None:
    async def main() -> None:
        handoff: Handoff[int] = Handoff(2)
        handoff.attach(asyncio.get_running_loop())
        waiting = asyncio.create_task(handoff.get())
        await asyncio.sleep(0)  # get() is now parked on an empty queue
        threading.Thread(target=handoff.put_many, args=([7, 8, 9],)).start()
        assert await waiting == 8  # 7 was dropped: the queue holds two
        await handoff.wait_put(3)
        assert handoff.get_nowait() == 9 and handoff.dropped == 1

    asyncio.run(asyncio.wait_for(main(), 10))


def test_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="maxsize"):
        Handoff(0)
