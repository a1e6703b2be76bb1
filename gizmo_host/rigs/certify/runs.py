"""Run certification plans through the real host: each one a demo rig (the stand-in, the
emulated board on a pty with the plan's faults, the host reading it, loopback UDP), several at
once on one event loop, each judged when its board has run its course."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from gizmo_host.rigs.certify.judge import Recorder, RunResult, judge
from gizmo_host.rigs.certify.plan import RunPlan
from gizmo_host.rigs.demo.scene_rig import CLASSES, EGO_ID, DemoRig, DemoSettings, start_rig
from gizmo_host.rigs.rig import RigFailed

# The ground vehicle the scenarios are about: the verdict is about it alone, as a mission
# selects its target (the bystander copter, reported as a cat, is not ranged on the ground).
TARGET_CLASS = int(CLASSES[EGO_ID + 1])


async def run_plan(plan: RunPlan, workdir: Path) -> RunResult:
    recorders: list[Recorder] = []

    def build() -> DemoRig:
        """A rig recording into a recorder of its own (a rig built again starts afresh)."""
        recorder = Recorder()
        recorders.append(recorder)
        settings = DemoSettings(
            plan.scenario,
            plan.timeline,
            board_duration_s=plan.duration_s,
            on_cycle=recorder.on_cycle,
            select=f"id={TARGET_CLASS}",
        )
        rig = DemoRig(settings, workdir)
        rig.world.add_listener(recorder.on_snapshot)
        rig.host.add_sink(recorder.on_message)
        return rig

    rig = await start_rig(build)
    recorder = recorders[-1]
    try:
        await rig.wait(asyncio.Event())  # returns when the board's duration is over
        stats = rig.stats()
    finally:
        await rig.stop()
    emulation = rig.board.emulation
    if emulation is None or rig.truth.start_ns is None:
        raise RigFailed(f"{plan.scenario} seed {plan.seed}: the rig never started")
    return judge(plan, recorder, rig.truth, TARGET_CLASS, emulation.start_ns, stats)


async def run_plans(
    plans: Sequence[RunPlan],
    *,
    parallel: int,
    on_done: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Every plan, ``parallel`` at a time, in order of the plans."""
    gate = asyncio.Semaphore(parallel)

    async def one(plan: RunPlan) -> RunResult:
        async with gate:
            with tempfile.TemporaryDirectory(prefix="gizmo-certify-") as workdir:
                result = await run_plan(plan, Path(workdir))
        if on_done is not None:
            on_done(result)
        return result

    return list(await asyncio.gather(*(one(plan) for plan in plans)))
