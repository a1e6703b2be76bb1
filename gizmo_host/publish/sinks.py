"""Sinks that cannot hold each other up: each has its own bounded queue and never blocks.

A sink takes whole JSON lines (``send``) from the publisher in the reader's call, so a sink
that waits would stall the serial path and every other sink. ``QueuedSink`` is the one shape
every byte-stream or datagram output shares (stdout, UDP; MAVLink, Foxglove or Zenoh plug in
the same way): it writes at once while its reader keeps up and otherwise queues, up to
``max_bytes``. The event loop's writer callback drains the queue when the descriptor is
writable. A reader that is gone (``EPIPE``) disconnects the sink (counted); what it would have
got is counted as dropped.

A reader that falls behind never gets a line late. Every ``result``, ``verdict`` and ``world``
line says until when it may be trusted (``valid_until_ns``, host monotonic time): a queued line
whose time has passed when its turn to be written comes is skipped and counted as ``expired``,
so after a stall the reader's next line is a current one, not the backlog. Lines that carry no
validity (``link`` transitions, ``stats`` counters, ``version``, ``error``) stay true of their
own time: they are still delivered, in order. When the queue passes its budget, its expired
lines go first, then the oldest whole lines (counted as ``dropped``). What the kernel already
holds (a pipe's 64 KiB) is beyond recall: a consumer still checks ``valid_until_ns`` itself.

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
import re
import socket
import stat
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

DEFAULT_QUEUE_BYTES = 1024 * 1024  # about 3,000 result lines: seconds of a stalled reader
CLOSE_FLUSH_S = 0.5  # shutdown waits at most this long for a slow reader, then drops the rest
_GONE = frozenset({errno.EPIPE, errno.ECONNRESET, errno.EIO, errno.ENOTCONN, errno.EBADF})
Write = Callable[[bytes | memoryview], int]  # writes what it can; BlockingIOError: nothing


class Sink(Protocol):
    """What the publisher fans lines out to: ``send`` never blocks and never raises."""

    name: str

    def send(self, line: bytes) -> None: ...

    def stats(self) -> dict[str, int]: ...


_VALID_UNTIL = re.compile(rb'"valid_until_ns":(?:(-?\d+)|[^,}]*)')
_NEVER = 2**63  # a line without validity: it never expires


def valid_until_ns(line: bytes | memoryview) -> int | None:
    """A host JSON line's ``valid_until_ns`` (None: it carries none).

    Read from the bytes, without parsing the line: every line that carries it has it at the
    top level before any nested object, and inside a JSON string a quote is always escaped, so
    the first ``"valid_until_ns":`` is the line's own (``null`` or no number: none)."""
    found = _VALID_UNTIL.search(line)
    return None if found is None or found.group(1) is None else int(found.group(1))


class LineQueue:
    """A bounded FIFO of whole lines (sans-I/O): over ``max_bytes``, the lines already expired
    go first (given the time), then the oldest lines not yet started (``drop_oldest``; without
    it the owner decides what to do with a queue over its budget). ``offset`` is how much of
    the head line is already written: a line is never cut, so a stream reader always sees whole
    lines. Each line's ``valid_until_ns`` is read once, when it is queued."""

    __slots__ = (
        "_earliest_ns",
        "_lines",
        "drop_oldest",
        "dropped",
        "expired",
        "max_bytes",
        "nbytes",
        "offset",
    )

    def __init__(self, max_bytes: int, *, drop_oldest: bool = True) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes: expected > 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self.drop_oldest = drop_oldest
        self._lines: deque[tuple[bytes, int]] = deque()  # (line, valid_until_ns or _NEVER)
        self._earliest_ns = _NEVER  # no queued line expires before this
        self.nbytes = 0  # unwritten bytes held
        self.offset = 0
        self.dropped = 0
        self.expired = 0

    def __len__(self) -> int:
        return len(self._lines)

    def push(self, line: bytes, now_ns: int | None = None) -> None:
        until = valid_until_ns(line)
        until = _NEVER if until is None else until
        self._lines.append((line, until))
        self._earliest_ns = min(self._earliest_ns, until)
        self.nbytes += len(line)
        if self.nbytes > self.max_bytes and now_ns is not None:
            self.expire(now_ns)
        lines = self._lines
        while self.drop_oldest and self.nbytes > self.max_bytes and len(lines) > 1:
            victim = 1 if self.offset else 0  # a half-written head line is finished first
            if victim == 1 and len(lines) == 2:
                break
            self.nbytes -= len(lines[victim][0])
            del lines[victim]
            self.dropped += 1

    def expire(self, now_ns: int) -> int:
        """Drop every whole line expired at ``now_ns`` (a half-written head is finished);
        returns how many. Costs nothing while no queued line can have expired."""
        if self._earliest_ns >= now_ns:
            return 0
        first = 1 if self.offset else 0
        kept: deque[tuple[bytes, int]] = deque()
        count = 0
        for i, (line, until) in enumerate(self._lines):
            if i >= first and until < now_ns:
                count += 1
                self.nbytes -= len(line)
            else:
                kept.append((line, until))
        self._lines = kept
        self._earliest_ns = min((until for _, until in kept), default=_NEVER)
        self.expired += count
        return count

    def skip_expired(self, now_ns: int) -> None:
        """Drop the expired whole lines at the front: the next ``head`` is worth writing."""
        lines = self._lines
        while lines and not self.offset and lines[0][1] < now_ns:
            self.nbytes -= len(lines.popleft()[0])
            self.expired += 1
        if not lines:
            self._earliest_ns = _NEVER

    def head(self) -> memoryview:
        return memoryview(self._lines[0][0])[self.offset :]

    def pop(self) -> bytes:
        """The head line, whole (nothing of it written yet)."""
        line = self._lines.popleft()[0]
        self.nbytes -= len(line) - self.offset
        self.offset = 0
        return line

    def consumed(self, n: int) -> None:
        """``n`` bytes of the head were written."""
        self.nbytes -= n
        self.offset += n
        if self.offset >= len(self._lines[0][0]):
            self._lines.popleft()
            self.offset = 0

    def clear(self) -> int:
        """Forget every queued line; returns how many."""
        n = len(self._lines)
        self._lines.clear()
        self.nbytes = self.offset = 0
        self._earliest_ns = _NEVER
        return n


