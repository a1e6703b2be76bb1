"""The emulated board's port: a real pseudo-terminal behind a stable symlink.

``PtyBoard`` publishes a pty's slave at ``link_path``, as udev publishes ``/dev/gizmo0``:
``unplug()`` closes the master (the reader sees a hang-up) and removes the symlink, as udev
removes ``/dev/gizmo0`` on unplug; ``plug()`` makes a new pty and points the symlink at it
atomically. A symlink left behind would point at a freed ``/dev/pts/N`` that the next pty made
on the machine (any program's) reuses: a reader reopening it would read someone else's pty.
The slave is put in raw mode before anyone opens it, so bytes
written while no reader has it open are neither echoed back nor cooked. ``play`` writes frames
at the board's pace. Used by the tests, ``bench/serial_link.py`` and ``gizmo-host emulate``.
"""

from __future__ import annotations

import contextlib
import os
import select
import tty

from gizmo_host.rigs.board.board import BoardModel
from gizmo_host.timing import LoopScheduler, Pacer, Scheduler


class PtyBoard:
    """A pty pair whose slave is published at ``link_path`` (None: only by its /dev/pts name);
    write frames to the master."""

    def __init__(self, link_path: str | None) -> None:
        self.link_path = link_path
        self.master_fd: int | None = None
        self.slave_name: str | None = None

    def plug(self) -> str:
        """A fresh pty behind ``link_path`` (replacing the symlink atomically)."""
        if self.master_fd is not None:
            raise RuntimeError("already plugged")
        master, slave = os.openpty()
        try:
            self.slave_name = os.ttyname(slave)
            tty.setraw(slave)  # no echo into the master, no line editing, before any open
        finally:
            os.close(slave)  # the reader opens it by name, as it would open /dev/ttyUSB0
        self.master_fd = master
        if self.link_path is None:
            return self.slave_name
        temp = f"{self.link_path}.new"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        os.symlink(self.slave_name, temp)
        os.replace(temp, self.link_path)
        return self.slave_name

    def unplug(self) -> bool:
        """Remove the symlink (it would point at a /dev/pts number free for reuse), then close
        the master: the slave hangs up, its /dev/pts entry disappears. Returns whether a reader
        had the slave open then (with the link gone, none can open it in between)."""
        if self.link_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.link_path)
        observed = self.reader_attached()
        if self.master_fd is not None:
            os.close(self.master_fd)
            self.master_fd = None
        return observed

    def reader_attached(self) -> bool:
        """Whether some process has the slave open (the master polls HUP while none has)."""
        if self.master_fd is None:
            return False
        poller = select.poll()
        poller.register(self.master_fd, select.POLLOUT)
        return not any(events & select.POLLHUP for _, events in poller.poll(0))

    def write(self, data: bytes) -> None:
        if self.master_fd is None:
            raise RuntimeError("not plugged")
        view = memoryview(data)
        while view:
            written = os.write(self.master_fd, view)
            view = view[written:]

    def close(self) -> None:
        self.unplug()

    def __enter__(self) -> PtyBoard:
        self.plug()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


async def play(
    board: PtyBoard, model: BoardModel, count: int, scheduler: Scheduler | None = None
) -> None:
    """Write ``count`` frames at the board's pace, one every ``model.period_ms`` of host time."""
    pacer = Pacer(scheduler or LoopScheduler())
    pacer.start()
    period_ns = round(model.period_ms * 1e6)
    for i in range(count):
        board.write(model.next_frame())
        await pacer.wait((i + 1) * period_ns)
