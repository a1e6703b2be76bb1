"""Read the serial stream for a few seconds, read only, and count what it holds.

The port is opened ``O_RDONLY`` and locked as ``gizmo-host run`` locks it (``flock``
exclusive, not waiting): if the service or anything else holds it, the stream is not read
(the holder check says who). Nothing is ever written to the board. The termios settings are
restored on the way out. When bytes arrive but no frame decodes, each common rate is tried
for a moment, and the ones that decode are reported.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import select
import termios
import time
import tty
from collections.abc import Sequence

from gizmo_host.doctor.facts import StreamFacts
from gizmo_host.stream.pipeline import FramePipeline
from gizmo_host.wire.parser import StreamParser

COMMON_RATES = (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)
TRIAL_S = 0.4


def sample_stream(
    path: str,
    baudrate: int,
    seconds: float,
    *,
    rates: Sequence[int] = COMMON_RATES,
    trial_s: float = TRIAL_S,
) -> StreamFacts:
    """``seconds`` of the stream at ``baudrate``; other ``rates`` only when nothing decodes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:
        return StreamFacts(baudrate, 0.0, skipped=f"cannot open {path}: {exc.strerror}")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return StreamFacts(baudrate, 0.0, skipped=f"{path} is locked by another process")
        try:
            saved = termios.tcgetattr(fd)
        except termios.error:
            return StreamFacts(baudrate, 0.0, skipped=f"{path} is not a serial port")
        try:
            tty.setraw(fd)
            facts = _read(fd, baudrate, seconds)
            if facts.bytes_in and not facts.frames_ok:
                tried = {}
                for rate in rates:
                    if rate != baudrate:
                        tried[rate] = _read(fd, rate, trial_s).frames_ok
                facts = dataclasses.replace(facts, rates_tried=tried)
            return facts
        finally:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(fd, termios.TCSANOW, saved)
    finally:
        os.close(fd)


def _set_speed(fd: int, baudrate: int) -> None:
    attrs = termios.tcgetattr(fd)
    speed = getattr(termios, f"B{baudrate}", None)
    if speed is None:
        raise ValueError(f"baudrate: {baudrate} is not a standard rate")
    attrs[4] = attrs[5] = speed
    termios.tcsetattr(fd, termios.TCSANOW, attrs)
    termios.tcflush(fd, termios.TCIFLUSH)


def _read(fd: int, baudrate: int, seconds: float) -> StreamFacts:
    _set_speed(fd, baudrate)
    parser = StreamParser()
    pipeline = FramePipeline()
    latency: list[float] = []
    start = time.monotonic()
    deadline = start + seconds
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            continue
        except OSError:  # EIO: the port hung up
            break
        if not data:
            break
        results = parser.feed(data)
        if results:
            pipeline.apply(results, time.monotonic_ns())
            latency.extend(float(r.age_ms) for r in results)
    stats = parser.stats
    sources = pipeline.tracker.stats().values()
    clock = pipeline.device_clock.stats()
    return StreamFacts(
        baudrate=baudrate,
        seconds=round(time.monotonic() - start, 3),
        bytes_in=stats.bytes_in,
        frames_ok=stats.frames_ok,
        crc_errors=stats.crc_errors,
        header_errors=stats.header_errors,
        bytes_discarded=stats.bytes_discarded + parser.buffered,
        lost=sum(s.lost for s in sources),
        resets=sum(s.resets for s in sources),
        clock_status=clock.status.value if stats.frames_ok else None,
        skew_ppm=clock.skew_ppm if stats.frames_ok else None,
        latency_ms=tuple(latency),
    )
