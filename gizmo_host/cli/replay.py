"""``gizmo-host replay FILE.mcap``: play a capture back, live or offline.

Live (the default): the serial bytes go into a pseudo-terminal and the RflySim datagrams to
their ports on loopback, at the recorded pace (``--speed`` scales it), for a live host to read:
``gizmo-host run --serial PTY``. The pty's path is printed (one JSON line each time a pty is
made); ``--link PATH`` keeps a symlink to it, re-pointed when the capture's port was lost and
opened again (the pty hangs up and a new one appears, as an unplugged USB adapter would). Before
the first byte, and after each replug, it waits (``--wait-s``) for the host to open the pty.

``--offline``: straight through the live ``Host`` on a manual clock at the recorded times
(``gizmo_host.app.offline_replay``), the recorded RflySim datagrams through its world model when the
capture carries the world model's settings: deterministic, as fast as the CPU allows; the
host's JSON Lines (``result``, ``link``, ``verdict``, ``world``, ``stats``) go to stdout. A
damaged or truncated capture: the lines for what could be read, then one error line and exit
status 1.

``--foxglove [HOST:PORT]`` serves the capture to Foxglove instead, at the recorded pace;
``--offline --foxglove-out OUT.mcap`` also writes the Foxglove topics into a new MCAP file
(both recomputed from the inputs: ``gizmo_host.app.foxglove_replay``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import select
import sys
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING

from gizmo_core import ConfigError
from gizmo_host.app.foxglove_view import add_foxglove_flag, check_listen
from gizmo_host.app.settings import default
from gizmo_host.cli.common import EXIT_USAGE, file_to_read, file_to_write, require_extra
from gizmo_host.errors import CaptureError, ServiceFailed

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
    add_foxglove_flag(parser)
    parser.add_argument(
        "--foxglove-out",
        metavar="OUT.mcap",
        help="with --offline: also write the Foxglove topics into a new MCAP file",
    )
    parser.add_argument(
        "--linger-s",
        type=float,
        default=1.0,
        metavar="S",
        help="keep the pty (or the Foxglove server) open this long after the end (default 1)",
    )


# The flags' ranges: a speed of 1e-300 or a wait of inf would sleep for good (red team rt24).
MAX_SPEED = 1000.0
MAX_WAIT_S = 3600.0


def run(args: argparse.Namespace) -> int:
    if not (
        1 / MAX_SPEED <= args.speed <= MAX_SPEED
        and 0 <= args.wait_s <= MAX_WAIT_S
        and 0 <= args.linger_s <= MAX_WAIT_S
    ):
        print(
            f"gizmo-host replay: --speed must be from {1 / MAX_SPEED:g} to {MAX_SPEED:g}, "
            f"--wait-s and --linger-s from 0 to {MAX_WAIT_S:g}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    foxglove = None
    try:
        if getattr(args, "foxglove__enabled", None):
            foxglove = getattr(args, "foxglove__listen", None) or default("foxglove.listen")
            check_listen(foxglove)
            if args.offline:
                raise ConfigError("--foxglove: serves live; with --offline use --foxglove-out")
        if args.foxglove_out is not None and not args.offline:
            raise ConfigError("--foxglove-out: only with --offline")
        require_extra("record", "replaying a capture")
        file_to_read("FILE", args.file)
        if args.foxglove_out is not None:
            file_to_write("--foxglove-out", args.foxglove_out)
    except ConfigError as exc:
        print(f"gizmo-host replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from gizmo_host.capture.reader import CaptureReader  # noqa: PLC0415 - the record extra

    try:
        reader = CaptureReader(args.file)
        if args.offline and sys.stdout is None:  # started with stdout closed (``>&-``)
            print("gizmo-host replay: stdout is closed: nowhere to print", file=sys.stderr)
            return 1
        if args.foxglove_out is not None:
            return replay_to_mcap(reader, args.foxglove_out, sys.stdout.buffer)
        if args.offline:
            return replay_offline(reader, sys.stdout.buffer)
        if foxglove is not None:
            return asyncio.run(serve_capture(reader, foxglove, args.speed, args.linger_s))
        from gizmo_host.rigs.board.capture_player import (  # noqa: PLC0415 - live only
            LivePlayer,
            PlayerOptions,
        )

        options = PlayerOptions(args.link, args.speed, args.udp_host, args.wait_s, args.linger_s)
        return asyncio.run(LivePlayer(reader, options).play())
    except ConfigError as exc:  # the foxglove extra is missing
        print(f"gizmo-host replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CaptureError as exc:
        print(f"gizmo-host replay: {exc}", file=sys.stderr)
        return 1
    except (OSError, ServiceFailed) as exc:  # ServiceFailed: the Foxglove port is taken
        print(f"gizmo-host replay: {exc}", file=sys.stderr)
        return 1


def replay_to_mcap(reader: CaptureReader, out_path: str, out: IO[bytes]) -> int:
    from gizmo_host.app.foxglove_replay import replay_to_mcap as to_mcap  # noqa: PLC0415

    return to_mcap(reader, out_path, out)


async def serve_capture(reader: CaptureReader, listen: str, speed: float, linger_s: float) -> int:
    from gizmo_host.app.foxglove_replay import serve_capture as serve  # noqa: PLC0415

    return await serve(reader, listen, speed, linger_s=linger_s)


def replay_offline(reader: CaptureReader, out: IO[bytes]) -> int:
    """The host's lines for ``reader``'s capture on ``out``; raises ``CaptureError``."""
    from gizmo_host.app.offline_replay import OfflineReplay  # noqa: PLC0415 - needs mcap

    replay = OfflineReplay(reader.info, reader.path)
    # Everything made so far (modules, classes, the host) lives to the end: the collector
    # need not walk it again at each full collection (about 4 % of a replay's time).
    gc.freeze()
    try:
        write_in_blocks(replay.replay(reader.messages()), out)
        out.flush()
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no flush error at exit
    warn_skipped(reader)
    return 0


# Lines go out in blocks of about this many bytes. Where stdout is unbuffered (``python -u``,
# ``PYTHONUNBUFFERED``) a write per line was a system call per frame: into a pipe, 1.2-1.8
# times the whole command's time (docs/bench.md); blocks of 1 MiB wake the pipe's reader
# less often than 64 KiB (3 % of the command).
BLOCK_BYTES = 1 << 20


def write_in_blocks(lines: Iterable[bytes], out: IO[bytes], block_bytes: int = BLOCK_BYTES) -> None:
    """Write ``lines`` to ``out`` in order, in blocks of at most ``block_bytes`` and a line.

    When ``lines`` raises (a damaged capture) the lines read before it are written and flushed
    before the error goes on; when a write fails nothing is written again (a block is taken
    off before its write); an interrupt (Ctrl-C) writes nothing more.
    """
    pending: list[bytes] = []
    size = 0
    try:
        for line in lines:
            pending.append(line)
            size += len(line)
            if size >= block_bytes:
                block = b"".join(pending)
                pending.clear()
                size = 0
                _write_all(out, block)
    except Exception:
        if pending:  # the error came from ``lines``: what they gave before it goes first
            _write_all(out, b"".join(pending))
            out.flush()
        raise
    if pending:
        _write_all(out, b"".join(pending))


def _write_all(out: IO[bytes], block: bytes) -> None:
    """All of ``block``: an unbuffered stream may take part of it (a signal during the write),
    or none of it when it is non-blocking and full (then wait until it can take more)."""
    view = memoryview(block)
    while view:
        written: int | None = out.write(view)
        if written is None:
            select.select([], [out], [])
        else:
            view = view[written:]


def warn_skipped(reader: CaptureReader) -> None:
    """Say on stderr what the capture held that the replay did not read and that would have
    changed its lines: messages on topics like its inputs' (one character off, say), metadata
    records named like its own, no settings record at all, and settings records after the
    data (red team rt24: port events moved to a look-alike topic kept the link UP, exit 0).
    Another tool's channels, and the view's, are only counted."""
    if reader.lookalikes:
        topics = ", ".join(repr(t) for t in sorted(reader.lookalike_topics)[:5])
        print(
            f"gizmo-host replay: warning: {reader.lookalikes} messages on topics like the "
            f"inputs it reads, but not theirs, were skipped ({topics})",
            file=sys.stderr,
        )
    if reader.lookalike_metadata:
        names = ", ".join(repr(n) for n in reader.lookalike_metadata[:5])
        print(
            f"gizmo-host replay: warning: metadata records named like the capture's own, but "
            f"not theirs, were not read ({names})",
            file=sys.stderr,
        )
    if reader.settings_missing and not reader.late_metadata:  # (said below, if late)
        print(
            "gizmo-host replay: warning: the capture has no gizmo-host.settings record: the "
            "replay ran on the default settings",
            file=sys.stderr,
        )
    if reader.late_metadata:
        print(
            f"gizmo-host replay: warning: {reader.late_metadata} settings records after the "
            "data were not read (a recorder writes them first): the replay ran without them",
            file=sys.stderr,
        )
