"""``UnixSocketServer``: JSON Lines to every client of a Unix stream socket.

It serves up to ``max_clients`` clients (``[publish] unix_max_clients``). Each client gets a
``version`` line first, with a ``socket`` object: the clients connected (their pids, from the
kernel's peer credentials, and what each has not read yet), the limit, and how many were
accepted, refused, evicted and dropped since start. ``gizmo-host doctor`` reads just that line.

A client that keeps up gets every line at once, written to its transport. A client that falls
behind (its transport's buffer over ``CLIENT_HIGH_WATER_BYTES``) has its lines wait in a queue
of its own, where a line whose ``valid_until_ns`` passes before it can be written is skipped
and counted (``expired``): a client that comes back after a stall reads current lines, not the
backlog. A client still further behind than ``max_buffer_bytes`` once its expired lines are
gone is dropped (a reader that far behind cannot trust what it would read). A client that
closes its sending side (``shutdown(SHUT_WR)``, ``socat`` fed from ``/dev/null``) is a reader
like any other: it is served until a write fails.

When every slot is taken, a new client takes the slot of the client furthest behind, if one
has at least ``EVICTABLE_BACKLOG_BYTES`` unread; otherwise it gets one ``error`` line saying
why (with the same ``socket`` object) and is closed. Refusals are counted and logged: the
first at once, then at most one summary line every ``REFUSAL_LOG_INTERVAL_NS``. No slot to
free, none is looked for again for ``REFUSAL_RECHECK_NS`` (rt58: docs/run.md).
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
from typing import Any, cast

from gizmo_host.jsonl import encode_line
from gizmo_host.publish.sinks import LineQueue

LOGGER = logging.getLogger(__name__)
DEFAULT_MAX_BUFFER_BYTES = 256 * 1024
DEFAULT_MAX_CLIENTS = 16  # each may hold DEFAULT_MAX_BUFFER_BYTES of unsent lines
MAX_CLIENTS = 256  # the setting's upper bound: 256 x 256 KiB is 64 MiB at worst
CLOSE_TIMEOUT_S = 2.0
# A client's transport holds at most this much before its lines wait in its own queue, where
# they can still expire: what a transport or the kernel holds is beyond recall.
CLIENT_HIGH_WATER_BYTES = 16 * 1024
# A client with this much unread (kernel accounting: a few lines) may lose its slot to a new one.
EVICTABLE_BACKLOG_BYTES = 4096
REFUSAL_LOG_INTERVAL_NS = 10_000_000_000
REFUSAL_RECHECK_NS = 100_000_000
_OUTQ = struct.Struct("i")  # SIOCOUTQ (= TIOCOUTQ on Linux): bytes the peer has not read
_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class _Client(asyncio.Protocol):
    """One connection: its transport, its queue and its peer's pid."""

    def __init__(self, server: UnixSocketServer) -> None:
        self.server = server
        self.id = -1  # its slot's key, once given one
        self.name = "?"
        self.pid: int | None = None
        self.transport: asyncio.WriteTransport | None = None
        self.queue = LineQueue(server.max_buffer_bytes, drop_oldest=False)
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.WriteTransport, transport)  # uvloop's: no subclass
        # Clients have nothing to say: their input is never read (red team rt12: 15 clients
        # writing as fast as they could cost the host 80 % of a core to read and discard). A
        # client gone shows when a write fails (a verdict goes out at least once a second).
        # Paused on the loop's next turn: Python 3.10's transport adds its reader after this
        # call whatever was paused in it.
        asyncio.get_running_loop().call_soon(self._stop_reading)
        self.server._arrived(self)

    def _stop_reading(self) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            cast(asyncio.ReadTransport, transport).pause_reading()

    def data_received(self, data: bytes) -> None:
        pass  # never called while reading is paused

    def eof_received(self) -> bool:
        return True  # the end of its input is not the end of its reading: keep writing

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self.server._drain(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server._left(self)

    def behind_bytes(self) -> int:
        assert self.transport is not None
        return self.transport.get_write_buffer_size() + self.queue.nbytes


class UnixSocketServer:
    """JSON Lines to every connected client; ``version_line`` first, slow clients' stale
    lines skipped, clients too far behind dropped (see the module doc)."""

    name = "unix_socket"

    def __init__(
        self,
        path: str,
        version_line: bytes,
        *,
        max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES,
        max_clients: int = DEFAULT_MAX_CLIENTS,
        mode: int = 0o660,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        if max_clients < 1:
            raise ValueError(f"max_clients: expected >= 1, got {max_clients!r}")
        self.path = path
        self.max_buffer_bytes = max_buffer_bytes
        self.max_clients = max_clients
        self._version_line = version_line
        self._mode = mode
        self._clock = clock
        self._inode: int | None = None
        self._server: asyncio.AbstractServer | None = None
        self._clients: dict[int, _Client] = {}
        self._next_id = 0
        self.clients_accepted = self.clients_dropped = self.clients_refused = 0
        self.clients_evicted = 0
        self.lines_sent = self.lines_dropped = self.bytes_dropped = self.lines_expired = 0
        self._refusals_unlogged = 0
        self._next_refusal_log_ns: int | None = None
        self._recheck_at_ns = -(2**62)  # no slot to free until then, and each one's unread bytes
        self._backlogs: dict[int, float] = {}

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
        loop = asyncio.get_running_loop()
        self._server = await loop.create_unix_server(lambda: _Client(self), self.path)
        os.chmod(self.path, self._mode)
        self._inode = os.lstat(self.path).st_ino

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for client in list(self._clients.values()):
            assert client.transport is not None
            client.transport.abort()
        if self._server is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), CLOSE_TIMEOUT_S)
            self._server = None
            with contextlib.suppress(FileNotFoundError):
                if os.lstat(self.path).st_ino == self._inode:  # still ours, not a successor's
                    os.unlink(self.path)

    def send(self, line: bytes) -> None:
        self.send_lines([line])

    def send_lines(self, lines: list[bytes]) -> None:
        """``lines`` in order to every client: one transport write each while it keeps up."""
        stalled: list[_Client] = []
        now_ns: int | None = None
        data: bytes | None = None
        count = len(lines)
        for client in self._clients.values():
            transport = client.transport
            assert transport is not None
            if transport.is_closing():
                self.lines_dropped += count
                continue
            if not client.paused and not client.queue:
                if data is None:
                    data = b"".join(lines)
                transport.write(data)  # may pause it: then the next lines queue
                self.lines_sent += count
                continue
            if now_ns is None:
                now_ns = self._clock()
            queue = client.queue
            expired = queue.expired
            for line in lines:
                queue.push(line, now_ns)  # over its budget, its expired lines go first
            self.lines_expired += queue.expired - expired
            if client.behind_bytes() > self.max_buffer_bytes:
                stalled.append(client)
        for client in stalled:
            LOGGER.warning("unix socket client %s is not reading: dropped", client.name)
            self.clients_dropped += 1
            self._discard(client)

    def stats(self) -> dict[str, int]:
        """``queued``: lines handed to clients; ``dropped``: lines a client missed because it
        was over its budget or closing (``dropped_bytes``: backlogs discarded with dropped
        clients); ``expired``: lines skipped for a client that fell behind, because their
        ``valid_until_ns`` passed before they could be written; ``disconnected``: clients
        dropped or evicted for not reading; ``refused``: clients turned away, every slot being
        taken by a client that keeps up."""
        return {
            "queued": self.lines_sent,
            "dropped": self.lines_dropped,
            "dropped_bytes": self.bytes_dropped,
            "expired": self.lines_expired,
            "disconnected": self.clients_dropped + self.clients_evicted,
            "clients": len(self._clients),
            "max_clients": self.max_clients,
            "accepted": self.clients_accepted,
            "refused": self.clients_refused,
            "evicted": self.clients_evicted,
            "lines_sent": self.lines_sent,
        }

    def socket_info(self, backlogs: dict[int, float] | None = None) -> dict[str, Any]:
        """The ``socket`` object of the greeting and of a refusal (``backlogs``: as last asked)."""
        clients = self._clients
        backlogs = backlogs or {cid: _unread_bytes(c) for cid, c in clients.items()}
        return {
            "clients": len(self._clients),
            "max_clients": self.max_clients,
            "accepted": self.clients_accepted,
            "refused": self.clients_refused,
            "evicted": self.clients_evicted,
            "dropped": self.clients_dropped,
            "peers": [
                {"pid": c.pid, "unread_bytes": _finite(backlogs.get(cid, math.inf))}
                for cid, c in clients.items()
            ],
        }

    # -- the clients ---------------------------------------------------------------------------

    def _arrived(self, client: _Client) -> None:
        transport = client.transport
        assert transport is not None
        client.pid = _peer_pid(transport)
        if len(self._clients) >= self.max_clients and not self._evict_furthest_behind():
            self.clients_refused += 1
            self._log_refusal(client.pid)
            transport.write(self._refusal_line())  # a fresh socket: the kernel takes it at once
            transport.close()  # after the line
            return
        client.id = self._next_id
        self._next_id += 1
        client.name = f"#{client.id} (pid {client.pid})"
        self._clients[client.id] = client
        self.clients_accepted += 1
        transport.set_write_buffer_limits(high=CLIENT_HIGH_WATER_BYTES)
        transport.write(_with_field(self._version_line, "socket", self.socket_info()))

    def _drain(self, client: _Client) -> None:
        """Its transport takes more: the queued lines that are still valid, until it pauses."""
        transport, queue = client.transport, client.queue
        assert transport is not None
        now_ns = self._clock()
        while queue and not client.paused and not transport.is_closing():
            expired = queue.expired
            queue.skip_expired(now_ns)
            self.lines_expired += queue.expired - expired
            if not queue:
                break
            transport.write(queue.pop())
            self.lines_sent += 1

    def _left(self, client: _Client) -> None:
        if self._clients.get(client.id) is client:
            del self._clients[client.id]
        client.queue.clear()

    def _discard(self, client: _Client) -> None:
        """Cut ``client`` off, counting what it had not got."""
        self._left(client)
        assert client.transport is not None
        self.bytes_dropped += client.behind_bytes()
        client.transport.abort()

    def _evict_furthest_behind(self) -> bool:
        """Free a slot by dropping the client with the most unread bytes, if it has at least
        ``EVICTABLE_BACKLOG_BYTES`` (one that keeps up is never dropped for a newcomer)."""
        if (now_ns := self._clock()) < self._recheck_at_ns:
            return False  # none was, ``REFUSAL_RECHECK_NS`` ago or less
        backlogs = self._backlogs = {cid: _unread_bytes(c) for cid, c in self._clients.items()}
        victim = max(backlogs, key=backlogs.__getitem__, default=None)
        if victim is None or backlogs[victim] < EVICTABLE_BACKLOG_BYTES:
            self._recheck_at_ns = now_ns + REFUSAL_RECHECK_NS
            return False
        client = self._clients[victim]
        LOGGER.warning(
            "unix socket client %s has %s bytes unread: dropped for a new client",
            client.name,
            backlogs[victim],
        )
        self.clients_evicted += 1
        self._discard(client)
        return True

    def _refusal_line(self) -> bytes:
        return encode_line(
            {
                "type": "error",
                "reason": "too_many_clients",
                "detail": f"all {self.max_clients} client slots are taken by clients that keep "
                "up; try again later",
                "socket": self.socket_info(self._backlogs),
            }
        )

    def _log_refusal(self, pid: int | None) -> None:
        """The first refusal at once, then a summary at most every interval: a client that
        reconnects in a loop cannot flood the journal."""
        now_ns = self._clock()
        self._refusals_unlogged += 1
        if self._next_refusal_log_ns is not None and now_ns < self._next_refusal_log_ns:
            return
        LOGGER.warning(
            "unix socket %s: all %d client slots taken: refused %d client(s) (the latest: pid "
            "%s; %d refused since start; raise [publish] unix_max_clients, or see `gizmo-host "
            "doctor` for who holds the slots)",
            self.path,
            self.max_clients,
            self._refusals_unlogged,
            pid,
            self.clients_refused,
        )
        self._refusals_unlogged = 0
        self._next_refusal_log_ns = now_ns + REFUSAL_LOG_INTERVAL_NS


