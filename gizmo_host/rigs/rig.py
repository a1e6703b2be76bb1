"""``Rig``: the one composition of the whole loop, the product against its simulated peers.

The product is a :class:`~gizmo_host.app.host.Host` in this process (:meth:`Rig.add_host`) or
``gizmo-host run`` as a child, exactly as deployed (:meth:`Rig.add_host_process`). On the same
event loop run what simulates its world: the emulated board writing VISION_RESULT frames to a
pty behind ``WORKDIR/gizmo0`` (:meth:`Rig.add_board`), the RflySim stand-in on loopback UDP
(:meth:`Rig.add_stand_in`), and whatever else a rig needs beside them (:meth:`Rig.add_task`:
the autopilot stand-in, a landing vehicle's steps, a camera image). The demo and certify
(:mod:`~gizmo_host.rigs.demo.scene_rig`), the precision landing
(:mod:`~gizmo_host.rigs.demo.precland`) and the HIL tests (``tests/hil/chain.py``) each build
one.

Parts are added first, nothing bound. :meth:`start` starts them in the order the loop needs:
the board's pty and target source, the stand-in (until it listens: the host's first request
must find it), the host, the board, the tasks. :meth:`wait` returns once ``stop`` is set or a
part that ends the run has ended (the board after its duration, a vehicle that landed); a part
that fails, or ends unasked, raises :class:`RigFailed`. :meth:`stop` stops the host first, so
that the board's pty closing is not published as a HOLD, then the rest; it is safe twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from gizmo_host.app.host import Host
from gizmo_host.live.event_loop import cancel_all
from gizmo_host.rigs.board.compose import emulation_factory
from gizmo_host.rigs.board.emulate_settings import EmulateSettings
from gizmo_host.rigs.board.emulation import Cycle
from gizmo_host.rigs.board.faults import FaultTimeline
from gizmo_host.rigs.board.port import PtyPort
from gizmo_host.rigs.board.runner import Runner
from gizmo_host.rigs.board.target_sources import TargetSource
from gizmo_host.rigs.rflysim.sim_runner import SimRunner

STOP_TIMEOUT_S = 10.0  # a child host's SIGTERM, then SIGKILL
Work = Callable[[], Coroutine[Any, Any, Any]]
# What a part's return means (add_task): the rig has failed (a peer that must not stop), the
# run is over (a vehicle that landed, the board after its duration), or nothing (a helper
# that has done its job).
ENDS = ("fail", "run", "quietly")


class RigFailed(RuntimeError):
    """A part of the rig stopped working: its task ended or raised, or the host failed."""


class HostProcess:
    """``gizmo-host run ARGS`` as a child process; each JSON line it prints goes to
    ``on_line`` as it comes, and its stderr is kept for the end (``stderr``)."""

    def __init__(self, args: Sequence[str], on_line: Callable[[dict[str, Any]], None]) -> None:
        self.args = tuple(args)
        self._on_line = on_line
        self.process: asyncio.subprocess.Process | None = None
        self.returncode: int | None = None
        self.stderr = ""
        self._reading: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "gizmo_host.cli", "run", *self.args),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self._reading = asyncio.create_task(self._read(), name="rig host lines")

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        while line := await self.process.stdout.readline():
            self._on_line(json.loads(line))

    async def wait(self) -> int:
        """The exit status, once the child has ended (a rig's host never ends unasked)."""
        assert self.process is not None
        return await self.process.wait()

    async def stop(self) -> None:
        """SIGTERM (SIGKILL after ``STOP_TIMEOUT_S``); every line read, stderr kept."""
        proc = self.process
        if proc is None:
            return
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        if self._reading is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._reading, STOP_TIMEOUT_S)  # the last lines
            await cancel_all([self._reading])
        assert proc.stderr is not None
        self.stderr = (await proc.stderr.read()).decode(errors="replace")
        self.returncode = proc.returncode


class _Part:
    __slots__ = ("ends", "name", "task")

    def __init__(self, name: str, task: asyncio.Task[Any], ends: str) -> None:
        self.name, self.task, self.ends = name, task, ends


