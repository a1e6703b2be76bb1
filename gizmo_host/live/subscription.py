"""Bounded hand-offs from the reader to consumers, and throttled failure logging.

The reader never waits for a consumer: a ``Subscription`` that is full drops its oldest item
(counted), and a consumer callback that raises is counted and logged at a falling rate by a
``FailureCounter``, never propagated.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")
_CLOSED: Any = object()


class FailureCounter:
    """Counts failures and logs the 1st, 2nd, 4th, 8th, ... with the traceback: a consumer
    bug that fires on every frame is seen once, not 2,000 times a second."""

    __slots__ = ("_logger", "count")

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self.count = 0

    def failed(self, what: str, *args: object) -> None:
        """Call from an ``except`` block; ``what % args`` names the failing part."""
        self.count += 1
        count = self.count
        if count & (count - 1) == 0:
            self._logger.exception(what + " failed (%d so far)", *args, count)


class Subscription(Generic[T]):
    """A bounded async iterator fed by the service; the oldest item goes when it is full."""

    def __init__(self, maxsize: int, on_close: Callable[[Subscription[T]], None]) -> None:
        if maxsize <= 0:
            raise ValueError(f"maxsize: expected > 0, got {maxsize!r}")
        self._queue: asyncio.Queue[T] = asyncio.Queue(maxsize + 1)  # +1 for the close marker
        self._maxsize = maxsize
        self._on_close = on_close
        self._closed = False
        self.dropped = 0

    def put(self, item: T) -> None:
        if self._closed:
            return
        if self._queue.qsize() >= self._maxsize:
            self._queue.get_nowait()
            self.dropped += 1
        self._queue.put_nowait(item)

    def close(self) -> None:
        """End the iteration (after the items already queued)."""
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(_CLOSED)
            self._on_close(self)

    def __aiter__(self) -> Subscription[T]:
        return self

    async def __anext__(self) -> T:
        item = await self._queue.get()
        if item is _CLOSED:
            raise StopAsyncIteration
        return item

    def get_nowait(self) -> T:
        """The next item already queued; raises ``asyncio.QueueEmpty`` when there is none,
        ``StopAsyncIteration`` once closed."""
        item = self._queue.get_nowait()
        if item is _CLOSED:
            self._queue.put_nowait(item)  # stays closed for the next call
            raise StopAsyncIteration
        return item

    async def get(self, timeout: float | None = None) -> T:
        """The next item; raises ``StopAsyncIteration`` once closed, ``TimeoutError`` on timeout."""
        return await asyncio.wait_for(self.__anext__(), timeout)


class FailureLatch:
    """The first failure of a service's own work (a task died, a timer raised): logged once
    and kept, so the service's owner can await it and exit non-zero."""

    __slots__ = ("_event", "_logger", "failure")

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._event = asyncio.Event()
        self.failure: BaseException | None = None

    def fail(self, exc: BaseException, where: str) -> None:
        if self.failure is None:
            self.failure = exc
            self._logger.error("%s failed", where, exc_info=exc)
            self._event.set()

    def task_done(self, task: asyncio.Task[None]) -> None:
        """A done callback: a task that ended with an exception is a failure."""
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            self.fail(exc, task.get_name())

    async def wait(self) -> BaseException:
        await self._event.wait()
        assert self.failure is not None
        return self.failure
