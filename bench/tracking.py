"""Benchmark: the tracked world model against the per-frame one, in the same run.

Run: ``.venv/bin/python bench/tracking.py [--seeds N] [--seconds S]``

Each scenario (simulated, deterministic for a seed; host time is the reference clock):

* a ground target on the plane d = 0, driving as the scenario says; the vehicle follows it 0.4 s
  behind at 10 m, level, the camera looking straight down (640×480, 90° HFOV), poses at 100 Hz
  arriving 0.5-6 ms late;
* the board: 30 frames/s, the target's centre projected by ``hil_geometry``'s pinhole (not
  fusion's camera model) with 1.5 px of Gaussian box noise, rounded to the board's units,
  12-35 ms of processing, 35 bytes at 115200 baud; the host maps capture times with the live
  link's ``DeviceClockEstimator`` (the device clock is 100 ppm fast);
* snapshots at 50 Hz and after every result (the lines a publisher writes).

Scenarios: ``static``; straight runs at 1, 3 and 8 m/s; ``turn``: 5 m/s with 0.3 g turns
(ω = 0.59 rad/s) between straight stretches; ``glitch``: 3 m/s with 2 % of the boxes 3 m off;
``occlusion``: 3 m/s, the board reports the target not detected for 1 s from 8 s; ``speed``:
a straight line from rest, up to 8 m/s at 2 m/s² and braking at 4, or to 5 m/s at 1 and 1,
again and again (judged for the NEES share and one track id; no accuracy goal); ``wander``
(shown, not judged).

Per line after the first second (PROCEED lines with a position): the position error at the
target's capture time, the velocity error, the prediction error at the line's ``host_ns``
(position + velocity × (host_ns - capture_ns); the per-frame path has no velocity), and the
share of lines whose horizontal position NEES is within χ²₂ at 0.95 (5.991: the ground plane
fixes d). Then the update cost of one result with 1 and with 10 tracks (10 targets, each its
own key, 10 results per image), against the per-frame path; and whether replaying the same
input gives byte-identical lines.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fusion import LinkStatus, PoseSample, VisionObservation
from gizmo_core import LinkState
from tests.support.tracking_sim import (
    MS,
    SCENARIOS,
    SPEEDING,
    TTL_MS,
    WANDERING,
    Board,
    Path2D,
    Run,
    Scenario,
    Tally,
    make_events,
    model,
    percentile,
)

# -- cost ----------------------------------------------------------------------------------


def update_costs(targets: int, duration_s: float, seed: int) -> dict[str, list[float]]:
    """µs per result applied with ``targets`` targets in view (each its own key, 4 m around
    the first, all driving one way at 3 m/s), per model: wall time and this thread's CPU time
    (the wall time of a busy machine also counts the scheduler's preemptions)."""
    paths = [
        Path2D(3.0, 30.0, [], (4 * math.cos(2 * math.pi * i / targets) * (i > 0),
                               4 * math.sin(2 * math.pi * i / targets) * (i > 0)))
        for i in range(targets)
    ]  # fmt: skip
    events = make_events(paths, Scenario("cost", paths[0]), duration_s, seed)
    models = {"tracked": model(True), "per-frame": model(False)}
    board = Board()
    costs: dict[str, list[float]] = {f"{n} {k}": [] for n in models for k in ("wall", "cpu")}
    for world in models.values():
        world.apply(LinkStatus(events[0].arrival_ns - MS, LinkState.UP))
    for event in events:
        item = event.item
        if not isinstance(item, PoseSample):
            item = board.observation(event.arrival_ns, item)
        for name, world in models.items():
            t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            world.apply(item)
            if isinstance(item, VisionObservation):
                costs[f"{name} wall"].append((time.perf_counter_ns() - t0) / 1000)
                costs[f"{name} cpu"].append((time.thread_time_ns() - c0) / 1000)
        for world in models.values():
            world.snapshot(event.arrival_ns)
    tracks = models["tracked"].stats()
    assert tracks["targets"] >= targets and tracks["tracks_started"] >= targets, tracks
    return costs


# -- the report ----------------------------------------------------------------------------

GOALS: dict[str, tuple[float, float, float | None]] = {
    # scenario: position p95 (m), velocity p95 (m/s), prediction p95 at host_ns (m)
    "static": (0.05, 0.10, None),
    "straight 1 m/s": (0.05, 0.10, None),
    "straight 3 m/s": (0.05, 0.10, None),
    "straight 8 m/s": (0.10, 0.20, 0.10),
    "turn 0.3 g at 5 m/s": (0.20, 0.50, None),
}


def row(values: list[float], unit: str) -> str:
    return f"{percentile(values, 50):6.3f} /{percentile(values, 95):6.3f} {unit}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="runs per scenario")
    parser.add_argument("--seconds", type=float, default=20.0, help="simulated time per run")
    parser.add_argument(
        "--only", help="run only the scenarios whose name contains this (cost: only the cost)"
    )
    args = parser.parse_args(argv)
    if args.seconds < 12:
        parser.error("--seconds: expected at least 12 (the occlusion is at 8-9 s)")
    failures: list[str] = []
    check: Callable[[bool, str], None] = lambda ok, what: None if ok else failures.append(what)  # noqa: E731
    print(f"tracking: {args.seeds} seeds x {args.seconds:.0f} s per scenario; p50 / p95 over "
          "the lines after the first second (tracked | per-frame, same run)")  # fmt: skip
    for scenario in (*SCENARIOS, *WANDERING, *SPEEDING):
        # The wandering targets are not among the goals: shown, not judged. The speeding ones
        # are judged for their NEES share in every run and one track id (no accuracy goal).
        judge = check if scenario not in WANDERING else (lambda ok, what: None)
        if args.only and args.only not in scenario.name:
            continue
        merged = {name: Tally() for name in ("tracked", "per-frame")}
        occlusion: list[tuple[float, float, bool]] = []
        shares: list[float] = []  # each run's NEES share: the goal holds for every run
        for seed in range(args.seeds):
            run = Run(scenario, args.seconds, seed, keep_lines=False)
            run.run()
            for name, tally in run.tallies.items():
                m = merged[name]
                for field in ("lines", "proceed", "nees_ok", "nees_n", "nees_sum", "far_proceed"):
                    setattr(m, field, getattr(m, field) + getattr(tally, field))
                m.position += tally.position
                m.velocity += tally.velocity
                m.velocity_nees += tally.velocity_nees
                m.predicted += tally.predicted
                m.track_ids |= {(seed, i) for i in tally.track_ids}  # type: ignore[arg-type]
                m.listed_ids |= {(seed, i) for i in tally.listed_ids}  # type: ignore[arg-type]
            t = run.tallies["tracked"]
            shares.append(100 * t.nees_ok / max(t.nees_n, 1))
            if scenario.occluded is not None:
                hold = (t.first_hold_after or math.inf) - run.last_seen_s
                back = (t.first_proceed_after or math.inf) - (run.back_s or math.inf)
                occlusion.append(
                    (hold, back, t.ids_before == t.ids_after and len(t.ids_after) == 1)
                )
        tr, pf = merged["tracked"], merged["per-frame"]
        nees = 100 * tr.nees_ok / max(tr.nees_n, 1)
        coverage = 100 * tr.proceed / max(tr.lines, 1)
        ids_per_run = len(tr.track_ids) / args.seeds
        listed_per_run = len(tr.listed_ids) / args.seeds
        print(f"\n{scenario.name}: {tr.lines} lines, PROCEED with a position {coverage:.1f} % "
              f"(per-frame {100 * pf.proceed / max(pf.lines, 1):.1f} %), track ids per run "
              f"{ids_per_run:.2f} (listed in any state: {listed_per_run:.2f})")  # fmt: skip
        judge(listed_per_run == 1.0, f"{scenario.name}: {listed_per_run} listed ids per run")
        print(f"  position at capture  {row(tr.position, 'm')}   | {row(pf.position, 'm')}")
        print(f"  velocity             {row(tr.velocity, 'm/s')} |")
        print(f"  predicted to host_ns {row(tr.predicted, 'm')}   | {row(pf.predicted, 'm')}")
        print(f"  NEES <= 5.991 (horizontal) {nees:.1f} % of {tr.nees_n} lines; PROCEED more "
              f"than 0.5 m off: {tr.far_proceed} | {pf.far_proceed}")  # fmt: skip
        outside = [s for s in shares if not 85.0 <= s <= 99.8]
        print(f"  NEES per run {min(shares):.1f}-{max(shares):.1f} %, {len(outside)} of "
              f"{len(shares)} runs outside 85-99.8 %; mean NEES "
              f"{tr.nees_sum / max(tr.nees_n, 1):.2f} (honest: 2)")  # fmt: skip
        vn = tr.velocity_nees
        within = 100 * sum(x <= 5.991 for x in vn) / max(len(vn), 1)
        print(f"  velocity NEES (horizontal) mean {statistics.fmean(vn) if vn else math.nan:.2f}"
              f" (honest: 2), <= 5.991 for {within:.1f} % (not a goal)")  # fmt: skip
        judge(85.0 <= nees <= 99.8, f"{scenario.name}: NEES share {nees:.1f} %")
        judge(not outside, f"{scenario.name}: NEES share of {len(outside)} runs outside "
              f"85-99.8 % ({', '.join(f'{s:.1f}' for s in outside)})")  # fmt: skip
        judge(tr.far_proceed == 0, f"{scenario.name}: {tr.far_proceed} PROCEED > 0.5 m off")
        judge(coverage >= 80.0, f"{scenario.name}: coverage {coverage:.1f} %")
        judge(ids_per_run == 1.0, f"{scenario.name}: {ids_per_run} track ids per run")
        goal = GOALS.get(scenario.name)
        if goal is not None:
            p95, v95 = percentile(tr.position, 95), percentile(tr.velocity, 95)
            judge(p95 <= goal[0], f"{scenario.name}: position p95 {p95:.3f} > {goal[0]}")
            judge(v95 <= goal[1], f"{scenario.name}: velocity p95 {v95:.3f} > {goal[1]}")
            if goal[2] is not None:
                h95 = percentile(tr.predicted, 95)
                judge(h95 <= goal[2], f"{scenario.name}: prediction p95 {h95:.3f} > {goal[2]}")
        if scenario.name == "static":
            half = percentile(pf.position, 95) / 2
            judge(percentile(tr.position, 95) <= half, "static: p95 above half the per-frame")
            ratio = percentile(tr.position, 95) / percentile(pf.position, 95)
            print(f"  static p95 / per-frame p95: {ratio:.2f} (goal <= 0.5)")
        for hold, back, same in occlusion:
            print(f"  occlusion: HOLD {hold * 1000:.0f} ms after the last capture (goal <= "
                  f"{TTL_MS + 60:.0f}), PROCEED {back * 1000:.0f} ms after the return (goal <= "
                  f"500), same track id: {same}")  # fmt: skip
            judge(hold * 1000 <= TTL_MS + 60 and back <= 0.5 and same, "occlusion")
    if not args.only or args.only == "cost":
        print("\nupdate cost per result (µs), p50 / p99, wall and CPU: tracked | per-frame")
        for targets in (1, 10):
            costs = update_costs(targets, args.seconds, 99)
            cells = []
            for kind in ("wall", "cpu"):
                tr_c, pf_c = costs[f"tracked {kind}"], costs[f"per-frame {kind}"]
                tracked = f"{statistics.median(tr_c):6.1f} / {percentile(tr_c, 99):6.1f}"
                frame = f"{statistics.median(pf_c):5.1f} / {percentile(pf_c, 99):5.1f}"
                cells.append(f"{kind} {tracked} | {frame}")
            print(f"  {targets:2d} tracks: " + ";  ".join(cells))
            if targets == 10:
                p99 = percentile(costs["tracked cpu"], 99)
                check(p99 <= 1000.0, f"update p99 {p99:.0f} µs (CPU) with 10 tracks")
        load = os.getloadavg()[0]
        print(f"  (load average {load:.1f} on {os.cpu_count()} cores: on a busy machine the wall "
              "time's p99 also counts the scheduler's 4 ms ticks)")  # fmt: skip
        runs = [Run(SCENARIOS[4], 6.0, 7, keep_lines=True) for _ in range(2)]
        for r in runs:
            r.run()
        same = all(a.tallies[n].encoded == b.tallies[n].encoded
                   for a, b in [runs] for n in a.tallies)  # fmt: skip
        print(f"\nreplaying the same input: byte-identical lines: {same} "
              f"({len(runs[0].tallies['tracked'].encoded)} lines)")  # fmt: skip
        check(same, "replay not byte-identical")
    print("\n" + ("all goals met" if not failures else "MISSED: " + "; ".join(failures)))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
