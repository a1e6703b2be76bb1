"""The compiled services' waits (``gizmo_host.live.lifecycle``): a ``start`` or ``stop`` that
is a plain method returning a coroutine must act as an ``async def`` did: nothing before it is
awaited, its steps in order, and a stop that finishes whatever its tasks did."""

from __future__ import annotations

import asyncio

import pytest

from gizmo_host.bridge.world_service import WorldService
from gizmo_host.live import lifecycle
from gizmo_host.timing import ManualScheduler
from tests.support.fusion_inputs import world as world_model


def test_a_stop_runs_nothing_until_awaited_then_its_steps_in_order() -> None:
    steps: list[str] = []

    async def died() -> None:
        raise RuntimeError("the task's own failure, reported elsewhere")

    async def close() -> None:
        steps.append("close")

    async def main() -> None:
        task = asyncio.create_task(died())
        await asyncio.sleep(0)  # the task has died

        def begin() -> list[asyncio.Task[None]]:
            steps.append("begin")
            return [task]

        stopping = lifecycle.stopped(begin, close, end=lambda: steps.append("end"))
        assert steps == []  # made, not yet awaited: nothing ran
        await stopping

    asyncio.run(main())
    assert steps == ["begin", "close", "end"]


def test_a_start_that_refuses_runs_none_of_its_later_steps() -> None:
    steps: list[str] = []

    def refuse() -> None:
        raise RuntimeError("already running")

    async def bind() -> None:
        steps.append("bind")

    with pytest.raises(RuntimeError, match="already running"):
        asyncio.run(lifecycle.started(refuse, bind, end=lambda: steps.append("end")))
    assert steps == []


def test_entering_awaits_what_start_returns() -> None:
    steps: list[str] = []

    async def start_later() -> None:
        steps.append("started")

    def start_now() -> None:
        steps.append("sync")

    async def main() -> None:
        assert await lifecycle.entered("value", start_later) == "value"
        assert await lifecycle.entered("plain", start_now) == "plain"

    asyncio.run(main())
    assert steps == ["started", "sync"]


def test_a_world_service_runs_and_stops_through_async_with() -> None:
    """The real service, compiled or not: ``async with`` arms its tick, a second start is
    refused before it binds anything, a stop not awaited changes nothing, and the stop ends
    its iterators."""
    scheduler = ManualScheduler(0)
    world = WorldService(world_model(), scheduler=scheduler)

    async def main() -> None:
        async with world as entered:
            assert entered is world
            assert len(scheduler.pending()) == 1  # the tick
            with pytest.raises(RuntimeError, match="already running"):
                await world.start()
            world.stop().close()  # made and dropped: an ``async def`` would do nothing too
            assert len(scheduler.pending()) == 1
            snapshots = world.snapshots()
        assert scheduler.pending() == []
        assert [s async for s in snapshots] == []  # ended by the stop

    asyncio.run(main())
