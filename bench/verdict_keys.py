#!/usr/bin/env python3
"""Per-frame cost with 1 stored key and with 1,024 (issue 10 item 5).

A stream where every frame can change a verdict (every fourth one "not detected", so the verdict
flips and is re-evaluated on every frame: the service's worst case) goes through the sans-I/O
per-frame stages: parser, sequence tracker, device clock, result store and verdict. One key is
the usual board; 1,024 keys is a flood of QR hashes. Printed: frames/s for each, and the ratio
of 1,024 keys to 1 key, for the indexed verdict (a watched selector, as the service uses) and,
measured in the same run as the baseline, the unindexed walk over every key (what every verdict
cost before). Target: the indexed ratio stays near 1.0 (O(1) in the number of keys).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gizmo_core import LinkState, Selector
from gizmo_host.rigs.board import LOST_RELATIVE, TRACKED_RELATIVE, BoardModel
from gizmo_host.stream.clock import ClockStatus, DeviceClockEstimator
from gizmo_host.stream.events import ReceivedResult
from gizmo_host.stream.store import ResultStore
from gizmo_host.stream.tracker import SequenceTracker
from gizmo_host.wire.parser import StreamParser
from gizmo_host.wire.results import ResultType

FRAMES = 20_000
REPEATS = 5


def build_stream(keys: int) -> bytes:
    model = BoardModel(result_type=int(ResultType.QR_CODE), period_ms=1)
    return b"".join(
        model.next_frame(id=k % keys, flags=LOST_RELATIVE if k % 4 == 3 else TRACKED_RELATIVE)
        for k in range(FRAMES)
    )


def frames_per_s(stream: bytes, *, indexed: bool) -> float:
    parser, tracker, clock = StreamParser(), SequenceTracker(), DeviceClockEstimator()
    store, selector = ResultStore(), Selector()
    if indexed:
        store.watch(selector)
    start = time.perf_counter()
    now_ns = 10**9
    for result in parser.feed(stream):
        now_ns += 1_000_000
        event = tracker.observe(result.source_id, result.sequence, result.timestamp_ms, now_ns)
        sample = clock.observe(result.timestamp_ms, now_ns)
        capture = clock.tick_to_host_ns(sample.device_ms - result.age_ms)
        store.update(
            ReceivedResult(
                result,
                now_ns,
                capture,
                sample.device_ms,
                0,
                sample.status,
                event,
                (now_ns if capture is None else capture) + store.ttl_ns(result.result_type),
            )
        )
        store.verdict(selector, now_ns, link_state=LinkState.UP, clock_status=ClockStatus.LOCKED)
    return FRAMES / (time.perf_counter() - start)


def main() -> int:
    streams = {keys: build_stream(keys) for keys in (1, 1024)}
    print(f"{FRAMES} frames, every one re-evaluating the verdict; best of {REPEATS}")
    for indexed, name in ((True, "indexed (watched selector)"), (False, "walk (baseline)")):
        rate = {
            k: max(frames_per_s(s, indexed=indexed) for _ in range(REPEATS))
            for k, s in streams.items()
        }
        print(
            f"{name:28s} 1 key {rate[1]:9.0f} frames/s   1024 keys {rate[1024]:9.0f} frames/s"
            f"   ratio {rate[1024] / rate[1]:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
