"""Sinks that cannot hold each other up: each has its own bounded queue and never blocks.

A sink takes whole JSON lines (``send``) from the publisher in the reader's call, so a sink
that waits would stall the serial path and every other sink. ``QueuedSink`` is the one shape
every byte-stream or datagram output shares (stdout, UDP; MAVLink, Foxglove or Zenoh plug in
the same way): it writes at once while its reader keeps up and otherwise queues, up to
``max_bytes``, dropping the oldest whole lines first (counted: a consumer that comes back gets
the newest lines, and every ``verdict``/``world`` line says until when it holds, so a gap is
safe). The event loop's writer callback drains the queue when the descriptor is writable. A
reader that is gone (``EPIPE``) disconnects the sink (counted); what it would have got is
counted as dropped.

Stdout is opened anew, non-blocking, as its own open file description (``/proc/self/fd/1``):
setting ``O_NONBLOCK`` on the inherited one would also change it for the shell or pipeline that
shares it. A terminal stalls too (Ctrl-S, a slow serial console, a paused ``less``): it is
reopened the same way. A socket (systemd's journal) is written with ``MSG_DONTWAIT`` instead.
A regular file is written directly: no reader can stall it, only the disk (a full disk is
counted as an error per line), and a non-blocking flag means nothing to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import socket
import stat
from collections import deque
from collections.abc import Callable
from typing import Protocol

DEFAULT_QUEUE_BYTES = 1024 * 1024  # about 3,000 result lines: seconds of a stalled reader
CLOSE_FLUSH_S = 0.5  # shutdown waits at most this long for a slow reader, then drops the rest
_GONE = frozenset({errno.EPIPE, errno.ECONNRESET, errno.EIO, errno.ENOTCONN, errno.EBADF})
Write = Callable[[bytes | memoryview], int]  # writes what it can; BlockingIOError: nothing


class Sink(Protocol):
    """What the publisher fans lines out to: ``send`` never blocks and never raises."""

    name: str

    def send(self, line: bytes) -> None: ...

    def stats(self) -> dict[str, int]: ...


class LineQueue:
    """A bounded FIFO of whole lines (sans-I/O): over ``max_bytes``, the oldest lines not yet
    started go first. ``offset`` is how much of the head line is already written: a line is
    never cut, so a stream reader always sees whole lines."""

    __slots__ = ("_lines", "dropped", "max_bytes", "nbytes", "offset")

    def __init__(self, max_bytes: int) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes: expected > 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self._lines: deque[bytes] = deque()
        self.nbytes = 0  # unwritten bytes held
        self.offset = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._lines)

    def push(self, line: bytes) -> None:
        lines = self._lines
        lines.append(line)
        self.nbytes += len(line)
        while self.nbytes > self.max_bytes and len(lines) > 1:
            victim = 1 if self.offset else 0  # a half-written head line is finished first
            if victim == 1 and len(lines) == 2:
                break
            self.nbytes -= len(lines[victim])
            del lines[victim]
            self.dropped += 1

    def head(self) -> memoryview:
        return memoryview(self._lines[0])[self.offset :]

    def consumed(self, n: int) -> None:
        """``n`` bytes of the head were written."""
        self.nbytes -= n
        self.offset += n
        if self.offset >= len(self._lines[0]):
            self._lines.popleft()
            self.offset = 0

    def clear(self) -> int:
        """Forget every queued line; returns how many."""
        n = len(self._lines)
        self._lines.clear()
        self.nbytes = self.offset = 0
        return n


class QueuedSink:
    """Lines to a non-blocking descriptor: written at once when possible, else queued (bounded,
    drop-oldest) and drained by the loop's writer callback on ``fd``.

    ``datagram``: each line is one datagram (never split); a send error other than "gone" is
    counted and the datagram dropped. ``fd`` None: the writes never block (a regular file), so
    nothing is ever queued.
    """

    def __init__(
        self,
        name: str,
        write: Write,
        fd: int | None,
        *,
        max_bytes: int = DEFAULT_QUEUE_BYTES,
        datagram: bool = False,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self._write = write
        self._fd = fd
        self._datagram = datagram
        self._queue = LineQueue(max_bytes)
        self._on_close = on_close
        self._loop: asyncio.AbstractEventLoop | None = None  # set while a writer is armed
        self._flushed: asyncio.Future[None] | None = None
        self.queued = self.written = self.errors = self.disconnected = self.lost = 0
        self.closed = False

    @property
    def pending_bytes(self) -> int:
        return self._queue.nbytes

    @property
    def dropped(self) -> int:
        """Lines that never reached the reader: the oldest dropped, or lost to a disconnect."""
        return self._queue.dropped + self.lost

    def send(self, line: bytes) -> None:
        self.queued += 1
        if self.closed:
            self.lost += 1
            return
        queue = self._queue
        if queue:
            queue.push(line)
            if self._loop is None:  # no writer armed (no loop when it queued): try now
                self._drain()
                if queue:
                    self._arm()
            return
        try:  # the fast path: the reader keeps up, one write
            n = self._write(line)
        except BlockingIOError:
            n = 0
        except OSError as exc:
            self.lost += 1
            self._failed(exc)
            return
        if n == len(line):
            self.written += 1
            return
        queue.push(line)
        if n:
            queue.consumed(n)
        self._arm()

    def stats(self) -> dict[str, int]:
        return {
            "queued": self.queued,
            "written": self.written,
            "dropped": self.dropped,
            "disconnected": self.disconnected,
            "errors": self.errors,
            "pending_bytes": self._queue.nbytes,
        }

    async def close(self, flush_s: float = CLOSE_FLUSH_S) -> None:
        """Flush what the reader takes within ``flush_s``, drop the rest (counted), close."""
        if self._queue and self._loop is not None and not self.closed:
            self._flushed = self._loop.create_future()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._flushed), flush_s)
        self._stop(lost=True)
        if self._on_close is not None:
            self._on_close()
            self._on_close = None

    def _arm(self) -> None:
        if self._loop is not None or self._fd is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): the next send retries
            return
        loop.add_writer(self._fd, self._drain)
        self._loop = loop

    def _drain(self) -> None:
        """The descriptor is writable: write queued lines until it would block."""
        queue, write = self._queue, self._write
        while queue:
            head = queue.head()
            try:
                n = write(head)
            except BlockingIOError:
                return
            except OSError as exc:
                queue.consumed(len(head))  # this line is lost, whatever the error
                self.lost += 1
                self._failed(exc)
                continue
            queue.consumed(n)
            if n == len(head):
                self.written += 1
        self._disarm()
        if self._flushed is not None and not self._flushed.done():
            self._flushed.set_result(None)

    def _failed(self, exc: OSError) -> None:
        if exc.errno in _GONE:  # the reader went away: nothing more will reach it
            self.disconnected += 1
            self._stop(lost=True)
        else:  # a full disk, a refused datagram: this line is lost, the next may pass
            self.errors += 1

    def _stop(self, *, lost: bool) -> None:
        if lost:
            self.lost += self._queue.clear()
        self.closed = True
        self._disarm()
        if self._flushed is not None and not self._flushed.done():
            self._flushed.set_result(None)

    def _disarm(self) -> None:
        if self._loop is not None and self._fd is not None:
            self._loop.remove_writer(self._fd)
        self._loop = None


def stdout_sink(fd: int = 1, *, max_bytes: int = DEFAULT_QUEUE_BYTES) -> QueuedSink:
    """A ``QueuedSink`` on stdout (``fd``) that never blocks the loop (see the module doc)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:  # closed (``>&-``): the first line disconnects it, counted
        return QueuedSink("stdout", functools.partial(_refuse, exc), None, max_bytes=max_bytes)
    if stat.S_ISREG(mode):
        return QueuedSink("stdout", functools.partial(_write_all, fd), None, max_bytes=max_bytes)
    if stat.S_ISSOCK(mode):
        sock = socket.socket(fileno=os.dup(fd))
        return QueuedSink(
            "stdout",
            lambda data: sock.send(data, socket.MSG_DONTWAIT),
            sock.fileno(),
            max_bytes=max_bytes,
            on_close=sock.close,
        )
    own, close = _reopen_nonblocking(fd)
    return QueuedSink(
        "stdout", functools.partial(os.write, own), own, max_bytes=max_bytes, on_close=close
    )


