#!/usr/bin/env python3
"""The device clock's per-frame cost (issue 29: the clock core behind an adapter).

One board at 30 Hz with 0.5-3 ms of delivery jitter, 60 s of frames, through what the pipeline
does per frame for the clock: ``DeviceClockEstimator.observe_frame`` (the sample and the
capture time, ``observe`` and ``tick_to_host_ns`` in one call). The
baseline, measured in the same run, is the sequence tracker on the same frames (the stage
before it, unchanged). Printed: ns per frame for each and the ratio clock / tracker; then the
clock's steady state, the last minute of ten (its skew fit's window, 2 min of segments, full:
the first minute never fills it).
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gizmo_host.stream.clock import DeviceClockEstimator
from gizmo_host.stream.tracker import SequenceTracker

FRAMES = 1_800  # 60 s at 30 Hz
REPEATS = 7


def frames(count: int = FRAMES) -> list[tuple[int, int, int]]:
    """(sequence, timestamp_ms, host receive ns)."""
    rng = random.Random(29)
    out = []
    for k in range(count):
        sent_ns = 10**12 + k * 33_333_333
        out.append(
            (k, 5_000 + sent_ns // 1_000_000 - 10**6, sent_ns + rng.randint(500_000, 3_000_000))
        )
    return out


def per_frame_ns(run, stream: list[tuple[int, int, int]]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter_ns()
        run(stream)
        best = min(best, (time.perf_counter_ns() - start) / len(stream))
    return best


def clock_stage(stream: list[tuple[int, int, int]]) -> None:
    observe = DeviceClockEstimator().observe_frame
    for _, timestamp_ms, rx_ns in stream:
        observe(timestamp_ms, 12, rx_ns, False, True)


def tracker_stage(stream: list[tuple[int, int, int]]) -> None:
    observe = SequenceTracker().observe
    for sequence, timestamp_ms, rx_ns in stream:
        observe(1, sequence, timestamp_ms, rx_ns)


def steady_ns(stream: list[tuple[int, int, int]], last: int) -> float:
    """The clock's ns per frame over the ``last`` frames of ``stream`` (best of 3)."""
    best = float("inf")
    for _ in range(3):
        observe = DeviceClockEstimator().observe_frame
        for _, timestamp_ms, rx_ns in stream[:-last]:
            observe(timestamp_ms, 12, rx_ns, False, True)
        start = time.perf_counter_ns()
        for _, timestamp_ms, rx_ns in stream[-last:]:
            observe(timestamp_ms, 12, rx_ns, False, True)
        best = min(best, (time.perf_counter_ns() - start) / last)
    return best


def main() -> None:
    stream = frames()
    tracker = per_frame_ns(tracker_stage, stream)
    clock = per_frame_ns(clock_stage, stream)
    print(f"sequence tracker (baseline): {tracker:.0f} ns/frame")
    print(f"device clock (observe_frame: observe + tick_to_host_ns): {clock:.0f} ns/frame")
    print(f"ratio clock / tracker: {clock / tracker:.2f}")
    steady = steady_ns(frames(10 * FRAMES), FRAMES)
    print(f"device clock, steady state (the last minute of ten): {steady:.0f} ns/frame")


if __name__ == "__main__":
    main()
