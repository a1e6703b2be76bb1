"""Benchmark: the precland scenario's landing error over seeds, with and without faults.

Run: ``.venv/bin/python bench/precland_seeds.py [--seeds 10] [--first 0] [--duration 60]
[--profile px4|ardupilot]``

Each run is ``gizmo-host demo --scenario precland --seed N [--faults]`` in this process, one
after the other (real time: ~15-25 s each): the seed places the pad 1.5-3.5 m from the start
and draws the autopilot's 8-16 ms telemetry lag; ``--faults`` is the demo's built-in board
timeline (silence, garbage, device reset, hang-up, bit errors, wrap), reseeded. The landing
error is the stand-in's own (the vehicle's true position at touchdown against the pad's).

Prints one line per run and, per set, the landing error p50/p95/max, the time to land, the
descents made without a fresh target (goal 0), the world's HOLDs after a PROCEED (goal 0 in
a clean run) and the vehicle's descent steps while the world HOLDs (0 in a clean run; with
faults, the autopilot descends on its own estimate until its target timeout, as PX4 and
ArduPilot do), the runs that did not land, and the host's capture->send latency p50/p95 (the
median of the runs'). Goal: landing error p95 <= 0.10 m (0.15 m on a moving pad).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from gizmo_host.rigs.board.faults import FaultTimeline
from gizmo_host.rigs.demo.play import builtin_timeline
from gizmo_host.rigs.demo.precland import play, settings_for_seed


def _run(
    seed: int, faults: bool, duration_s: float, profile: str, pad_speed_m_s: float
) -> dict[str, Any]:
    timeline = FaultTimeline()
    if faults:
        timeline = FaultTimeline(builtin_timeline(duration_s).faults, seed)
    settings = settings_for_seed(timeline, seed, profile, pad_speed_m_s)

    async def main() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="bench-precland-") as workdir:
            return await play(settings, Path(workdir), duration_s, asyncio.Event())

    return asyncio.run(main())


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _holds(runs: list[dict[str, Any]]) -> str:
    """The world's HOLDs after a PROCEED, in all: how many, and how many for each reason."""
    why: Counter[str] = Counter()
    for r in runs:
        why.update(r["world_holds"])
    return f"{sum(why.values())} {dict(why)}"


def _report(name: str, runs: list[dict[str, Any]]) -> None:
    landed = [r for r in runs if r["landed"]]
    errors = [r["landing_error_m"] for r in landed]
    times = [r["time_to_land_s"] for r in landed]
    lat50 = [r["host"]["landing_target"]["latency_ms"]["p50"] for r in runs]
    lat95 = [r["host"]["landing_target"]["latency_ms"]["p95"] for r in runs]
    print(
        f"{name}: {len(landed)}/{len(runs)} landed; landing error p50 "
        f"{_pct(errors, 0.5):.4f} m, p95 {_pct(errors, 0.95):.4f} m, max {max(errors):.4f} m; "
        f"time to land p50 {statistics.median(times):.1f} s, max {max(times):.1f} s; "
        f"descents without a fresh target {sum(r['stale_descents'] for r in runs)}, "
        f"while the world HOLDs {sum(r['descents_on_hold'] for r in runs)} (and "
        f"{sum(r['descents_as_hold_began'] for r in runs)} within the link's lag of a HOLD); "
        f"world HOLDs after a PROCEED {_holds(runs)}, the vehicle's "
        f"holds {sum(r['holds'] for r in runs)}, climbs {sum(r['climbs'] for r in runs)}; "
        f"capture->send latency p50 {statistics.median(lat50):.1f} ms, "
        f"p95 {statistics.median(lat95):.1f} ms",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--profile", default="px4", choices=("px4", "ardupilot"))
    parser.add_argument("--pad-speed", type=float, default=0.0, help="the pad drives at M/S")
    parser.add_argument("--clean-only", action="store_true", help="no runs with faults")
    args = parser.parse_args()
    results: dict[str, list[dict[str, Any]]] = {"clean": [], "faults": []}
    for faults in (False,) if args.clean_only else (False, True):
        name = "faults" if faults else "clean"
        for seed in range(args.first, args.first + args.seeds):
            summary = _run(seed, faults, args.duration, args.profile, args.pad_speed)
            results[name].append(summary)
            keys = ("landed", "landing_error_m", "time_to_land_s", "stale_descents", "holds",
                    "world_holds", "descents_on_hold", "descents_as_hold_began")  # fmt: skip
            print(name, seed, json.dumps({k: summary[k] for k in keys}), flush=True)
    for name, runs in results.items():
        if runs:
            _report(f"{args.profile} {name} (pad at {args.pad_speed:g} m/s)", runs)


if __name__ == "__main__":
    main()
