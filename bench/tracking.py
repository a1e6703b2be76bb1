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
``occlusion``: 3 m/s, the board reports the target not detected for 1 s from 8 s.

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
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fusion import (
    CameraConfig,
    LinkState,
    LinkStatus,
    PoseSample,
    VisionObservation,
    WorldConfig,
    WorldModel,
)
from fusion.tracking import TrackingConfig
from gizmo_host.publish.lines import encode_line
from gizmo_host.stream.clock import DeviceClockEstimator, frame_transmit_ns
from hil_geometry.pinhole import Pinhole

MS = 1_000_000
HOST_ORIGIN_NS = 50_000 * MS
ALTITUDE_M, LAG_S = 10.0, 0.4
VISION_HZ, POSE_HZ, SNAPSHOT_HZ = 30.0, 100.0, 50.0
BOX_SIGMA_PX, DEVICE_SKEW_PPM, BAUD = 1.5, 100.0, 115_200
TTL_MS = 250.0
G = 9.80665
TURN_SPEED, TURN_ACCEL = 5.0, 0.3 * G
CAMERA_CONFIG = CameraConfig(width_px=640, height_px=480, hfov_deg=90.0,
                             mount_rpy_deg=(0.0, -90.0, 0.0))  # fmt: skip
PINHOLE = Pinhole.from_table(640, 480, hfov_deg=90.0, mount_rpy_deg=(0.0, -90.0, 0.0))
LEVEL = (1.0, 0.0, 0.0, 0.0)
Vec = tuple[float, float, float]


# -- truth ---------------------------------------------------------------------------------


class Path2D:
    """A ground path of constant-turn segments ``(seconds, turn rate rad/s)`` at one speed,
    closed form in each; before 0 and after the last segment it runs straight."""

    def __init__(self, speed: float, heading_deg: float, segments: list[tuple[float, float]]):
        self.speed = speed
        self.starts: list[tuple[float, float, float, float, float]] = []  # t, n, e, heading, w
        t, n, e, h = 0.0, 0.0, 0.0, math.radians(heading_deg)
        for duration, w in [*segments, (math.inf, 0.0)]:
            self.starts.append((t, n, e, h, w))
            if math.isinf(duration):
                break
            n, e, h = self._advance(n, e, h, w, duration)
            t += duration

    def _advance(self, n: float, e: float, h: float, w: float, dt: float) -> tuple[float, ...]:
        v = self.speed
        if abs(w) < 1e-12:
            return n + v * dt * math.cos(h), e + v * dt * math.sin(h), h
        h2 = h + w * dt
        return n + v / w * (math.sin(h2) - math.sin(h)), e - v / w * (math.cos(h2) - math.cos(h)), h2

    def at(self, t: float) -> tuple[Vec, Vec]:
        start = self.starts[0]
        for s in self.starts:
            if s[0] <= t:
                start = s
        t0, n, e, h, w = start
        if t < t0:  # before 0: straight
            w = 0.0
        n, e, h = self._advance(n, e, h, w, t - t0)
        return (n, e, 0.0), (self.speed * math.cos(h), self.speed * math.sin(h), 0.0)


class Scenario(NamedTuple):
    name: str
    path: Path2D
    glitch_share: float = 0.0
    occluded: tuple[float, float] | None = None  # (from, to) seconds


def _turns() -> Path2D:
    w = TURN_ACCEL / TURN_SPEED
    return Path2D(TURN_SPEED, 0.0, [(3.0, 0.0), (8.0, w), (3.0, 0.0), (4.0, -w), (2.0, 0.0)])


SCENARIOS = (
    Scenario("static", Path2D(0.0, 0.0, [])),
    Scenario("straight 1 m/s", Path2D(1.0, 30.0, [])),
    Scenario("straight 3 m/s", Path2D(3.0, 30.0, [])),
    Scenario("straight 8 m/s", Path2D(8.0, 30.0, [])),
    Scenario("turn 0.3 g at 5 m/s", _turns()),
    Scenario("glitches 2 % 3 m off", Path2D(3.0, 30.0, []), glitch_share=0.02),
    Scenario("occlusion 1 s", Path2D(3.0, 30.0, []), occluded=(8.0, 9.0)),
)


