"""``gizmo-host demo``'s run: the fault timelines it plays, and the rig driven until a stop.

:func:`play` starts the :class:`~gizmo_host.rigs.demo.scene_rig.DemoRig`, refreshes a view (or
prints every world snapshot as JSON Lines), stops on the duration or a signal and returns the
summary (:func:`gizmo_host.rigs.demo.view.summary`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from pathlib import Path
from typing import Any

from gizmo_host.app.foxglove_view import announce
from gizmo_host.live.stop_signals import add_stop_handlers
from gizmo_host.publish.lines import JsonLinesPublisher
from gizmo_host.publish.sinks import QueuedSink, stdout_sink
from gizmo_host.rigs.board.faults import (
    FaultTimeline,
    load_timeline,
    parse_fault,
    validate_for_port,
)
from gizmo_host.rigs.demo.scene_rig import DemoRig, DemoSettings, start_rig
from gizmo_host.rigs.demo.view import View, summary
from gizmo_host.timing import call_after

LOGGER = logging.getLogger("gizmo_host.demo")
BUILTIN = ""  # --faults without a file
BLOCK_S = 20.0  # the built-in timeline repeats every 20 s (the orbit's spins are 20 s apart too)
MAX_BLOCKS = 30  # without --duration: ten minutes of faults, then a clean run
# The built-in block, in seconds after the board starts (the first PROCEED comes after ~0.5 s):
# a silence longer than the TTL (HOLD stale), a garbage burst, a device reset (HOLD
# device_reset, then clock_not_locked while it re-locks), a hang-up and replug (HOLD
# link_down), bit errors (CRC errors, gaps) and a sequence wrap. 8..12.6 s is the orbit's
# spin: the target leaves.
BUILTIN_BLOCK: tuple[dict[str, Any], ...] = (
    {"kind": "silence", "at_s": 2.0, "duration_s": 0.6},
    {"kind": "garbage", "at_s": 3.5, "duration_s": 1.0, "probability": 0.2, "bytes": 48},
    {"kind": "reset", "at_s": 5.0, "down_s": 0.5},
    {"kind": "hangup", "at_s": 13.5, "duration_s": 0.5},
    {"kind": "bit_errors", "at_s": 17.0, "duration_s": 1.0, "ber": 0.002},
    {"kind": "wrap", "at_s": 18.5, "sequence": 65500},
)


def builtin_timeline(duration_s: float | None, seed: int = 0) -> FaultTimeline:
    """:data:`BUILTIN_BLOCK` every :data:`BLOCK_S` seconds, over ``duration_s`` (or
    :data:`MAX_BLOCKS` blocks)."""
    blocks = MAX_BLOCKS if duration_s is None else max(1, math.ceil(duration_s / BLOCK_S))
    faults = []
    for block in range(blocks):
        for index, values in enumerate(BUILTIN_BLOCK):
            shifted = {**values, "at_s": values["at_s"] + block * BLOCK_S}
            faults.append(parse_fault(shifted, f"built-in fault {index}"))
    return FaultTimeline(tuple(faults), seed)


def timeline_for(faults: str | None, duration_s: float | None, seed: int | None) -> FaultTimeline:
    """``--faults``' timeline: none, the built-in one (:data:`BUILTIN`) or a file's; a file's
    error is a ConfigError naming it."""
    if faults is None:
        return FaultTimeline()
    timeline = builtin_timeline(duration_s) if faults == BUILTIN else load_timeline(faults)
    if seed is not None:
        timeline = FaultTimeline(timeline.faults, seed)
    validate_for_port(timeline, can_hang_up=True)  # the board's pty has a link
    return timeline


async def play(
    settings: DemoSettings,
    workdir: Path,
    view: View | None,
    *,
    duration_s: float | None,
    faults: str,
) -> dict[str, Any]:
    """Run the rig until ``duration_s`` is over or a signal comes; return the summary. Without
    a ``view`` every world snapshot goes to stdout as JSON Lines. ``faults`` names the fault
    timeline in the title and the summary."""
    t0_ns = time.monotonic_ns()
    out: QueuedSink | None = None
    publisher = None
    if view is None:
        publisher = JsonLinesPublisher()
        publisher.add_sink(out := stdout_sink())
    title = f"gizmo-host demo · {settings.scenario} · faults: {faults}"
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    restore_signals = add_stop_handlers(loop, stop.set)  # ends within a second regardless
    timer = None
    refresh: asyncio.Task[None] | None = None
    rig: DemoRig | None = None
    try:
        with view or contextlib.nullcontext():
            rig = await start_rig(lambda: _built(settings, workdir, publisher))
            if duration_s is not None:
                timer = call_after(rig.host.scheduler, duration_s, stop.set)
            if rig.foxglove is not None:
                announce(rig.foxglove, "demo")
            if view is not None:
                refresh = asyncio.create_task(_refresh(view, rig, t0_ns, title), name="demo view")
            await rig.wait(stop)
            await _cancel(refresh)
            if view is not None:
                _show(view, rig, t0_ns, title)  # the last picture stays on the screen
    finally:
        await _cancel(refresh)
        if rig is not None:
            await rig.stop()
        if out is not None:
            await out.close()
        if timer is not None:
            timer.cancel()
        restore_signals()
    leaks = [t.get_name() for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    if leaks:
        LOGGER.warning("tasks still running at exit: %s", ", ".join(sorted(leaks)))
    return summary(
        rig.tally,
        rig.stats(),
        elapsed_s=(time.monotonic_ns() - t0_ns) / 1e9,
        extra={
            "scenario": settings.scenario,
            "fault_timeline": faults,
            "first_frame_s": _since(rig.first_frame_ns, t0_ns),
            "first_proceed_s": _since(rig.tally.first_proceed_ns, t0_ns),
            "sim_start_ns": rig.truth.start_ns,
            "tasks_left": len(leaks),
            **({} if rig.foxglove is None else {"foxglove": rig.foxglove.stats()}),
        },
    )


def _built(settings: DemoSettings, workdir: Path, publisher: JsonLinesPublisher | None) -> DemoRig:
    rig = DemoRig(settings, workdir)
    if publisher is not None:
        rig.world.add_listener(publisher)
    return rig


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _since(when_ns: int | None, t0_ns: int) -> float | None:
    return None if when_ns is None else round((when_ns - t0_ns) / 1e9, 3)


def _show(view: View, rig: DemoRig, t0_ns: int, title: str) -> None:
    elapsed = (time.monotonic_ns() - t0_ns) / 1e9
    view.show(rig.tally.latest, rig.tally, rig.stats(), elapsed, title)


async def _refresh(view: View, rig: DemoRig, t0_ns: int, title: str) -> None:
    while True:
        _show(view, rig, t0_ns, title)
        await rig.host.scheduler.sleep(view.period_s)
