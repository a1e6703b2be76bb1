"""Live replay: a capture's serial bytes into a pseudo-terminal and its datagrams to their
ports, at the recorded pace, for a live host to read (``gizmo-host replay`` without
``--offline``). The pty hangs up and a new one appears where the capture's port was lost and
opened again, as an unplugged USB adapter would.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import sys
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gizmo_host.capture.channels import MAX_GAP_NS
from gizmo_host.errors import CaptureError
from gizmo_host.jsonl import json_text
from gizmo_host.rigs.board import PtyBoard
from gizmo_host.stream.linkstate import LinkInput
from gizmo_host.timing import LoopScheduler, Pacer, Scheduler, poll

if TYPE_CHECKING:
    from gizmo_host.capture.reader import CaptureReader


OPEN_POLL_S = 0.01  # a pty says a reader opened it by no event: its hang-up flag clears


@dataclass(frozen=True, slots=True)
class PlayerOptions:
    link: str | None = None  # keep a symlink to the pty here
    speed: float = 1.0  # pace factor
    udp_host: str = "127.0.0.1"  # where datagrams go
    wait_s: float = 10.0  # how long to wait for a reader to open the pty
    linger_s: float = 1.0  # keep the pty open this long after the last byte


class LivePlayer:
    """The capture into a pty and loopback UDP, paced on the scheduler's clock (``Pacer``)."""

    def __init__(
        self, reader: CaptureReader, options: PlayerOptions, scheduler: Scheduler | None = None
    ) -> None:
        self.reader, self.options = reader, options
        self._scheduler = scheduler or LoopScheduler()
        self._link = options.link or os.path.join(tempfile.mkdtemp(prefix="gizmo-replay-"), "pty")
        self._board = PtyBoard(self._link)
        self._sockets: dict[tuple[str, int], socket.socket] = {}
        self.written = self.dropped_bytes = self.datagrams = self.send_errors = 0

    async def play(self) -> int:
        from gizmo_host.capture.reader import Datagram, PortEvent, UartChunk  # noqa: PLC0415

        pacer = Pacer(self._scheduler, self.options.speed)
        try:
            self._plug()
            await self._wait_open()
            last_ns: int | None = None
            for message in self.reader.messages():
                t_ns = message[0]
                if last_ns is not None and t_ns - last_ns > MAX_GAP_NS:  # offline's rule
                    raise CaptureError(
                        f"{self.reader.path}: damaged: an input {(t_ns - last_ns) / 3.6e12:.3g} h "
                        f"after the one before it (at most {MAX_GAP_NS // 3_600_000_000_000} h)"
                    )
                last_ns = t_ns if last_ns is None else max(last_ns, t_ns)
                await pacer.wait(t_ns)  # the first message's time is now
                if isinstance(message, UartChunk):
                    self._write(message.data)
                elif isinstance(message, Datagram):
                    self._send(message.sender, message.port, message.data)
                elif isinstance(message, PortEvent):
                    if message.event is LinkInput.LOST:
                        self._board.unplug()
                    elif message.event is LinkInput.OPENED and self._board.master_fd is None:
                        self._plug()
                        pacer.shift(await self._wait_open())
            await self._scheduler.sleep(self.options.linger_s)
        finally:
            self._board.close()
            if not self.options.link:
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.dirname(self._link))
            for sock in self._sockets.values():
                sock.close()
        print(
            json_text(
                {
                    "type": "replay",
                    "bytes_written": self.written,
                    "bytes_dropped": self.dropped_bytes,
                    "datagrams": self.datagrams,
                    "send_errors": self.send_errors,
                }
            ),
            file=sys.stderr,
        )
        return 0

    def _plug(self) -> None:
        pty = self._board.plug()
        assert self._board.master_fd is not None
        os.set_blocking(self._board.master_fd, False)  # a reader that stalls costs bytes
        link = self.options.link
        print(json_text({"type": "pty", "path": pty, "link": link}), flush=True)

    async def _wait_open(self) -> int:
        """Nanoseconds spent waiting (at most ``--wait-s``) for a reader to open the pty: its
        master reports a hang-up while no one has the other side open."""
        fd = self._board.master_fd
        assert fd is not None
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        began_ns = self._scheduler.now_ns()

        def opened() -> bool:
            return not any(event & select.POLLHUP for _, event in poller.poll(0))

        await poll(self._scheduler, opened, self.options.wait_s, OPEN_POLL_S)
        return self._scheduler.now_ns() - began_ns

    def _write(self, data: bytes) -> None:
        fd = self._board.master_fd
        if fd is None:
            self.dropped_bytes += len(data)  # recorded while the port was lost
            return
        try:
            written = os.write(fd, data)
        except (BlockingIOError, OSError):
            written = 0
        self.written += written
        self.dropped_bytes += len(data) - written

    def _send(self, sender: tuple[str, int], port: int, data: bytes) -> None:
        sock = self._sockets.get(sender)
        if sock is None:
            sock = self._sockets[sender] = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setblocking(False)
        try:
            sock.sendto(data, (self.options.udp_host, port))
            self.datagrams += 1
        except OSError:
            self.send_errors += 1