def host(t_s: float) -> int:
    return HOST_ORIGIN_NS + round(t_s * 1e9)


def seconds(host_ns: int) -> float:
    return (host_ns - HOST_ORIGIN_NS) / 1e9


def vehicle(path: Path2D, t: float) -> tuple[Vec, Vec]:
    (n, e, _), velocity = path.at(t - LAG_S)
    return (n, e, -ALTITUDE_M), velocity


def box(position: Vec, target: Vec, rng: random.Random) -> tuple[int, int] | None:
    """The board's box centre (its units) for ``target`` seen from ``position``, with noise."""
    pixel = PINHOLE.project_point(PINHOLE.pose(position, LEVEL), target)
    if pixel is None:
        return None
    u = pixel[0] + rng.gauss(0.0, BOX_SIGMA_PX)
    v = pixel[1] + rng.gauss(0.0, BOX_SIGMA_PX)
    if not (0 <= u <= 639 and 0 <= v <= 479):
        return None
    return round(u * 2000 / 639 - 1000), round(v * 2000 / 479 - 1000)


class Event(NamedTuple):
    arrival_ns: int
    order: int
    item: Any  # PoseSample, or (true capture s, device ms, age ms, [(id, centre or None)])


def make_events(
    paths: list[Path2D], scenario: Scenario, duration_s: float, seed: int
) -> list[Event]:
    rng = random.Random(seed)
    lead = paths[0]
    events: list[Event] = []
    for k in range(int(duration_s * POSE_HZ) + 1):
        t = k / POSE_HZ
        position, velocity = vehicle(lead, t)
        pose = PoseSample(host(t), round(t * 1e9), 0, position, LEVEL, velocity)
        events.append(Event(host(t) + round(rng.uniform(0.5, 6.0) * MS), 1, pose))
    transmit = frame_transmit_ns(BAUD)
    for k in range(1, int(duration_s * VISION_HZ)):
        t = k / VISION_HZ + rng.uniform(-0.5, 0.5) / 1000
        processing_ms = rng.randint(12, 35)
        sent = t + processing_ms / 1000
        device_ms = math.floor((1000.0 + sent * 1000) * (1 + DEVICE_SKEW_PPM * 1e-6))
        position, _ = vehicle(lead, t)
        seen: list[tuple[int, tuple[int, int] | None]] = []
        for ident, path in enumerate(paths, start=11):
            target, _ = path.at(t)
            occluded = scenario.occluded is not None and (
                scenario.occluded[0] <= t < scenario.occluded[1]
            )
            if not occluded and rng.random() < scenario.glitch_share:
                a = rng.uniform(0, 2 * math.pi)
                target = (target[0] + 3.0 * math.cos(a), target[1] + 3.0 * math.sin(a), 0.0)
            seen.append((ident, None if occluded else box(position, target, rng)))
        for i, (ident, centre) in enumerate(seen):  # one frame per result, 35 bytes apart
            rx = host(sent) + (i + 1) * transmit + round(rng.expovariate(1.0) * 0.3 * MS)
            events.append(Event(rx, 0, (t, device_ms, processing_ms, ident, centre)))
    events.sort(key=lambda e: (e.arrival_ns, e.order))
    return events


# -- the run -------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


class Tally:
    """What the lines of one model say, against the truth."""

    def __init__(self) -> None:
        self.lines = self.proceed = self.nees_ok = self.nees_n = self.far_proceed = 0
        self.position: list[float] = []
        self.velocity: list[float] = []
        self.predicted: list[float] = []
        self.track_ids: set[int] = set()
        self.encoded: list[bytes] = []
        self.first_hold_after: float | None = None  # occlusion: the first HOLD's host time
        self.first_proceed_after: float | None = None  # ... the first PROCEED after return
        self.ids_before: set[int] = set()
        self.ids_after: set[int] = set()


def model(tracking: bool) -> WorldModel:
    config = WorldConfig(pose_required=True, ttl_ms=TTL_MS)
    return WorldModel(CAMERA_CONFIG, config, tracking=TrackingConfig() if tracking else None)


