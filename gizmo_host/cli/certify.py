"""``gizmo-host certify``: the HIL certification run; exit 0 when it passes, 1 when it fails
(a wrong PROCEED, a late HOLD, a fault never recovered from, an availability under the bound,
a counter mismatch), 2 on a usage mistake. The work is in
:mod:`gizmo_host.rigs.certify`."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from gizmo_core import ConfigError
from gizmo_host.cli.common import EXIT_USAGE
from gizmo_host.rigs.certify.judge import RunResult
from gizmo_host.rigs.certify.matrix import DEFAULT_SEEDS, QUICK_SEEDS, Options, certify, parse_names
from gizmo_host.rigs.certify.plan import FAULT_CLASSES, SCENARIOS
from gizmo_host.rigs.certify.report import AVAILABILITY_MIN
from gizmo_host.rigs.rig import RigFailed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", metavar="LIST", help=f"of {','.join(SCENARIOS)} (all)")
    parser.add_argument(
        "--faults", metavar="LIST", help=f"fault classes, of {','.join(FAULT_CLASSES)} (all)"
    )
    parser.add_argument(
        "--seeds", metavar="N", help=f"seeds 1..N (default {DEFAULT_SEEDS}, --quick {QUICK_SEEDS})"
    )
    parser.add_argument("--out", metavar="DIR", default="certify-report", help="report directory")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"the CI size: all scenarios and faults, {QUICK_SEEDS} seeds",
    )
    parser.add_argument("--parallel", metavar="N", default="3", help="runs at once (default 3)")
    parser.add_argument("--spacing", metavar="S", help="seconds between faults (default 3.5)")
    parser.add_argument(
        "--min-availability",
        metavar="F",
        help=f"the share of the time in view that must be PROCEED, per scenario (default "
        f"{AVAILABILITY_MIN:g}; 0 for a matrix denser than the standard one)",
    )
    parser.add_argument("--no-plots", action="store_true", help="no PNG plots (no matplotlib)")


def _int(text: str, flag: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise ConfigError(f"{flag}: expected {low}..{high}, got {text!r}")
    return value


def _fraction(text: str | None, flag: str) -> float:
    if text is None:
        return AVAILABILITY_MIN
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{flag}: expected 0..1, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    try:
        seeds = args.seeds or str(QUICK_SEEDS if args.quick else DEFAULT_SEEDS)
        spacing = float(args.spacing) if args.spacing else None
        if spacing is not None and not 2.0 <= spacing <= 30.0:
            raise ConfigError(f"--spacing: expected 2..30 s, got {args.spacing!r}")
        availability = _fraction(args.min_availability, "--min-availability")
        options = Options(
            scenarios=parse_names(args.scenarios, SCENARIOS, "scenarios"),
            faults=parse_names(args.faults, tuple(FAULT_CLASSES), "faults"),
            seeds=_int(seeds, "--seeds", 1, 100),
            out=Path(args.out),
            parallel=_int(args.parallel, "--parallel", 1, 16),
            plots=not args.no_plots,
            availability_min=availability,
            command=shlex.join(["gizmo-host", "certify", *sys.argv[2:]]),
            **({} if spacing is None else {"spacing_s": spacing}),
        )
        try:  # made before the runs, which write into it after minutes of work
            options.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"--out: {args.out}: {exc.strerror}") from None
    except (ConfigError, ValueError) as exc:
        print(f"gizmo-host certify: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        summary = certify(options, progress=_progress)
    except (RigFailed, OSError) as exc:  # a rig that could not start or stopped working
        print(f"gizmo-host certify: a run failed: {exc}", file=sys.stderr)
        return 1
    print(
        f"gizmo-host certify: {'PASS' if summary['passed'] else 'FAIL'}: {summary['runs']} runs, "
        f"{len(summary['wrong_proceeds'])} wrong PROCEEDs, "
        f"{len(summary['counter_mismatches'])} counter mismatches, "
        f"{len(summary['unrecovered'])} faults never recovered, "
        f"{len(summary['availability_short'])} scenarios under the availability; "
        f"report in {options.out}/report.md"
    )
    return 0 if summary["passed"] else 1


def _progress(result: RunResult) -> None:
    print(
        f"  {result.scenario} seed {result.seed}: {len(result.wrong)} wrong PROCEEDs, "
        f"counters {'ok' if not result.mismatches else result.mismatches}",
        file=sys.stderr,
        flush=True,
    )
