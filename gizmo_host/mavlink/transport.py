"""The byte pipe to an autopilot over UDP, TCP or a serial port, on the asyncio loop.

``MavlinkTransport.run()`` opens the :class:`~gizmo_host.mavlink.urls.Endpoint`, hands every
chunk it receives to ``on_bytes(data, host_ns, source)`` and reopens after a failure or a
lost connection, backing off up to ``backoff_max_s``; it never raises for the peer's sake (an
unreachable autopilot is a transport that stays closed, counted and described in ``stats``).
``source`` is a datagram's sender address, ``None`` on a stream (TCP, serial: one peer).

A datagram longer than ``max_datagram`` is dropped unread and counted (a MAVLink frame is at
most 280 bytes): junk must cost the loop next to nothing, since the board's UART is read on it.
``send(data, to)`` never blocks and never picks its own peer: a ``udpin`` endpoint sends to
``to`` (the session's bound autopilot) or to its fixed ``send_to``, never to whoever spoke
last; bytes for a closed pipe, or with nowhere to go, are counted and dropped. A serial port
opens through serialx, as the vision link does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import serialx

from gizmo_host.timing import Backoff, LoopScheduler, Scheduler

from .urls import Endpoint, Kind

LOGGER = logging.getLogger(__name__)
Source = tuple[str, int]  # a datagram's sender (host, port)
BytesHandler = Callable[[bytes, int, "Source | None"], None]
MAX_DATAGRAM = 2048  # bytes: several whole frames fit; more is not an autopilot's datagram
_CLOSE_TIMEOUT_S = 2.0
_MAX_WRITE_BUFFER = 64 * 1024  # a stream transport further behind than this drops sends


class _Protocol(asyncio.Protocol, asyncio.DatagramProtocol):
    def __init__(self, owner: MavlinkTransport, lost: asyncio.Future[BaseException | None]) -> None:
        self._owner = owner
        self._lost = lost

    def data_received(self, data: bytes) -> None:
        self._owner._received(data, None)

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self._owner._received(data, addr)

    def error_received(self, exc: Exception) -> None:
        self._owner.send_errors += 1  # ICMP unreachable on UDP: nobody listens yet

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._lost.done():
            self._lost.set_result(exc)


class MavlinkTransport:
    """One endpoint, opened and reopened for as long as :meth:`run` runs."""

    def __init__(
        self,
        endpoint: Endpoint,
        on_bytes: BytesHandler,
        *,
        clock: Callable[[], int] = time.monotonic_ns,
        scheduler: Scheduler | None = None,
        backoff_min_s: float = 0.2,
        backoff_max_s: float = 5.0,
        open_serial: Callable[..., Any] = serialx.create_serial_connection,
        max_datagram: int = MAX_DATAGRAM,
    ) -> None:
        self._backoff = Backoff(backoff_min_s, backoff_max_s)
        self.endpoint = endpoint
        self._on_bytes = on_bytes
        self._clock = clock
        self._scheduler = scheduler or LoopScheduler(clock)
        self._open_serial = open_serial
        self._max_datagram = max_datagram
        self._transport: Any = None
        self.opens = self.open_failures = self.disconnects = 0
        self.rx_bytes = self.tx_bytes = self.sent = self.send_dropped = self.send_errors = 0
        self.oversized = 0
        self.last_error: str | None = None

    @property
    def is_open(self) -> bool:
        return self._transport is not None

    @property
    def local_port(self) -> int | None:
        """The bound local port of an open UDP or TCP endpoint (a test binds port 0)."""
        sock = None if self._transport is None else self._transport.get_extra_info("socket")
        return None if sock is None else int(sock.getsockname()[1])

    async def run(self) -> None:
        failures = 0  # opens that failed in a row
        while True:
            lost: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
            try:
                self._transport = await self._open(lost)
            except (OSError, serialx.SerialException, ValueError) as exc:
                self.open_failures += 1
                self.last_error = f"open {self.endpoint.describe()}: {exc}"
                LOGGER.debug("%s", self.last_error)
                failures += 1
                await self._scheduler.sleep(self._backoff.delay_s(failures))
                continue
            self.opens += 1
            self.last_error = None
            failures = 0
            try:
                reason = await lost
            finally:
                transport, self._transport = self._transport, None
                transport.abort()
                await _closed(transport)
            self.disconnects += 1
            self.last_error = f"{self.endpoint.describe()}: connection lost ({reason or 'closed'})"
            await self._scheduler.sleep(self._backoff.delay_s(failures))

    async def _open(self, lost: asyncio.Future[BaseException | None]) -> Any:
        loop = asyncio.get_running_loop()
        ep = self.endpoint
        protocol = _Protocol(self, lost)
        transport: Any
        if ep.kind is Kind.UDPIN:
            transport, _ = await loop.create_datagram_endpoint(
                lambda: protocol, local_addr=(ep.host, ep.port)
            )
        elif ep.kind is Kind.UDPOUT:
            transport, _ = await loop.create_datagram_endpoint(
                lambda: protocol, remote_addr=(ep.host, ep.port)
            )
        elif ep.kind is Kind.TCP:
            transport, _ = await loop.create_connection(lambda: protocol, ep.host, ep.port)
        else:
            transport, _ = await self._open_serial(
                loop, lambda: protocol, ep.host, baudrate=ep.port, exclusive=True
            )
        return transport

    def _received(self, data: bytes, addr: tuple[Any, ...] | None) -> None:
        now_ns = self._clock()
        self.rx_bytes += len(data)
        if addr is None:
            self._on_bytes(data, now_ns, None)
        elif len(data) > self._max_datagram:
            self.oversized += 1
        else:
            self._on_bytes(data, now_ns, (str(addr[0]), int(addr[1])))

    def send(self, data: bytes, to: Source | None = None) -> bool:
        """Queue ``data`` to the peer (``to``, for a ``udpin`` endpoint without ``send_to``);
        ``False`` (counted) when there is nowhere to send it."""
        transport = self._transport
        if transport is None or transport.is_closing():
            self.send_dropped += 1
            return False
        kind = self.endpoint.kind
        try:
            if kind is Kind.UDPIN:
                peer = self.endpoint.send_to or to
                if peer is None:
                    self.send_dropped += 1
                    return False
                transport.sendto(data, peer)
            elif kind is Kind.UDPOUT:
                transport.sendto(data)
            else:
                if transport.get_write_buffer_size() > _MAX_WRITE_BUFFER:
                    self.send_dropped += 1
                    return False
                transport.write(data)
        except (OSError, RuntimeError, serialx.SerialException):
            self.send_errors += 1
            return False
        self.sent += 1
        self.tx_bytes += len(data)
        return True

    def stats(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint.describe(),
            "open": self.is_open,
            "opens": self.opens,
            "open_failures": self.open_failures,
            "disconnects": self.disconnects,
            "rx_bytes": self.rx_bytes,
            "tx_bytes": self.tx_bytes,
            "sent": self.sent,
            "send_dropped": self.send_dropped,
            "send_errors": self.send_errors,
            "oversized": self.oversized,
            "last_error": self.last_error,
        }


async def _closed(transport: Any) -> None:
    """Wait (bounded) for a serial transport's close, even while being cancelled: nothing
    of the connection may outlive the task (sockets close at once)."""
    wait_closed = getattr(transport, "wait_closed", None)
    if wait_closed is None:
        return
    closing = asyncio.ensure_future(wait_closed())
    try:
        await asyncio.wait_for(asyncio.shield(closing), _CLOSE_TIMEOUT_S)
    except asyncio.CancelledError:
        await asyncio.wait([closing], timeout=_CLOSE_TIMEOUT_S)
        raise
    except (OSError, serialx.SerialException, asyncio.TimeoutError) as exc:
        LOGGER.debug("close: %s", exc)
    finally:
        if not closing.done():
            closing.cancel()
