"""``gizmo-host replay FILE.mcap``: play a capture back, live or offline.

Live (the default): the serial bytes go into a pseudo-terminal and the RflySim datagrams to
their ports on loopback, at the recorded pace (``--speed`` scales it), for a live host to read:
``gizmo-host run --serial PTY``. The pty's path is printed (one JSON line each time a pty is
made); ``--link PATH`` keeps a symlink to it, re-pointed when the capture's port was lost and
opened again (the pty hangs up and a new one appears, as an unplugged USB adapter would). Before
the first byte, and after each replug, it waits (``--wait-s``) for the host to open the pty.

``--offline``: straight through the live ``Host`` on a manual clock at the recorded times
(``gizmo_host.app.replay``), the recorded RflySim datagrams through its world model when the
capture carries the world model's settings: deterministic, as fast as the CPU allows; the
host's JSON Lines (``result``, ``link``, ``verdict``, ``world``, ``stats``) go to stdout. A
damaged or truncated capture: the lines for what could be read, then one error line and exit
status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import select
import socket
import sys
import tempfile
import time
from typing import IO, TYPE_CHECKING

from gizmo_host.emulator import PtyBoard
from gizmo_host.errors import CaptureError
from gizmo_host.stream.linkstate import LinkInput

if TYPE_CHECKING:
    from gizmo_host.capture.reader import CaptureReader


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="an MCAP capture (gizmo-host record)")
    parser.add_argument(
        "--offline",
        action="store_true",
        help="run the capture through the host's pipeline and print its JSON Lines",
    )
    parser.add_argument("--link", metavar="PATH", help="keep a symlink to the pty at PATH")
    parser.add_argument(
        "--speed", type=float, default=1.0, metavar="X", help="pace factor (default 1)"
    )
    parser.add_argument(
        "--udp-host", default="127.0.0.1", help="where datagrams go (default 127.0.0.1)"
    )
    parser.add_argument(
        "--wait-s",
        type=float,
        default=10.0,
        metavar="S",
        help="how long to wait for a reader to open the pty (default 10)",
    )
    parser.add_argument(
        "--linger-s",
        type=float,
        default=1.0,
        metavar="S",
        help="keep the pty open this long after the last byte (default 1)",
    )


def run(args: argparse.Namespace) -> int:
    if not args.speed > 0 or args.wait_s < 0 or args.linger_s < 0:
        print(
            "gizmo-host replay: --speed must be > 0, --wait-s and --linger-s >= 0", file=sys.stderr
        )
        return 2
    try:
        from gizmo_host.capture.reader import CaptureReader  # noqa: PLC0415 - needs mcap
    except ImportError as exc:
        print(f"gizmo-host replay: {exc} (pip install 'gizmo-host[record]')", file=sys.stderr)
        return 2
    try:
        reader = CaptureReader(args.file)
        if args.offline:
            return replay_offline(reader, sys.stdout.buffer)
        return asyncio.run(LivePlayer(reader, args).play())
    except CaptureError as exc:
        print(f"gizmo-host replay: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"gizmo-host replay: {exc}", file=sys.stderr)
        return 1


def replay_offline(reader: CaptureReader, out: IO[bytes]) -> int:
    """The host's lines for ``reader``'s capture on ``out``; raises ``CaptureError``."""
    from gizmo_host.app.replay import OfflineReplay  # noqa: PLC0415 - needs mcap

    replay = OfflineReplay(reader.info, reader.path)
    try:
        for line in replay.replay(reader.messages()):
            out.write(line)
        out.flush()
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no flush error at exit
    return 0


class LivePlayer:
    """The capture into a pty and loopback UDP, paced on the loop's clock."""

    def __init__(self, reader: CaptureReader, args: argparse.Namespace) -> None:
        self.reader, self.args = reader, args
        self._link = args.link or os.path.join(tempfile.mkdtemp(prefix="gizmo-replay-"), "pty")
        self._board = PtyBoard(self._link)
        self._sockets: dict[tuple[str, int], socket.socket] = {}
        self.written = self.dropped_bytes = self.datagrams = self.send_errors = 0

    async def play(self) -> int:
        from gizmo_host.capture.reader import Datagram, PortEvent, UartChunk  # noqa: PLC0415

        loop = asyncio.get_running_loop()
        first_ns = 0
        try:
            self._plug()
            await self._wait_open()
            start = loop.time()  # the loop time of the first message's time
            for message in self.reader.messages():
                t = message[0]
                if first_ns == 0:
                    first_ns = t
                delay = start + (t - first_ns) / 1e9 / self.args.speed - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                if isinstance(message, UartChunk):
                    self._write(message.data)
                elif isinstance(message, Datagram):
                    self._send(message.sender, message.port, message.data)
                elif isinstance(message, PortEvent):
                    if message.event is LinkInput.LOST:
                        self._board.unplug()
                    elif message.event is LinkInput.OPENED and self._board.master_fd is None:
                        self._plug()
                        start += await self._wait_open()
            await asyncio.sleep(self.args.linger_s)
        finally:
            self._board.close()
            if not self.args.link:
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.dirname(self._link))
            for sock in self._sockets.values():
                sock.close()
        print(
            json.dumps(
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
        link = self.args.link
        print(json.dumps({"type": "pty", "path": pty, "link": link}), flush=True)

    async def _wait_open(self) -> float:
        """Seconds spent waiting (at most ``--wait-s``) for a reader to open the pty: its
        master reports a hang-up while no one has the other side open."""
        fd = self._board.master_fd
        assert fd is not None
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        began = time.monotonic()
        while time.monotonic() - began < self.args.wait_s:
            if not any(event & select.POLLHUP for _, event in poller.poll(0)):
                break
            await asyncio.sleep(0.01)
        return time.monotonic() - began

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
            sock.sendto(data, (self.args.udp_host, port))
            self.datagrams += 1
        except OSError:
            self.send_errors += 1