def _with_field(line: bytes, name: str, value: Any) -> bytes:
    """``line`` (a JSON object) with one more field; a line that is not an object, as is."""
    if not (line.startswith(b"{") and line.endswith(b"}\n")):
        return line
    field = encode_line({name: value})[1:-2]
    body = line[:-2].rstrip()
    return body + (b"," if body != b"{" else b"") + field + b"}\n"


def _peer_pid(transport: asyncio.BaseTransport) -> int | None:
    """The connecting process (SO_PEERCRED, Linux); None where the kernel does not say."""
    sock = transport.get_extra_info("socket")
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return None
    try:
        pid, _, _ = _PEERCRED.unpack(
            sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
        )
    except OSError:
        return None
    return pid if pid > 0 else None


def _unread_bytes(client: _Client) -> float:
    """What a client has not read yet: its queue, its transport's buffer and the socket's send
    queue (SIOCOUTQ, in kernel accounting, so a little more than the payload). A closing
    transport: infinite."""
    transport = client.transport
    assert transport is not None
    if transport.is_closing():
        return math.inf
    queued = client.behind_bytes()
    sock = transport.get_extra_info("socket")
    if sock is None:
        return queued
    try:
        (unread,) = _OUTQ.unpack(fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, bytes(_OUTQ.size)))
    except (OSError, ValueError):  # not Linux, or the socket just closed
        return queued
    return queued + int(unread)


def _finite(value: float) -> int | None:
    return None if math.isinf(value) else int(value)


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
