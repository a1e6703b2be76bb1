"""Where the emulated board writes: a pty it creates, or a real serial device; paced at the line.

``LinePacer`` (sans-I/O) knows when bytes written to a UART finish on the line: 35 bytes at
115200 8N1 (10 bits a byte) take 3.04 ms, and the next write waits for the line. A pty delivers
at once, so ``PtyPort`` is written when the last byte would have arrived; a real UART paces
itself, so ``DevicePort`` is written when the first byte would start.

``PtyPort`` is a :class:`~gizmo_host.rigs.board.pty.PtyBoard` (optionally behind a stable
``--link`` symlink): it is ``ready`` once a reader has had the slave open for ``settle_ns`` (a
reader that flushes its input right after opening, as serialx does, loses nothing), and a
hang-up closes the master and plugs a new pty behind the same link. Writes never block: what a
full pty buffer refuses is counted, not queued. ``DevicePort`` opens a device with serialx.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from typing import Any, Protocol

import serialx

from gizmo_host.rigs.board.pty import PtyBoard
from gizmo_host.stream.clock import UART_BITS_PER_BYTE

MAX_DEVICE_BACKLOG = 64 * 1024  # bytes queued to a real device before writes are dropped


class LinePacer:
    """The UART line's schedule: bytes take ``10 / baudrate`` s each, one write after another."""

    def __init__(self, baudrate: int) -> None:
        if baudrate < 50:
            raise ValueError(f"baudrate: expected >= 50, got {baudrate}")
        self.baudrate = baudrate
        self.busy_until_ns = 0

    def transmit_ns(self, nbytes: int) -> int:
        return nbytes * UART_BITS_PER_BYTE * 1_000_000_000 // self.baudrate

    def send(self, now_ns: int, nbytes: int) -> tuple[int, int]:
        """Queue ``nbytes`` at ``now_ns``: when they start and finish on the line."""
        start_ns = max(now_ns, self.busy_until_ns)
        self.busy_until_ns = start_ns + self.transmit_ns(nbytes)
        return start_ns, self.busy_until_ns


class Port(Protocol):
    """What the runner needs of a port."""

    @property
    def writes_at_line_end(self) -> bool: ...

    @property
    def can_hang_up(self) -> bool: ...

    def ready(self, now_ns: int) -> bool: ...

    def write(self, data: bytes) -> None: ...

    def hang_up(self) -> bool:
        """Unplug; whether a reader had the port open (only then can it see the hang-up)."""
        ...

    def plug(self) -> str: ...

    def stats(self) -> dict[str, Any]: ...

    async def close(self) -> None: ...


class PtyPort:
    """A pty the emulator creates; ``link`` keeps a stable name across hang-ups."""

    writes_at_line_end = True

    def __init__(
        self,
        link: str | None = None,
        *,
        settle_ns: int = 50_000_000,
        on_plug: Callable[[str], None] | None = None,
    ) -> None:
        self.link = link
        self.settle_ns = settle_ns
        self._board = PtyBoard(link)
        self._on_plug = on_plug
        self._attached_since_ns: int | None = None
        self.plugs = self.hangups = self.attaches = self.detaches = 0
        self.bytes_written = self.bytes_refused = 0

    @property
    def can_hang_up(self) -> bool:
        return self.link is not None

    @property
    def path(self) -> str | None:
        """The slave's /dev/pts path while plugged."""
        return self._board.slave_name if self._board.master_fd is not None else None

    def plug(self) -> str:
        path = self._board.plug()
        assert self._board.master_fd is not None
        os.set_blocking(self._board.master_fd, False)
        self.plugs += 1
        self._attached_since_ns = None
        if self._on_plug is not None:
            self._on_plug(path)
        return path

    def ready(self, now_ns: int) -> bool:
        if not self._board.reader_attached():
            if self._attached_since_ns is not None:
                self.detaches += 1
            self._attached_since_ns = None
            return False
        if self._attached_since_ns is None:
            self._attached_since_ns = now_ns
            self.attaches += 1
        return now_ns - self._attached_since_ns >= self.settle_ns

    def write(self, data: bytes) -> None:
        fd = self._board.master_fd
        if fd is None:
            self.bytes_refused += len(data)
            return
        try:
            written = os.write(fd, data)
        except BlockingIOError:
            written = 0
        except OSError:  # EIO: nobody has the slave open any more
            written = 0
        self.bytes_written += written
        self.bytes_refused += len(data) - written

    def hang_up(self) -> bool:
        """Close the master: the reader sees a hang-up; the link is gone until plug().
        Returns whether a reader had the slave open: a hang-up while none had (it was still
        reopening after the previous one) is one no reader can count."""
        self.hangups += 1
        observed = self._board.unplug()
        self._attached_since_ns = None
        return observed

    def stats(self) -> dict[str, Any]:
        return {
            "kind": "pty",
            "path": self.path,
            "link": self.link,
            "plugs": self.plugs,
            "hangups": self.hangups,
            "reader_attaches": self.attaches,
            "reader_detaches": self.detaches,
            "bytes_written": self.bytes_written,
            "bytes_refused": self.bytes_refused,
        }

    async def close(self) -> None:
        if self.link is not None:
            self._board.close()
        else:
            self._board.unplug()


class DevicePort:
    """A real serial device (a USB-UART wired to the host), opened with serialx."""

    writes_at_line_end = False
    can_hang_up = False

    def __init__(self, path: str, baudrate: int) -> None:
        self.path = path
        self.baudrate = baudrate
        self._writer: Any = None
        self.bytes_written = self.bytes_refused = 0

    async def open(self) -> None:
        """Open the device (OSError when it cannot be opened)."""
        _, self._writer = await serialx.open_serial_connection(
            url=self.path, baudrate=self.baudrate
        )

    def plug(self) -> str:
        return self.path

    def ready(self, now_ns: int) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    def write(self, data: bytes) -> None:
        writer = self._writer
        if writer is None or writer.is_closing():
            self.bytes_refused += len(data)
            return
        if writer.transport.get_write_buffer_size() > MAX_DEVICE_BACKLOG:
            self.bytes_refused += len(data)
            return
        writer.write(data)
        self.bytes_written += len(data)

    def hang_up(self) -> bool:
        raise RuntimeError("a device port cannot be unplugged by the emulator")

    def stats(self) -> dict[str, Any]:
        return {
            "kind": "device",
            "path": self.path,
            "baudrate": self.baudrate,
            "bytes_written": self.bytes_written,
            "bytes_refused": self.bytes_refused,
        }

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is None:
            return
        writer.close()
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            await asyncio.wait_for(writer.wait_closed(), 2.0)
