"""A Gizmo board emulator behind a real pseudo-terminal, built from the production encoder.

``BoardModel`` is the sans-I/O part: it numbers frames, advances the device clock, wraps both
counters and restarts them on ``reset()``. ``PtyBoard`` puts it behind a pty whose slave is
reached through a stable symlink, like the udev link ``/dev/gizmo0``: ``unplug()`` closes the
master (the reader sees a hang-up), ``plug()`` makes a new pty and re-points the symlink
atomically. Used by the tests and ``bench/serial_link.py``; handy without hardware too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from gizmo_host.wire.protocol import VisionResult
from gizmo_host.wire.results import ResultType

TRACKED_RELATIVE = 0x05  # "detected" on the board
LOST_RELATIVE = 0x06  # "not detected"


@dataclass(slots=True)
class BoardModel:
    """Frame numbering and the device clock of one emulated board."""

    source_id: int = 1
    result_type: int = ResultType.DETECTOR
    result_id: int = 11
    sequence: int = 0
    timestamp_ms: int = 1000
    period_ms: int = 33
    latency_ms: int = 12
    live_clock: bool = False  # the device clock runs with the host clock instead of period_ms
    clock: Callable[[], int] = time.monotonic_ns  # host clock (ns), injected for live_clock
    boot_host_ms: int | None = None  # host time of device time 0 (live_clock); None: from now

    def __post_init__(self) -> None:
        if self.boot_host_ms is None and self.live_clock:
            self.boot_host_ms = self.clock() // 1_000_000 - self.timestamp_ms

    def another_source(self, source_id: int, *, result_type: int, result_id: int = 0) -> BoardModel:
        """A second result stream of the same board: same device clock, its own sequence."""
        return replace(
            self, source_id=source_id, result_type=result_type, result_id=result_id, sequence=0
        )

    def next_result(self, *, flags: int = TRACKED_RELATIVE, **fields: int) -> VisionResult:
        """The next frame's value; the sequence and device clock advance (and wrap)."""
        if self.boot_host_ms is not None:
            self.timestamp_ms = (self.clock() // 1_000_000 - self.boot_host_ms) % 2**32
        values = {
            "source_id": self.source_id,
            "result_type": self.result_type,
            "id": self.result_id,
            "sequence": self.sequence,
            "result_sequence": self.sequence,
            "timestamp_ms": self.timestamp_ms,
            "confidence": 87,
            "flags": flags,
            "age_ms": self.latency_ms,
            "x": -125,
            "y": 54,
            "w": 410,
            "h": 360,
        }
        values.update(fields)
        self.sequence = (self.sequence + 1) % 65536
        self.timestamp_ms = (self.timestamp_ms + self.period_ms) % 2**32
        return VisionResult(**values)

    def next_frame(self, **fields: int) -> bytes:
        return self.next_result(**fields).encode()

    def reset(self, boot_ms: int = 300) -> None:
        """The board restarts: sequence from 0, device clock from boot."""
        self.sequence = 0
        self.timestamp_ms = boot_ms
        if self.live_clock:
            self.boot_host_ms = self.clock() // 1_000_000 - boot_ms


class PtyBoard:
    """A pty pair whose slave is published at ``link_path``; write frames to the master."""

    def __init__(self, link_path: str) -> None:
        self.link_path = link_path
        self.master_fd: int | None = None
        self.slave_name: str | None = None

    def plug(self) -> str:
        """A fresh pty behind ``link_path`` (replacing the symlink atomically)."""
        if self.master_fd is not None:
            raise RuntimeError("already plugged")
        master, slave = os.openpty()
        self.slave_name = os.ttyname(slave)
        os.close(slave)  # the reader opens it by name, as it would open /dev/ttyUSB0
        self.master_fd = master
        temp = f"{self.link_path}.new"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        os.symlink(self.slave_name, temp)
        os.replace(temp, self.link_path)
        return self.slave_name

    def unplug(self) -> None:
        """Close the master: the slave hangs up, its /dev/pts entry disappears."""
        if self.master_fd is not None:
            os.close(self.master_fd)
            self.master_fd = None

    def write(self, data: bytes) -> None:
        if self.master_fd is None:
            raise RuntimeError("not plugged")
        view = memoryview(data)
        while view:
            written = os.write(self.master_fd, view)
            view = view[written:]

    def close(self) -> None:
        self.unplug()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.link_path)

    def __enter__(self) -> PtyBoard:
        self.plug()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


async def play(board: PtyBoard, model: BoardModel, count: int) -> None:
    """Write ``count`` frames at the board's pace, one every ``model.period_ms`` of host time."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    for i in range(count):
        board.write(model.next_frame())
        delay = start + (i + 1) * model.period_ms / 1000 - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