class Run:
    def __init__(self, scenario: Scenario, duration_s: float, seed: int, *, keep_lines: bool):
        self.scenario = scenario
        self.events = make_events([scenario.path], scenario, duration_s, seed)
        self.models = {"tracked": model(True), "per-frame": model(False)}
        self.tallies = {name: Tally() for name in self.models}
        self.clock = DeviceClockEstimator(transport_delay_ns=frame_transmit_ns(BAUD))
        self.capture_truth: dict[int, float] = {}
        self.keep_lines = keep_lines
        self.last_seen_s = -1.0  # the last capture that saw the target before the occlusion
        self.back_s: float | None = None  # the first capture after the occlusion

    def run(self) -> None:
        start = self.events[0].arrival_ns - 10 * MS
        for world in self.models.values():
            world.apply(LinkStatus(start, LinkState.UP))
        tick = round(1e9 / SNAPSHOT_HZ)
        next_tick = start
        lead = self.models["tracked"]
        for event in self.events:
            while True:
                deadline = lead.next_deadline_ns()
                due = next_tick if deadline is None else min(next_tick, deadline)
                if due >= event.arrival_ns:
                    break
                self.snapshots(due)
                if due == next_tick:
                    next_tick += tick
            item = event.item
            if isinstance(item, PoseSample):
                for world in self.models.values():
                    world.apply(item)
                continue
            obs = self.observation(event.arrival_ns, *item)
            for world in self.models.values():
                world.apply(obs)
            self.snapshots(event.arrival_ns)

    def observation(
        self, rx: int, t: float, device_ms: int, age_ms: int, ident: int, centre: Any
    ) -> VisionObservation:
        sample = self.clock.observe(device_ms, rx)
        capture = self.clock.tick_to_host_ns(sample[0] - age_ms)
        capture = rx if capture is None else capture
        self.capture_truth[capture] = t
        seen = centre is not None
        occluded = self.scenario.occluded
        if seen and occluded is not None:
            if t >= occluded[1] and self.back_s is None:
                self.back_s = t
            if t < occluded[0]:
                self.last_seen_s = max(self.last_seen_s, t)
        cx, cy = centre if seen else (0, 0)
        return VisionObservation(
            1, 5, ident, "pedestrian", 80 if seen else 0, seen, not seen, True,
            cx, cy, 30, 40, capture, rx, sample[1], sample[2].value == "locked",
        )  # fmt: skip

    def snapshots(self, now: int) -> None:
        for name, world in self.models.items():
            self.judge(now, world.snapshot(now), self.tallies[name])

    def judge(self, now: int, snap: Any, tally: Tally) -> None:
        if self.keep_lines:
            tally.encoded.append(encode_line(snap.to_dict()))
        now_s = seconds(now)
        occluded = self.scenario.occluded
        if occluded is not None:
            self.judge_occlusion(now_s, snap, tally, occluded)
        if now_s < 1.0:
            return
        tally.lines += 1
        target = snap.target(snap.selected) if snap.proceed else None
        if target is None or target.position_ned_m is None:
            return
        tally.proceed += 1
        t_capture = self.capture_truth[target.capture_ns]
        truth, true_velocity = self.scenario.path.at(t_capture)
        error = np.subtract(target.position_ned_m, truth)
        tally.position.append(float(np.linalg.norm(error)))
        if float(np.linalg.norm(error[:2])) > 0.5:
            tally.far_proceed += 1
        ahead = (now - target.capture_ns) / 1e9
        predicted = np.array(target.position_ned_m)
        if target.velocity_ned_m_s is not None:
            predicted = predicted + ahead * np.array(target.velocity_ned_m_s)
            tally.velocity.append(float(np.linalg.norm(np.subtract(target.velocity_ned_m_s,
                                                                   true_velocity))))  # fmt: skip
        tally.predicted.append(float(np.linalg.norm(predicted - self.scenario.path.at(now_s)[0])))
        if target.covariance_ned is not None:
            cov = np.array(target.covariance_ned).reshape(6, 6)[:2, :2]
            nees = float(error[:2] @ np.linalg.solve(cov, error[:2]))
            tally.nees_n += 1
            tally.nees_ok += nees <= 5.991
        if target.track_id is not None:
            tally.track_ids.add(target.track_id)

    def judge_occlusion(
        self, now_s: float, snap: Any, tally: Tally, occluded: tuple[float, float]
    ) -> None:
        target = snap.target(snap.selected) if snap.proceed else None
        if now_s < occluded[0]:
            if target is not None and target.track_id is not None:
                tally.ids_before.add(target.track_id)
        elif tally.first_hold_after is None and target is None:
            tally.first_hold_after = now_s
        elif self.back_s is not None and target is not None:
            if tally.first_proceed_after is None:
                tally.first_proceed_after = now_s
            if target.track_id is not None:
                tally.ids_after.add(target.track_id)