class QueuedSink:
    """Lines to a non-blocking descriptor: written at once when possible, else queued (bounded,
    drop-oldest) and drained by the loop's writer callback on ``fd``.

    ``datagram``: each line is one datagram (never split); a send error other than "gone" is
    counted and the datagram dropped. ``fd`` None: the writes never block (a regular file), so
    nothing is ever queued. ``clock``: host time, against which queued lines expire.
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
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.name = name
        self._clock = clock
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
            queue.push(line, self._clock())
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

    def send_lines(self, lines: list[bytes]) -> None:
        """``send`` each of ``lines``, in order, with one write while the reader keeps up (a
        read's worth of lines: one system call, one wake-up of the reader, not one per line).
        What the write leaves is queued line by line, as ``send`` would queue it."""
        queue = self._queue
        if self._datagram or self.closed or queue or len(lines) < 2:
            for line in lines:
                self.send(line)
            return
        data = b"".join(lines)
        try:
            n = self._write(data)
        except BlockingIOError:
            n = 0
        except OSError:  # counted as ``send`` counts it, line by line
            for line in lines:
                self.send(line)
            return
        self.queued += len(lines)
        if n == len(data):
            self.written += len(lines)
            return
        for line in lines:
            if n >= len(line):
                n -= len(line)
                self.written += 1
                continue
            queue.push(line)
            if n:
                queue.consumed(n)
                n = 0
        self._arm()

    @property
    def expired(self) -> int:
        """Lines skipped because their ``valid_until_ns`` passed while they waited."""
        return self._queue.expired

    def stats(self) -> dict[str, int]:
        return {
            "queued": self.queued,
            "written": self.written,
            "dropped": self.dropped,
            "expired": self._queue.expired,
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
        now_ns = self._clock()
        while queue:
            queue.skip_expired(now_ns)
            if not queue:
                break
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


def stdout_sink(
    fd: int = 1,
    *,
    max_bytes: int = DEFAULT_QUEUE_BYTES,
    clock: Callable[[], int] = time.monotonic_ns,
) -> QueuedSink:
    """A ``QueuedSink`` on stdout (``fd``) that never blocks the loop (see the module doc)."""
    options: dict[str, Any] = {"max_bytes": max_bytes, "clock": clock}
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:  # closed (``>&-``): the first line disconnects it, counted
        return QueuedSink("stdout", functools.partial(_refuse, exc), None, **options)
    if stat.S_ISREG(mode):
        return QueuedSink("stdout", functools.partial(_write_all, fd), None, **options)
    if stat.S_ISSOCK(mode):
        sock = socket.socket(fileno=os.dup(fd))
        return QueuedSink(
            "stdout",
            lambda data: sock.send(data, socket.MSG_DONTWAIT),
            sock.fileno(),
            on_close=sock.close,
            **options,
        )
    own, close = _reopen_nonblocking(fd)
    return QueuedSink("stdout", functools.partial(os.write, own), own, on_close=close, **options)


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