class Rig:
    """The parts of one loop in ``workdir`` (the pty's link is ``workdir/gizmo0``)."""

    def __init__(self, workdir: Path | str) -> None:
        self.link = str(Path(workdir) / "gizmo0")
        self.port = PtyPort(self.link)
        self.host: Host | None = None
        self.host_process: HostProcess | None = None
        self.board: Runner | None = None
        self.source: TargetSource | None = None
        self.sim: SimRunner | None = None
        self._work: list[tuple[str, Work, str]] = []  # add_task's, started by start()
        self._running: list[_Part] = []
        self._bound = self._started = False

    # -- the parts ---------------------------------------------------------------------------

    def add_board(
        self,
        settings: EmulateSettings,
        timeline: FaultTimeline,
        source: TargetSource,
        *,
        duration_s: float | None = None,
        on_cycle: Callable[[Cycle], None] | None = None,
    ) -> Runner:
        """The emulated board on the rig's pty, its targets from ``source``; it ends the run
        once it has run ``duration_s`` (None: it runs until the rig stops)."""
        self.source = source
        self.board = Runner(
            emulation_factory(settings, timeline),
            self.port,
            source,
            baudrate=settings.baudrate,
            duration_s=duration_s,
            on_cycle=on_cycle,
        )
        return self.board

    def add_stand_in(self, sim: SimRunner) -> SimRunner:
        """The RflySim stand-in, started before the host."""
        self.sim = sim
        return sim

    def add_host(self, host: Host) -> Host:
        """The host in this process (its sinks and outputs added before :meth:`start`)."""
        self.host = host
        return host

    def add_host_process(
        self, args: Sequence[str], on_line: Callable[[dict[str, Any]], None]
    ) -> HostProcess:
        """``gizmo-host run ARGS`` as a child process instead of a host in this process."""
        self.host_process = HostProcess(args, on_line)
        return self.host_process

    def add_task(self, name: str, work: Work, *, ends: str = "fail") -> None:
        """``work()`` run from :meth:`start` on, after the board; when it returns, ``ends``
        says what that means (:data:`ENDS`: the rig has failed, the run is over, nothing)."""
        if ends not in ENDS:
            raise ValueError(f"ends: expected one of {', '.join(ENDS)}, got {ends!r}")
        self._work.append((name, work, ends))

    # -- the lifecycle -----------------------------------------------------------------------

    async def bind_board(self) -> None:
        """Plug the pty and start the board's target source (its receivers bound: a caller
        may need their ports before :meth:`start`); once."""
        if self._bound:
            return
        self._bound = True
        self.port.plug()
        if self.source is not None:
            await self.source.start()

    async def start(self) -> None:
        """Bind and start every part; an ``OSError`` names the port that could not be bound,
        and whatever started is stopped again."""
        self._started = True
        try:
            await self.bind_board()
            if self.sim is not None:
                await self._start_stand_in(self.sim)
            if self.host is not None:
                await self.host.start()
            if self.host_process is not None:
                await self.host_process.start()
            if self.board is not None:
                self._run("board", self.board.run, ends="run")
            for name, work, ends in self._work:
                self._run(name, work, ends=ends)
        except BaseException:
            await self.stop()
            raise

    def _run(self, name: str, work: Work, *, ends: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(work(), name=f"rig {name}")
        self._running.append(_Part(name, task, ends))
        return task

    async def _start_stand_in(self, sim: SimRunner) -> None:
        running = self._run("stand-in", sim.run, ends="fail")
        listening = asyncio.create_task(sim.started.wait(), name="rig stand-in started")
        await asyncio.wait((running, listening), return_when=asyncio.FIRST_COMPLETED)
        if not listening.done():
            await cancel_all([listening])
            running.result()  # raises the stand-in's OSError
            raise RigFailed("the stand-in ended before it started")

    async def wait(self, stop: asyncio.Event) -> None:
        """Until ``stop`` is set or a part that ends the run has ended; :class:`RigFailed`
        when the host fails or another part ends first."""
        watchers: list[asyncio.Task[Any]] = [asyncio.create_task(stop.wait(), name="rig stop")]
        if self.host is not None:
            watchers.append(asyncio.create_task(self.host.wait(stop), name="rig host"))
        if self.host_process is not None:
            watchers.append(asyncio.create_task(self.host_process.wait(), name="rig host"))
        tasks = {p.task: p for p in self._running}
        pending: set[asyncio.Task[Any]] = {*watchers, *tasks}
        try:
            while True:
                done, pending = await asyncio.wait(pending, return_when="FIRST_COMPLETED")
                for task in done:
                    if task is watchers[0] or self._over(task, tasks.get(task)):
                        return
        finally:
            await cancel_all(watchers)

    def _over(self, task: asyncio.Task[Any], part: _Part | None) -> bool:
        """Whether the run is over now that ``task`` has ended; :class:`RigFailed` if the
        rig has failed."""
        error = None if task.cancelled() else task.exception()
        if part is None:  # the host: in this process it returns only once stop is set
            if error is not None:
                raise RigFailed(f"host: {error}")
            if self.host_process is not None:
                raise RigFailed(f"gizmo-host run exited with status {task.result()}")
            return True
        if error is not None or task.cancelled():
            raise RigFailed(f"{part.name}: {error!r}")
        if part.ends == "fail":
            raise RigFailed(f"{part.name} ended")
        return part.ends == "run"

    async def stop(self) -> None:
        """Stop everything (safe to call twice): the host first, then the parts, the target
        source and the pty."""
        if not self._started and not self._bound:
            return
        self._started = self._bound = False
        if self.host is not None:
            await self.host.stop()
        if self.host_process is not None:
            await self.host_process.stop()
        await cancel_all([p.task for p in self._running])
        self._running.clear()
        if self.source is not None:
            await self.source.close()
        await self.port.close()

    async def __aenter__(self) -> Rig:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
