"""Await the first item of a service stream that matches, with a deadline (never a sleep).

Every await of a test gets its own deadline and a name (``step``): a hang fails in seconds and
says which step it was, instead of running into pytest-timeout's 120 s with no name."""

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from gizmo_core import Decision, LinkState
from gizmo_host.stream.events import LinkEvent

TIMEOUT_S = 5.0

T = TypeVar("T")


async def step(what: str, awaitable: Awaitable[T], timeout: float = TIMEOUT_S) -> T:
    """Await ``awaitable`` within ``timeout`` s, or fail naming ``what`` was awaited."""
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except asyncio.TimeoutError:
        raise AssertionError(f"{what}: not within {timeout} s") from None


async def wait_link(events, state: LinkState, timeout: float = TIMEOUT_S) -> LinkEvent:
    async def until():
        async for event in events:
            if event.state is state:
                return event
        raise AssertionError(f"link event stream ended before {state.name}")

    return await step(f"link {state.name}", until(), timeout)


async def wait_verdict(verdicts, decision: Decision, timeout: float = TIMEOUT_S):
    async def until():
        async for verdict in verdicts:
            if verdict.decision is decision:
                return verdict
        raise AssertionError(f"verdict stream ended before {decision.name}")

    return await step(f"verdict {decision.name}", until(), timeout)