def _reopen_nonblocking(fd: int) -> tuple[int, Callable[[], None]]:
    """A new open file description of ``fd``'s pipe or terminal, non-blocking, and how to close
    it. Without ``/proc``: a duplicate made non-blocking, which shares the flag with whoever
    else holds the description, so closing it makes it blocking again."""
    flags = os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        own = os.open(f"/proc/self/fd/{fd}", flags)
    except OSError:
        own = os.dup(fd)
        os.set_blocking(own, False)

        def restore() -> None:
            with contextlib.suppress(OSError):
                os.set_blocking(own, True)
            os.close(own)

        return own, restore
    return own, lambda: os.close(own)


def _write_all(fd: int, data: bytes | memoryview) -> int:
    """A regular file: the kernel takes it all (or fails: a full disk), no reader can stall."""
    total = len(data)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    return total


async def udp_sink(host: str, port: int, *, max_bytes: int = DEFAULT_QUEUE_BYTES) -> QueuedSink:
    """A ``QueuedSink`` sending one datagram per line to ``host:port`` from a connected,
    non-blocking socket; refusals (nobody listens yet) are counted as errors."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setblocking(False)
        sock.connect(address)
    except OSError:
        sock.close()
        raise
    return QueuedSink(
        "udp", sock.send, sock.fileno(), max_bytes=max_bytes, datagram=True, on_close=sock.close
    )


def _refuse(exc: OSError, data: bytes | memoryview) -> int:
    raise exc
