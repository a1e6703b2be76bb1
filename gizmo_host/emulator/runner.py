"""The emulator's asyncio edge: the recognition cycle on a clock, the port, hang-ups and replugs.

``Runner.run()`` waits (by default) until a reader has the pty open, starts the emulation's
clock, then for each cycle: sleeps until the capture, asks the source what is in view, lets
the :class:`~gizmo_host.emulator.emulation.Emulation` decide the bytes, sleeps until they leave
the board and writes each chunk when the line has carried it (:class:`LinePacer`). A hang-up
waits ``drain_ns`` (the reader takes what was written), closes the port and plugs a new pty
behind the same link ``duration_s`` later; cycles go on meanwhile, their frames unsent.

All waiting goes through an injected :class:`Clock`, so a test drives time by hand (the live
layer's ``FakeScheduler`` fits). When the loop falls more than a second behind (a suspended
process), it skips the missed cycles and counts them rather than bursting them out.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

from gizmo_host.emulator.emulation import Emulation
from gizmo_host.emulator.port import LinePacer, Port
from gizmo_host.emulator.sources import TargetSource

MAX_LAG_NS = 1_000_000_000
READER_POLL_S = 0.01


class Clock(Protocol):
    """Host time and sleeps (``gizmo_host.timing.FakeScheduler`` is one for tests)."""

    def now_ns(self) -> int: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """``time.monotonic_ns`` and ``asyncio.sleep``."""

    def now_ns(self) -> int:
        return time.monotonic_ns()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class Runner:
    """One emulation on one port, fed by one target source."""

    def __init__(
        self,
        make_emulation: Callable[[int], Emulation],
        port: Port,
        source: TargetSource,
        *,
        baudrate: int = 115200,
        clock: Clock | None = None,
        duration_s: float | None = None,
        wait_reader: bool = True,
        drain_ns: int = 100_000_000,
    ) -> None:
        self._make_emulation = make_emulation
        self.port = port
        self.source = source
        self.pacer = LinePacer(baudrate)
        self.clock = clock or SystemClock()
        self.duration_s = duration_s
        self.wait_reader = wait_reader
        self.drain_ns = drain_ns
        self.emulation: Emulation | None = None
        self.cycles_skipped = 0
        self.started = asyncio.Event()  # the emulation's clock runs (a reader is there)
        self._replug_at_ns: int | None = None

    async def _sleep_until(self, when_ns: int) -> None:
        delay_ns = when_ns - self.clock.now_ns()
        if delay_ns > 0:
            await self.clock.sleep(delay_ns / 1e9)

    async def run(self) -> None:
        """Until the duration is over (forever without one); cancel to stop early."""
        if self.wait_reader:
            while not self.port.ready(self.clock.now_ns()):
                await self.clock.sleep(READER_POLL_S)
        start_ns = self.clock.now_ns()
        emulation = self.emulation = self._make_emulation(start_ns)
        self.started.set()
        end_ns = None if self.duration_s is None else start_ns + round(self.duration_s * 1e9)
        index = 0
        while True:
            capture_ns = emulation.capture_ns(index)
            if end_ns is not None and capture_ns >= end_ns:
                # Let the reader take the last frames before the caller closes the port.
                await self._sleep_until(self.pacer.busy_until_ns + self.drain_ns)
                return
            await self._sleep_until(capture_ns)
            now_ns = self.clock.now_ns()
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
        await self._sleep_until(cycle.emit_ns)
        for chunk in cycle.chunks:
            start_ns, end_ns = self.pacer.send(self.clock.now_ns(), len(chunk))
            await self._sleep_until(end_ns if self.port.writes_at_line_end else start_ns)
            self.port.write(chunk)
        if cycle.hangup is not None:
            await self._sleep_until(self.pacer.busy_until_ns + self.drain_ns)
            self.port.hang_up()
            self._replug_at_ns = self.clock.now_ns() + round(cycle.hangup.duration_s * 1e9)

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
