"""The emulator's asyncio edge: the recognition cycle on a clock, the port, hang-ups and replugs.

``Runner.run()`` waits (by default) until a reader has the pty open, starts the emulation's
clock, then for each cycle: sleeps until the capture, asks the source what is in view, lets
the :class:`~gizmo_host.rigs.board.emulation.Emulation` decide the bytes, sleeps until they leave
the board and writes each chunk when the line has carried it (:class:`LinePacer`). A hang-up
waits ``drain_ns`` (the reader takes what was written), closes the port and plugs a new pty
behind the same link ``duration_s`` later; cycles go on meanwhile, their frames unsent.

All waiting goes through an injected :class:`~gizmo_host.timing.Scheduler`, so a test drives
time by hand on a ``ManualScheduler``. When the loop falls more than a second behind (a suspended
process), it skips the missed cycles and counts them rather than bursting them out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from gizmo_host.rigs.board.emulation import Cycle, Emulation
from gizmo_host.rigs.board.port import LinePacer, Port
from gizmo_host.rigs.board.target_sources import TargetSource
from gizmo_host.timing import LoopScheduler, Scheduler

MAX_LAG_NS = 1_000_000_000
READER_POLL_S = 0.01


class Runner:
    """One emulation on one port, fed by one target source."""

    def __init__(
        self,
        make_emulation: Callable[[int], Emulation],
        port: Port,
        source: TargetSource,
        *,
        baudrate: int = 115200,
        scheduler: Scheduler | None = None,
        duration_s: float | None = None,
        wait_reader: bool = True,
        drain_ns: int = 100_000_000,
        on_cycle: Callable[[Cycle], None] | None = None,
    ) -> None:
        """``on_cycle``: told every cycle's output (what a HIL judge needs as truth)."""
        self._make_emulation = make_emulation
        self.port = port
        self.source = source
        self.pacer = LinePacer(baudrate)
        self.scheduler: Scheduler = scheduler or LoopScheduler()
        self.duration_s = duration_s
        self.wait_reader = wait_reader
        self.drain_ns = drain_ns
        self.emulation: Emulation | None = None
        self.cycles_skipped = 0
        self.started = asyncio.Event()  # the emulation's clock runs (a reader is there)
        self._replug_at_ns: int | None = None
        self._on_cycle = on_cycle

    async def run(self) -> None:
        """Until the duration is over (forever without one); cancel to stop early."""
        if self.wait_reader:
            while not self.port.ready(self.scheduler.now_ns()):
                await self.scheduler.sleep(READER_POLL_S)
        start_ns = self.scheduler.now_ns()
        emulation = self.emulation = self._make_emulation(start_ns)
        self.started.set()
        end_ns = None if self.duration_s is None else start_ns + round(self.duration_s * 1e9)
        index = 0
        while True:
            capture_ns = emulation.capture_ns(index)
            if end_ns is not None and capture_ns >= end_ns:
                # Let the reader take the last frames before the caller closes the port.
                await self.scheduler.sleep_until_ns(self.pacer.busy_until_ns + self.drain_ns)
                return
            await self.scheduler.sleep_until_ns(capture_ns)
            now_ns = self.scheduler.now_ns()
            if now_ns - capture_ns > MAX_LAG_NS:
                behind = (now_ns - capture_ns) // emulation.period_ns
                self.cycles_skipped += behind
                index += behind
                continue
            await self._cycle(emulation, index, now_ns)
            index += 1

    async def _cycle(self, emulation: Emulation, index: int, now_ns: int) -> None:
        if self._replug_at_ns is not None and now_ns >= self._replug_at_ns:
            self._replug_at_ns = None
            self.port.plug()
        connected = self.port.ready(now_ns)
        if connected and self._replug_at_ns is None:
            emulation.reconnected()
        capture_ns = emulation.capture_ns(index)
        detections = self.source.detections(capture_ns, emulation.elapsed_s(capture_ns))
        cycle = emulation.cycle(index, detections, connected=connected)
        if self._on_cycle is not None:
            self._on_cycle(cycle)
        await self.scheduler.sleep_until_ns(cycle.send_ns)
        for chunk in cycle.chunks:
            start_ns, end_ns = self.pacer.send(self.scheduler.now_ns(), len(chunk))
            await self.scheduler.sleep_until_ns(
                end_ns if self.port.writes_at_line_end else start_ns
            )
            self.port.write(chunk)
        if cycle.hangup is not None:
            await self.scheduler.sleep_until_ns(self.pacer.busy_until_ns + self.drain_ns)
            emulation.hung_up(observed=self.port.hang_up())
            self._replug_at_ns = self.scheduler.now_ns() + round(cycle.hangup.duration_s * 1e9)

    def stats(self) -> dict[str, Any]:
        """Every count: the emulation's, the port's and the source's."""
        emulation = (
            self.emulation.stats()
            if self.emulation is not None
            else {"started": False, "frames": {"produced": 0}}
        )
        return {
            "type": "emulate_stats",
            **emulation,
            "cycles_skipped": self.cycles_skipped,
            "port": self.port.stats(),
            "source": self.source.stats(),
        }
