"""The serial port as the link opens, watches and closes it, through serialx.

serialx does the open (exclusive ``flock``), the termios set-up and the close in the event
loop's executor, so a slow driver never stalls the loop; ``low_latency`` is requested where the
driver supports it, and the port is closed with ``abort()``: no flush, no drain, then a bounded
wait for the close to finish.

serialx is imported when a port is first opened: offline replay, which drives the link
without a port, and the tools never pay for its import (about 25 ms of a replay's start-up).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

LOGGER = logging.getLogger(__name__)

OpenFunction = Callable[..., Any]
CLOSE_TIMEOUT_S = 2.0


async def open_serial(*args: Any, **kwargs: Any) -> Any:
    """``serialx.create_serial_connection``."""
    import serialx  # noqa: PLC0415

    return await serialx.create_serial_connection(*args, **kwargs)


def serial_error() -> type[Exception]:
    """``serialx.SerialException``: only asked for when an open or a close has failed."""
    import serialx  # noqa: PLC0415

    return serialx.SerialException


class ReaderProtocol(asyncio.Protocol):
    """Forwards bytes to ``data_received``; ``lost`` resolves when the connection ends."""

    def __init__(
        self, data_received: Callable[[bytes], None], lost: asyncio.Future[BaseException | None]
    ) -> None:
        # The link's handler itself, not a method that forwards to it: one call less per read.
        self.data_received = data_received  # type: ignore[method-assign,assignment]
        self.lost = lost
        self.transport: asyncio.ReadTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def eof_received(self) -> bool:
        if not self.lost.done():
            self.lost.set_result(EOFError("end of file"))
        return False

    def connection_lost(self, exc: BaseException | None) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)


async def close_port(transport: Any, path: str) -> None:
    """Abort the connection and wait (bounded) for the close to finish, even when the caller
    is being cancelled: nothing of the connection may outlive the link's task."""
    transport.abort()  # no flush: nothing of ours is worth waiting for
    closing = asyncio.ensure_future(transport.wait_closed())
    cancelled = False
    while not closing.done():
        try:
            await asyncio.wait_for(asyncio.shield(closing), CLOSE_TIMEOUT_S)
        except asyncio.CancelledError:
            cancelled = True  # finish closing first, then stop
        except (OSError, serial_error(), asyncio.TimeoutError) as exc:
            LOGGER.debug("%s: close: %s", path, exc)
            break
    if not closing.done():
        closing.cancel()
    elif not closing.cancelled() and closing.exception() is not None:
        LOGGER.debug("%s: close: %s", path, closing.exception())
    if cancelled:
        raise asyncio.CancelledError


def describe_loss(exc: BaseException | None) -> str:
    """Why a connection ended, in a phrase: ``closed``, the errno, or the error."""
    if exc is None:
        return "closed"
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"[errno {exc.errno}] {exc.strerror}"
    return str(exc) or type(exc).__name__
