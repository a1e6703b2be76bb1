"""``gizmo-host certify``'s composition: plan the matrix, run it, judge, write the report.

The matrix is the emulator's fault classes x the stand-in's scenarios x seeds; each (scenario,
seed) is one run carrying every chosen fault class in turn (:mod:`.plan`), so a full matrix
costs scenarios x seeds runs of about 40 s each, ``parallel`` of them at once on one loop.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gizmo_core import ConfigError
from gizmo_host.rigs.certify.judge import RunResult
from gizmo_host.rigs.certify.plan import FAULT_CLASSES, SCENARIOS, SPACING_S, plan_run
from gizmo_host.rigs.certify.report import AVAILABILITY_MIN, Setup, markdown, summarize
from gizmo_host.rigs.certify.runs import run_plans

QUICK_SEEDS = 2
DEFAULT_SEEDS = 5


@dataclass(frozen=True, slots=True)
class Options:
    scenarios: tuple[str, ...] = SCENARIOS
    faults: tuple[str, ...] = tuple(FAULT_CLASSES)
    seeds: int = DEFAULT_SEEDS
    out: Path = Path("certify-report")
    spacing_s: float = SPACING_S
    parallel: int = 3
    plots: bool = True
    command: str = "gizmo-host certify"
    availability_min: float = AVAILABILITY_MIN


def parse_names(text: str | None, known: Sequence[str], what: str) -> tuple[str, ...]:
    """A comma-separated list of ``known`` names (None: all); a ConfigError names the stranger."""
    if text is None:
        return tuple(known)
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ConfigError(
            f"--{what}: expected some of {', '.join(known)}, got {', '.join(unknown) or text!r}"
        )
    return names


def certify(
    options: Options, progress: Callable[[RunResult], None] | None = None
) -> dict[str, Any]:
    """Run the matrix and write ``summary.json``, ``report.md`` and the plots to ``out``."""
    from gizmo_host import __version__  # noqa: PLC0415 - reads the installed metadata

    plans = [
        plan_run(scenario, seed, options.faults, options.spacing_s)
        for seed in range(1, options.seeds + 1)
        for scenario in options.scenarios
    ]
    start = time.monotonic()
    results = asyncio.run(run_plans(plans, parallel=options.parallel, on_done=progress))
    setup = Setup(
        version=__version__,
        command=options.command,
        scenarios=options.scenarios,
        faults=options.faults,
        seeds=tuple(range(1, options.seeds + 1)),
        spacing_s=options.spacing_s,
        parallel=options.parallel,
        elapsed_s=time.monotonic() - start,
        availability_min=options.availability_min,
    )
    summary = summarize(results, setup)
    options.out.mkdir(parents=True, exist_ok=True)
    plots: list[str] = []
    if options.plots:
        from gizmo_host.rigs.certify.plots import write_plots  # noqa: PLC0415 - the report extra

        plots = write_plots(results, options.out)
    (options.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (options.out / "report.md").write_text(markdown(summary, plots))
    return summary
