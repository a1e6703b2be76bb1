"""Await the first item of a service stream that matches, with a deadline (never a sleep).

Every await of a test gets its own deadline and a name (``step``): a hang fails in seconds and
says which step it was, instead of running into pytest-timeout's 120 s with no name."""

import asyncio
import contextlib
import io
import sys
import threading
import traceback
from collections.abc import Awaitable
from typing import TypeVar

from gizmo_core import Decision, LinkState
from gizmo_host.stream.events import LinkEvent

TIMEOUT_S = 5.0

T = TypeVar("T")


async def step(what: str, awaitable: Awaitable[T], timeout: float = TIMEOUT_S) -> T:
    """Await ``awaitable`` within ``timeout`` s, or fail naming ``what`` was awaited and where
    every task and thread was at the deadline (a rare hang in CI is then diagnosed from its
    log, not guessed at)."""
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if task in done:
        return task.result()
    where = _where_everything_is()
    task.cancel()
    with contextlib.suppress(BaseException):
        await asyncio.wait({task}, timeout=timeout)  # its cancellation, itself bounded
    raise AssertionError(f"{what}: not within {timeout} s\n{where}")


def _where_everything_is() -> str:
    """Every pending task's stack and every thread's, as text."""
    out = io.StringIO()
    for pending in asyncio.all_tasks():
        if pending is not asyncio.current_task():
            out.write(f"task {pending.get_name()}:\n")
            pending.print_stack(limit=12, file=out)
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        out.write(f"thread {names.get(ident, ident)}:\n")
        out.write("".join(traceback.format_stack(frame, limit=12)))
    return out.getvalue()


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
