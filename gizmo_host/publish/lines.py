"""JSON Lines publishing: stdout, a Unix domain socket server, and UDP datagrams.

``JsonLinesPublisher`` is a service listener: it turns each result, link event and verdict (and,
as a world service listener, each world snapshot) into one JSON object (always with a
``type``), encodes it once, and hands the line to every sink.
Sinks never block the reader, and none waits for another (``gizmo_host.publish.sinks``: each has
its own bounded queue, counted in ``stats``):

- ``UnixSocketServer`` serves up to ``max_clients`` clients, greets each with a ``version``
  line, and disconnects a client whose unsent backlog passes ``max_buffer_bytes`` (a stalled or
  slow reader). A client that closes its sending side (``shutdown(SHUT_WR)``, ``socat`` fed
  from ``/dev/null``) is a reader like any other: it is served until a write fails. When every
  slot is taken, a new client takes the slot of the client furthest behind, if one has at
  least ``EVICTABLE_BACKLOG_BYTES`` unread; otherwise it gets one ``error`` line saying why;
- stdout and UDP are ``QueuedSink``s (``stdout_sink``, ``udp_sink``): written at once while
  their reader keeps up, else queued up to a byte budget, oldest lines dropped first.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import math
import os
import socket
import stat
import struct
import termios
import time
from collections.abc import Callable
from typing import Any

from fusion import WorldSnapshot
from gizmo_host.jsonl import encode_line
from gizmo_host.publish.sinks import Sink
from gizmo_host.stream.events import LinkEvent, ReceivedResult
from gizmo_host.stream.store import LinkVerdict

LOGGER = logging.getLogger(__name__)
DEFAULT_MAX_BUFFER_BYTES = 256 * 1024
DEFAULT_MAX_CLIENTS = 16  # each may hold DEFAULT_MAX_BUFFER_BYTES of unsent lines
CLOSE_TIMEOUT_S = 2.0
MAX_CLIENT_INPUT_BYTES = 4096  # clients have nothing to say; read and discard at most this
# A client with this much unread (kernel accounting: a few lines) may lose its slot to a new one.
EVICTABLE_BACKLOG_BYTES = 4096
_OUTQ = struct.Struct("i")  # SIOCOUTQ (= TIOCOUTQ on Linux): bytes the peer has not read


Message = ReceivedResult | LinkEvent | LinkVerdict | WorldSnapshot


def with_types(version: dict[str, Any], *types: str) -> dict[str, Any]:
    """A ``version`` message whose ``types`` also lists ``types`` (e.g. ``"world"``)."""
    return {**version, "types": [*version["types"], *types]}


class JsonLinesPublisher:
    """A service listener that fans JSON lines out to sinks."""

    def __init__(self, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self._clock = clock
        self._sinks: list[Sink] = []
        self.lines = 0

    def add_sink(self, sink: Sink) -> None:
        self._sinks.append(sink)

    def sink_stats(self) -> dict[str, dict[str, int]]:
        """Per sink (by name): ``queued``, ``dropped``, ``disconnected`` and its own counters."""
        return {sink.name: sink.stats() for sink in self._sinks}

    def __call__(self, message: Message) -> None:
        if isinstance(message, ReceivedResult):  # the per-frame path: a template, no dict
            line = message.to_json_line(self._clock())
        else:
            line = encode_line(message.to_dict())
        self.lines += 1
        for sink in self._sinks:
            sink.send(line)

    def publish(self, obj: dict[str, Any]) -> None:
        self.send_line(encode_line(obj))

    def send_line(self, line: bytes) -> None:
        self.lines += 1
        for sink in self._sinks:
            sink.send(line)


class _Client:
    __slots__ = ("name", "transport")

    def __init__(self, name: str, transport: asyncio.WriteTransport) -> None:
        self.name = name
        self.transport = transport  # written directly: the StreamWriter adds only a call


class UnixSocketServer:
    """JSON Lines to every connected client; ``version_line`` first, slow clients dropped.

    Its queues are the clients' transports, bounded by ``max_buffer_bytes`` each; the policy
    is to disconnect (a reader that falls that far behind cannot trust what it would read).
    """

    name = "unix_socket"

    def __init__(
        self,
        path: str,
        version_line: bytes,
        *,
        max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES,
        max_clients: int = DEFAULT_MAX_CLIENTS,
        mode: int = 0o660,
    ) -> None:
        self.path = path
        self._version_line = version_line
        self._max_buffer_bytes = max_buffer_bytes
        self._max_clients = max_clients
        self._mode = mode
        self._inode: int | None = None
        self._server: asyncio.AbstractServer | None = None
        self._clients: dict[int, _Client] = {}
        self._handlers: set[asyncio.Task[Any]] = set()
        self._next_id = 0
        self.clients_accepted = self.clients_dropped = self.clients_refused = 0
        self.clients_evicted = 0
        self.lines_sent = self.lines_dropped = self.bytes_dropped = 0
        self._refusal_line = encode_line(
            {
                "type": "error",
                "reason": "too_many_clients",
                "detail": f"all {max_clients} client slots are taken by clients that keep up; "
                "try again later",
            }
        )

    @property
    def client_count(self) -> int:
        return len(self._clients)

    async def start(self) -> None:
        """Bind ``path``; a stale socket is replaced, a live one (another instance) is not."""
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(self.path).st_mode):
                if _is_live(self.path):
                    raise OSError(
                        errno.EADDRINUSE, f"another process is serving {self.path}", self.path
                    )
                os.unlink(self.path)  # a stale socket from a previous run
        # The process umask applies at bind (the systemd unit sets UMask=0077), then the mode.
        self._server = await asyncio.start_unix_server(self._handle, self.path)
        os.chmod(self.path, self._mode)
        self._inode = os.lstat(self.path).st_ino

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for client in list(self._clients.values()):
            client.transport.abort()  # each handler then sees EOF and returns
        if self._handlers:
            await asyncio.wait(list(self._handlers), timeout=CLOSE_TIMEOUT_S)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
            with contextlib.suppress(FileNotFoundError):
                if os.lstat(self.path).st_ino == self._inode:  # still ours, not a successor's
                    os.unlink(self.path)

    def send(self, line: bytes) -> None:
        limit = self._max_buffer_bytes - len(line)
        stalled: list[int] = []
        for client_id, client in self._clients.items():
            transport = client.transport
            if transport.is_closing():
                self.lines_dropped += 1
                continue
            if transport.get_write_buffer_size() > limit:
                stalled.append(client_id)
                self.lines_dropped += 1
                continue
            transport.write(line)
            self.lines_sent += 1
        for client_id in stalled:
            client = self._clients.pop(client_id)
            LOGGER.warning("unix socket client %s is not reading: dropped", client.name)
            self.clients_dropped += 1
            self.bytes_dropped += client.transport.get_write_buffer_size()
            client.transport.abort()

    def stats(self) -> dict[str, int]:
        """``queued``: lines handed to clients; ``dropped``: lines a client missed because it
        was over its budget or closing (``dropped_bytes``: backlogs discarded with dropped
        clients); ``disconnected``: clients dropped or evicted for not reading."""
        return {
            "queued": self.lines_sent,
            "dropped": self.lines_dropped,
            "dropped_bytes": self.bytes_dropped,
            "disconnected": self.clients_dropped + self.clients_evicted,
            "clients": len(self._clients),
            "accepted": self.clients_accepted,
            "refused": self.clients_refused,
            "evicted": self.clients_evicted,
            "lines_sent": self.lines_sent,
        }

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._clients) >= self._max_clients and not self._evict_furthest_behind():
            self.clients_refused += 1
            LOGGER.warning("unix socket: all %d client slots taken: refused", self._max_clients)
            writer.write(self._refusal_line)  # a fresh socket: the kernel takes it at once
            writer.transport.close()  # after the line
            return
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        client_id = self._next_id
        self._next_id += 1
        self._clients[client_id] = _Client(f"#{client_id}", writer.transport)
        self.clients_accepted += 1
        writer.write(self._version_line)
        try:
            while await reader.read(MAX_CLIENT_INPUT_BYTES):
                pass  # input is ignored
            # End of the client's input is not the end of its reading (shutdown(SHUT_WR),
            # `socat - UNIX:...` fed from /dev/null): serve it until a write fails or it is
            # dropped; either closes the transport.
            await writer.wait_closed()
        except (OSError, asyncio.CancelledError):
            pass  # a vanished client, or the server shutting down: end quietly
        finally:
            self._clients.pop(client_id, None)
            writer.transport.abort()
            self._handlers.discard(task)

    def _evict_furthest_behind(self) -> bool:
        """Free a slot by dropping the client with the most unread bytes, if it has at least
        ``EVICTABLE_BACKLOG_BYTES``: a client that keeps up is never dropped for a newcomer."""
        backlogs = {cid: _unread_bytes(c.transport) for cid, c in self._clients.items()}
        victim = max(backlogs, key=backlogs.__getitem__, default=None)
        if victim is None or backlogs[victim] < EVICTABLE_BACKLOG_BYTES:
            return False
        client = self._clients.pop(victim)
        LOGGER.warning(
            "unix socket client %s has %s bytes unread: dropped for a new client",
            client.name,
            backlogs[victim],
        )
        self.clients_evicted += 1
        self.bytes_dropped += client.transport.get_write_buffer_size()
        client.transport.abort()
        return True


def _unread_bytes(transport: asyncio.WriteTransport) -> float:
    """What a client has not read yet: our buffer plus the socket's send queue (SIOCOUTQ, in
    kernel accounting, so a little more than the payload). A closing transport: infinite."""
    if transport.is_closing():
        return math.inf
    queued = transport.get_write_buffer_size()
    sock = transport.get_extra_info("socket")
    if sock is None:
        return queued
    try:
        (unread,) = _OUTQ.unpack(fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, bytes(_OUTQ.size)))
    except (OSError, ValueError):  # not Linux, or the socket just closed
        return queued
    return queued + int(unread)


def _is_live(path: str) -> bool:
    """Whether something accepts connections on the Unix socket ``path``."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    else:
        return True
    finally:
        probe.close()
