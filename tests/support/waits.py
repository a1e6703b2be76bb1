"""Await the first item of a service stream that matches, with a deadline (never a sleep)."""

import asyncio

from gizmo_core import Decision, LinkState
from gizmo_host.stream.events import LinkEvent

TIMEOUT_S = 5.0


async def wait_link(events, state: LinkState, timeout: float = TIMEOUT_S) -> LinkEvent:
    async def until():
        async for event in events:
            if event.state is state:
                return event
        raise AssertionError("link event stream ended")

    return await asyncio.wait_for(until(), timeout)


async def wait_verdict(verdicts, decision: Decision, timeout: float = TIMEOUT_S):
    async def until():
        async for verdict in verdicts:
            if verdict.decision is decision:
                return verdict
        raise AssertionError("verdict stream ended")

    return await asyncio.wait_for(until(), timeout)
