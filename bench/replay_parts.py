#!/usr/bin/env python3
"""Where each microsecond of an offline replay goes, per frame and per call.

The captures of ``bench/replay.py`` (``BENCH_DURATION_S``, default 10 s) are replayed through
``OfflineReplay`` with timers around its stages (the parser, the per-frame pipeline, the world
service's handling of a result and its pieces, its verdict checks, ticks and deadlines, the
datagrams, the lines), best of ``BENCH_REPEATS``. Stages nest: ``WorldService.on_gizmo``
holds the adapter and ``WorldModel._on_vision``, which holds the placement and the tracker.
The timers cost about 0.2 us a call: the total is above ``bench/replay.py``'s.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("BENCH_DURATION_S", "10")

import replay  # noqa: E402 - the captures, after the sys.path lines

from fusion.placement import Placer  # noqa: E402
from fusion.tracking.tracker import Tracker  # noqa: E402
from fusion.world import WorldModel  # noqa: E402
from gizmo_host.app.host import Host  # noqa: E402
from gizmo_host.app.offline_replay import OfflineReplay  # noqa: E402
from gizmo_host.bridge.world_adapters import GizmoAdapter  # noqa: E402
from gizmo_host.bridge.world_service import WorldService  # noqa: E402
from gizmo_host.capture.reader import CaptureReader  # noqa: E402
from gizmo_host.live.service import GizmoService  # noqa: E402
from gizmo_host.publish.lines import JsonLinesPublisher  # noqa: E402
from gizmo_host.stream.pipeline import FramePipeline  # noqa: E402
from gizmo_host.wire.parser import StreamParser  # noqa: E402

STAGES: list[tuple[type, str]] = [
    (StreamParser, "feed"),
    (FramePipeline, "apply"),
    (GizmoService, "_dispatch"),
    (WorldService, "on_gizmo"),
    (GizmoAdapter, "result"),
    (WorldModel, "_on_vision"),
    (Placer, "place"),
    (Tracker, "add"),
    (Tracker, "_insert"),
    (WorldService, "_on_check"),
    (WorldService, "_on_tick"),
    (WorldService, "_on_deadline"),
    (JsonLinesPublisher, "publish_batch"),
    (Host, "datagram"),
]
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))


def timed(owner: type, name: str, totals: dict[str, list[float]]) -> None:
    """Wrap ``owner.name`` with a timer adding to ``totals[owner.name]``."""
    fn: Callable[..., Any] = getattr(owner, name)
    key = f"{owner.__name__}.{name}"
    totals[key] = [0.0, 0]
    clock = time.perf_counter

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            entry = totals[key]
            entry[0] += clock() - start
            entry[1] += 1

    setattr(owner, name, wrapper)


def parts(path: str, totals: dict[str, list[float]]) -> tuple[int, float, dict[str, tuple]]:
    best: tuple[float, dict[str, tuple]] | None = None
    frames = 0
    for _ in range(REPEATS):
        for entry in totals.values():
            entry[0], entry[1] = 0.0, 0
        capture = CaptureReader(path)
        start = time.perf_counter()
        frames = sum(
            line.startswith(b'{"type":"result"')
            for line in OfflineReplay(capture.info, capture.path).replay(capture.messages())
        )
        took = time.perf_counter() - start
        if best is None or took < best[0]:
            best = (took, {k: (v[0], v[1]) for k, v in totals.items()})
    assert best is not None
    return frames, best[0], best[1]


def main() -> int:
    totals: dict[str, list[float]] = {}
    for owner, name in STAGES:
        timed(owner, name, totals)
    print(f"offline replay by stage ({os.environ['BENCH_DURATION_S']} s captures, best of "
          f"{REPEATS}, load average {os.getloadavg()[0]:.2f})")  # fmt: skip
    captures = {
        "921600 1 ms chunks world": lambda: replay.saturated(
            921600, world=True, frame_chunks=False
        ),
        "921600 frame chunks world": lambda: replay.saturated(
            921600, world=True, frame_chunks=True
        ),
        "30/s world": lambda: replay.generated("clean", world=True),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for label, make in captures.items():
            path = os.path.join(tmp, "capture.mcap")
            Path(path).write_bytes(make())
            frames, took, stages = parts(path, totals)
            print(f"\n{label}: {frames} frames, {took / frames * 1e6:.1f} us a frame")
            for key, (seconds, calls) in stages.items():
                if calls:
                    print(f"  {key:34s}{seconds / frames * 1e6:8.2f} us/frame"
                          f"{calls:9d} calls{seconds / calls * 1e6:8.2f} us/call")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
