#!/usr/bin/env python3
"""What a reader that falls behind costs the host per line (issue 29): the stalled sink's
queue push, for a line without validity (``link``, ``stats``: the baseline, what every queued
line cost before lines expired) and for a ``result`` line whose ``valid_until_ns`` is read as
it is queued; then the steady state of a long stall, the 1 MiB queue full and its lines
expiring (1 ms of host time per line, a 250 ms TTL). Measured in the same run, seven
interleaved repeats, medians.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gizmo_host.publish.lines import encode_line
from gizmo_host.publish.sinks import stdout_sink

N = 50_000
REPEATS = 7
PAD = "x" * 330  # about a result line's size with the fields below
MS = 1_000_000


def full_pipe() -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    with contextlib.suppress(BlockingIOError):
        while True:
            os.write(write_fd, b"#" * 4096)
    return read_fd, write_fd


async def run(lines: list[bytes], step_ns: int) -> float:
    """ns per ``send`` to stdout on a full pipe nobody reads (the sink's writer armed on the
    loop, as in ``gizmo-host run``), the clock moving ``step_ns`` a line."""
    now = [0]
    read_fd, write_fd = full_pipe()
    sink = stdout_sink(write_fd, clock=lambda: now[0])
    try:
        start = time.perf_counter()
        for line in lines:
            sink.send(line)
            now[0] += step_ns
        return (time.perf_counter() - start) / len(lines) * 1e9
    finally:
        await sink.close(flush_s=0)
        os.close(read_fd)
        os.close(write_fd)


def main() -> None:
    plain = [encode_line({"type": "link", "n": n, "pad": PAD}) for n in range(N)]
    valid = [
        encode_line({"type": "result", "valid_until_ns": n * MS + 250 * MS, "pad": PAD})
        for n in range(N)
    ]
    ns: dict[str, list[float]] = {"no validity": [], "valid_until_ns": [], "expiring": []}
    for _ in range(REPEATS):
        ns["no validity"].append(asyncio.run(run(plain, 0)))
        ns["valid_until_ns"].append(asyncio.run(run(valid, 0)))
        ns["expiring"].append(asyncio.run(run(valid, MS)))
    base = statistics.median(ns["no validity"])
    print(f"per {len(valid[0])}-byte line queued for a stalled reader, medians of {REPEATS} x {N}:")
    for name, values in ns.items():
        median = statistics.median(values)
        print(f"  {name:15} {median:6.0f} ns  ratio {median / base:.2f}")


if __name__ == "__main__":
    main()