# -- cost ----------------------------------------------------------------------------------


def update_costs(targets: int, duration_s: float, seed: int) -> dict[str, list[float]]:
    """µs per result applied, per model, with ``targets`` targets in view (each its own key)."""
    paths = [Path2D(3.0, 30.0 + 36.0 * i, []) for i in range(targets)]
    for i, p in enumerate(paths):  # spread them around the lead target, within the image
        a = 2 * math.pi * i / targets
        p.starts = [(t0, n + 4 * math.cos(a) * (i > 0), e + 4 * math.sin(a) * (i > 0), h, w)
                    for t0, n, e, h, w in p.starts]  # fmt: skip
        p.speed = 3.0
    # all move the lead's way, so they stay in view
    for p in paths[1:]:
        p.starts = [(t0, n, e, paths[0].starts[0][3], w) for t0, n, e, _h, w in p.starts]
    events = make_events(paths, Scenario("cost", paths[0]), duration_s, seed)
    models = {"tracked": model(True), "per-frame": model(False)}
    clock = DeviceClockEstimator(transport_delay_ns=frame_transmit_ns(BAUD))
    costs: dict[str, list[float]] = {name: [] for name in models}
    for world in models.values():
        world.apply(LinkStatus(events[0].arrival_ns - MS, LinkState.UP))
    for event in events:
        item = event.item
        if not isinstance(item, PoseSample):
            t, device_ms, age_ms, ident, centre = item
            sample = clock.observe(device_ms, event.arrival_ns)
            capture = clock.tick_to_host_ns(sample[0] - age_ms) or event.arrival_ns
            seen = centre is not None
            cx, cy = centre if seen else (0, 0)
            item = VisionObservation(
                1, 5, ident, "pedestrian", 80, seen, not seen, True, cx, cy, 30, 40,
                capture, event.arrival_ns, sample[1], sample[2].value == "locked",
            )  # fmt: skip
        for name, world in models.items():
            t0 = time.perf_counter_ns()
            world.apply(item)
            if isinstance(item, VisionObservation):
                costs[name].append((time.perf_counter_ns() - t0) / 1000)
        for world in models.values():
            world.snapshot(event.arrival_ns)
    tracks = models["tracked"].stats()
    assert tracks["targets"] >= targets, tracks
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
    parser.add_argument("--only", help="run only the scenarios whose name contains this")
    args = parser.parse_args(argv)
    if args.seconds < 12:
        parser.error("--seconds: expected at least 12 (the occlusion is at 8-9 s)")
    failures: list[str] = []
    check: Callable[[bool, str], None] = lambda ok, what: None if ok else failures.append(what)  # noqa: E731
    print(f"tracking: {args.seeds} seeds x {args.seconds:.0f} s per scenario; p50 / p95 over "
          "the lines after the first second (tracked | per-frame, same run)")  # fmt: skip
    for scenario in SCENARIOS:
        if args.only and args.only not in scenario.name:
            continue
        merged = {name: Tally() for name in ("tracked", "per-frame")}
        occlusion: list[tuple[float, float, bool]] = []
        for seed in range(args.seeds):
            run = Run(scenario, args.seconds, seed, keep_lines=False)
            run.run()
            for name, tally in run.tallies.items():
                m = merged[name]
                for field in ("lines", "proceed", "nees_ok", "nees_n", "far_proceed"):
                    setattr(m, field, getattr(m, field) + getattr(tally, field))
                m.position += tally.position
                m.velocity += tally.velocity
                m.predicted += tally.predicted
                m.track_ids |= {(seed, i) for i in tally.track_ids}  # type: ignore[arg-type]
            t = run.tallies["tracked"]
            if scenario.occluded is not None:
                hold = (t.first_hold_after or math.inf) - run.last_seen_s
                back = (t.first_proceed_after or math.inf) - (run.back_s or math.inf)
                occlusion.append((hold, back, t.ids_before == t.ids_after and len(t.ids_after) == 1))
        tr, pf = merged["tracked"], merged["per-frame"]
        nees = 100 * tr.nees_ok / max(tr.nees_n, 1)
        coverage = 100 * tr.proceed / max(tr.lines, 1)
        ids_per_run = len(tr.track_ids) / args.seeds
        print(f"\n{scenario.name}: {tr.lines} lines, PROCEED with a position {coverage:.1f} % "
              f"(per-frame {100 * pf.proceed / max(pf.lines, 1):.1f} %), track ids per run "
              f"{ids_per_run:.2f}")  # fmt: skip
        print(f"  position at capture  {row(tr.position, 'm')}   | {row(pf.position, 'm')}")
        print(f"  velocity             {row(tr.velocity, 'm/s')} |")
        print(f"  predicted to host_ns {row(tr.predicted, 'm')}   | {row(pf.predicted, 'm')}")
        print(f"  NEES <= 5.991 (horizontal) {nees:.1f} % of {tr.nees_n} lines; PROCEED more "
              f"than 0.5 m off: {tr.far_proceed} | {pf.far_proceed}")  # fmt: skip
        check(85.0 <= nees <= 99.8, f"{scenario.name}: NEES share {nees:.1f} %")
        check(tr.far_proceed == 0, f"{scenario.name}: {tr.far_proceed} PROCEED > 0.5 m off")
        check(coverage >= 80.0, f"{scenario.name}: coverage {coverage:.1f} %")
        check(ids_per_run == 1.0, f"{scenario.name}: {ids_per_run} track ids per run")
        goal = GOALS.get(scenario.name)
        if goal is not None:
            p95, v95 = percentile(tr.position, 95), percentile(tr.velocity, 95)
            check(p95 <= goal[0], f"{scenario.name}: position p95 {p95:.3f} > {goal[0]}")
            check(v95 <= goal[1], f"{scenario.name}: velocity p95 {v95:.3f} > {goal[1]}")
            if goal[2] is not None:
                h95 = percentile(tr.predicted, 95)
                check(h95 <= goal[2], f"{scenario.name}: prediction p95 {h95:.3f} > {goal[2]}")
        if scenario.name == "static":
            half = percentile(pf.position, 95) / 2
            check(percentile(tr.position, 95) <= half, "static: p95 above half the per-frame")
            print(f"  static p95 / per-frame p95: "
                  f"{percentile(tr.position, 95) / percentile(pf.position, 95):.2f} (goal <= 0.5)")  # fmt: skip
        for hold, back, same in occlusion:
            print(f"  occlusion: HOLD {hold * 1000:.0f} ms after the last capture (goal <= "
                  f"{TTL_MS + 60:.0f}), PROCEED {back * 1000:.0f} ms after the return (goal <= "
                  f"500), same track id: {same}")  # fmt: skip
            check(hold * 1000 <= TTL_MS + 60 and back <= 0.5 and same, "occlusion")
    if not args.only:
        print("\nupdate cost per result (µs), p50 / p99: tracked | per-frame")
        for targets in (1, 10):
            costs = update_costs(targets, 6.0, 99)
            tr_c, pf_c = costs["tracked"], costs["per-frame"]
            p99 = percentile(tr_c, 99)
            print(f"  {targets:2d} tracks: {statistics.median(tr_c):7.1f} / {p99:7.1f} | "
                  f"{statistics.median(pf_c):5.1f} / {percentile(pf_c, 99):5.1f}  (x"
                  f"{statistics.median(tr_c) / statistics.median(pf_c):.1f} at p50)")  # fmt: skip
            if targets == 10:
                check(p99 <= 1000.0, f"update p99 {p99:.0f} µs with 10 tracks")
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
