"""The compiled modules' waits, as interpreted coroutines: starting and stopping a service.

mypyc compiles the services (``GizmoService``, ``WorldService``: their per-read path is most of
the host's CPU beside the pipeline's), and none of their coroutines: compiled, a coroutine
that returned from a ``try`` whose ``finally`` awaited returned ``None``, and with the
scheduler and the services compiled a service's stop once outlasted its 5 s bound in CI
(docs/bench.md). So a service's ``start``, ``stop``, ``__aenter__`` and ``__aexit__`` are plain
methods that return one of these coroutines, made of the service's own synchronous steps
(``wait_failed`` returns its latch's): nothing runs before the coroutine is awaited, as with an
``async def``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


async def nothing() -> None:
    """A wait for nothing: a compiled sink's ``start`` or ``close`` that has none to do."""


async def entered(value: T, start: Callable[[], Awaitable[None] | None]) -> T:
    """``async with``'s entry: ``start()``, awaited if it returns an awaitable; then
    ``value``."""
    starting = start()
    if starting is not None:
        await starting
    return value


async def stopped(
    begin: Callable[[], Sequence[asyncio.Future[Any]]],
    *then: Callable[[], Awaitable[None]],
    end: Callable[[], None],
) -> None:
    """A stop: ``begin()`` cancels the service's tasks and returns them; they are awaited (a
    task that died was reported already: stopping must still finish), then each of ``then``
    in order, then ``end()``."""
    tasks = begin()
    await asyncio.gather(*tasks, return_exceptions=True)
    for close in then:
        await close()
    end()


async def started(
    begin: Callable[[], None], *then: Callable[[], Awaitable[None]], end: Callable[[], None]
) -> None:
    """A start: ``begin()`` (refusing a service already running), each of ``then`` awaited
    in order, then ``end()``."""
    begin()
    for step in then:
        await step()
    end()
