#!/usr/bin/env python3
"""The stdout sink's per-line cost (issue 18 item 6): the bounded, non-blocking ``QueuedSink``
against the blocking ``write`` + ``flush`` of a ``BufferedWriter`` it replaced, measured in the
same run on the same descriptor (/dev/null: the fast path, a reader that keeps up), seven
interleaved repeats, medians. A stalled reader costs a queue append instead of a stall.
"""

from __future__ import annotations

import io
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gizmo_host.publish.sinks import stdout_sink

LINE = b'{"type":"result","pad":"' + b"x" * 400 + b'"}\n'  # about a result line's size
N = 50_000
REPEATS = 7


def main() -> None:
    fd = os.open(os.devnull, os.O_WRONLY)
    blocking = io.BufferedWriter(io.FileIO(fd, "w", closefd=False))
    queued = stdout_sink(fd)

    def write_and_flush(line: bytes) -> None:
        blocking.write(line)
        blocking.flush()

    ns: dict[str, list[float]] = {"write+flush": [], "QueuedSink": []}
    for _ in range(REPEATS):
        for name, send in (("write+flush", write_and_flush), ("QueuedSink", queued.send)):
            start = time.perf_counter()
            for _ in range(N):
                send(LINE)
            ns[name].append((time.perf_counter() - start) / N * 1e9)
    base, new = (statistics.median(v) for v in ns.values())
    print(f"per {len(LINE)}-byte line, medians of {REPEATS} x {N}:")
    print(f"  write+flush (baseline) {base:6.0f} ns")
    print(f"  QueuedSink             {new:6.0f} ns  ratio {new / base:.2f}")
    os.close(fd)


if __name__ == "__main__":
    main()
