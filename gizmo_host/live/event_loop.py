"""The event loop ``gizmo-host run`` runs on: uvloop when it is installed, else asyncio's own.

The live link wakes once per frame, and on the standard loop a good part of each wake-up is the
loop's own Python (selector, ready queue, timers, socket transports). uvloop does that work in
C; ``bench/serial_link.py`` measures the difference. It is an optional extra
(``pip install gizmo-host[uvloop]``, Linux and macOS); everything also runs without it.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Coroutine, Iterable, Sequence
from typing import Any, TypeVar

from gizmo_core import MissingExtra

T = TypeVar("T")
EVENT_LOOPS = ("auto", "asyncio", "uvloop")


def uvloop_available() -> bool:
    """Whether uvloop is installed: looked up, not imported (6 ms that every command's
    settings check would pay; ``run`` imports it)."""
    return importlib.util.find_spec("uvloop") is not None


def resolve(choice: str) -> str:
    """``auto`` -> ``uvloop`` if installed, else ``asyncio``; raises ValueError for a choice
    that cannot be honoured."""
    if choice not in EVENT_LOOPS:
        raise ValueError(f"expected one of {', '.join(EVENT_LOOPS)}, got {choice!r}")
    if choice == "auto":
        return "uvloop" if uvloop_available() else "asyncio"
    if choice == "uvloop" and not uvloop_available():
        raise MissingExtra("uvloop", "the uvloop event loop")
    return choice


def run(main: Coroutine[Any, Any, T], loop: str) -> T:
    """``asyncio.run(main)`` on the resolved ``loop`` (``asyncio`` or ``uvloop``)."""
    if loop == "uvloop":
        import uvloop  # noqa: PLC0415 - optional dependency

        return uvloop.run(main)
    return asyncio.run(main)


async def first_done(tasks: Sequence[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """Wait until the first of ``tasks`` ends, then cancel and reap the rest (also when the
    wait itself is cancelled); returns the tasks that had ended."""
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_all(tasks)
    return done


async def cancel_all(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has ended, whatever it raised."""
    pending = list(tasks)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
