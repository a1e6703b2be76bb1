#!/usr/bin/env python3
"""The reader's short scheduler slice (``runtime.wakeup_slice_us``) against the kernel's own
slice, side by side in the same run.

Two ``gizmo-host run`` processes, one with the default 300 us slice and one with
``--wakeup-slice-us 0``, each on its own pty, get the same 30 frames/s at the same moments
(which one is written first alternates), while BENCH_SPIN processes spin on the CPU (default
1: a busy 2-core machine). The latency is from just before a frame is written to its line on
the reader's stdout; the consumer threads ask for the same short slice for both sides (their
own wake-up is in every figure, alike). Needs Linux 6.12 or later for the slice to differ.
Run: ``.venv/bin/python bench/wakeup_slice.py [FRAMES]`` (default 3600: two minutes).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import serial_link  # noqa: E402 - after the sys.path lines

from gizmo_host.live.wakeup_slice import DEFAULT_SLICE_US, request_slice  # noqa: E402
from gizmo_host.rigs.board import PtyBoard  # noqa: E402

SPIN = int(os.environ.get("BENCH_SPIN", "1"))
RATE_HZ = 30.0
WARMUP_FRAMES = 30
SIDES = {f"slice {DEFAULT_SLICE_US} us": [], "kernel's slice": ["--wakeup-slice-us", "0"]}


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 3600
    stream, _ = serial_link.build_stream(count, None, RATE_HZ)
    frames = [stream[i * 35 : (i + 1) * 35] for i in range(count)]
    print(
        f"gizmo-host run at {RATE_HZ:g} frames/s, {count} frames, side by side; {SPIN} spinning, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(SPIN)]
    boards, procs = [], []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            consumers, written = {}, {}
            for index, (name, flags) in enumerate(SIDES.items()):
                link = os.path.join(tmp, f"side{index}")
                board = PtyBoard(link)
                board.__enter__()
                boards.append(board)
                proc = subprocess.Popen(
                    [sys.executable, "-m", "gizmo_host.cli", "run", "--serial", link, *flags],
                    cwd=ROOT,
                    env={**os.environ, "PYTHONPATH": str(ROOT)},
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                procs.append(proc)
                log = open(proc.stderr.fileno(), closefd=False)  # noqa: SIM115
                serial_link.wait_line(log, "SYNCING")
                threading.Thread(target=lambda log=log: [None for _ in log], daemon=True).start()
                written[name] = [0] * count
            print(f"consumers: {request_slice(DEFAULT_SLICE_US).note}")  # inherited below
            for name, proc in zip(SIDES, procs, strict=True):
                consumer = serial_link.Consumer(
                    lambda p=proc: os.read(p.stdout.fileno(), 65536), False
                )
                consumer.start()
                consumers[name] = consumer
            start = time.monotonic() + 1.0
            pairs = list(zip(SIDES, boards, strict=True))
            for i, frame in enumerate(frames):
                time.sleep(max(0.0, start + i / RATE_HZ - time.monotonic()))
                for name, board in pairs if i % 2 == 0 else pairs[::-1]:
                    written[name][i] = time.monotonic_ns()
                    board.write(frame)
            time.sleep(serial_link.DRAIN_S)
            print(
                f"{'side':<16}{'lines':>6}{'p50':>7}{'p90':>7}{'p99':>7}{'p99.9':>7}{'> 2 ms':>8}"
            )
            for name in SIDES:
                got = consumers[name].received_ns
                latency_ms = [
                    (got[i] - written[name][i]) / 1e6
                    for i in range(WARMUP_FRAMES, count)
                    if i in got
                ]
                cells = "".join(
                    f"{serial_link.percentile(latency_ms, q):>7.2f}"
                    for q in (0.5, 0.9, 0.99, 0.999)
                )
                over = sum(value > serial_link.P99_TARGET_MS for value in latency_ms)
                print(f"{name:<16}{len(latency_ms):>6}{cells}{over:>8}")
    finally:
        for process in (*spinners, *procs):
            process.kill()
            process.wait()
        for board in boards:
            board.__exit__(None, None, None)
    print("(ms from a frame's write to its line on stdout)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
