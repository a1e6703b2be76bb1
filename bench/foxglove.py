#!/usr/bin/env python3
"""The Foxglove view's CPU cost: ``gizmo-host run`` at a 50 Hz world, with and without it.

Three ``gizmo-host run`` processes run side by side, started together and fed alike (so load
on a shared machine falls on all three): each reads the board's 30 results/s from its own pty
and CopterSim's 100 Hz states over UDP (its own CopterID), with ``[world] rate_hz = 50``:

- ``run``: no ``--foxglove`` (the baseline, measured in the same run);
- ``foxglove idle``: ``--foxglove`` with no viewer connected;
- ``foxglove viewer``: ``--foxglove`` with one viewer (a ``foxglove.sdk.v1`` client in this
  process) subscribed to every topic and reading everything.

Reported per process: on-CPU time of all its threads (/proc/PID/task/*/schedstat) as % of one
core over each window, the median over the rounds, and each ``--foxglove`` process against the
baseline (ratio and difference in points). About 30 s (BENCH_WINDOW_S, BENCH_ROUNDS).
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from serial_link import cpu_ns  # noqa: E402 - the bench's own CPU reader

from gizmo_host.rigs.board import BoardModel, PtyBoard  # noqa: E402 - after the sys.path line
from rfly_link import ports  # noqa: E402
from tests.support.coptersim import free_copter_id, state_datagram  # noqa: E402
from tests.support.foxglove_client import connect  # noqa: E402

WINDOW_S = float(os.environ.get("BENCH_WINDOW_S", "6"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
WARMUP_S = 3.0  # the device clock locks after about 1 s: PROCEED, targets drawn
VARIANTS = ("run", "foxglove idle", "foxglove viewer")
CONFIG = """[verdict]
select = "type=DETECTOR,id=11"
[publish]
stats_interval_s = 1
[camera]
width_px = 640
height_px = 480
hfov_deg = 90.0
mount_rpy_deg = [0.0, -90.0, 0.0]
[world]
rate_hz = 50
[rflysim]
copter_id = {copter_id}
"""


class Feed(threading.Thread):
    """The board's frames into every pty (30 Hz) and states to every CopterID (100 Hz)."""

    def __init__(self, boards: list[tuple[PtyBoard, int]]) -> None:
        super().__init__(daemon=True)
        self.boards = boards
        self.stop = threading.Event()

    def run(self) -> None:
        models = [BoardModel(live_clock=True, period_ms=33) for _ in self.boards]
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        start = time.monotonic()
        tick = 0
        while not self.stop.is_set():
            sim_time_s = 500.0 + time.monotonic() - start
            for (board, copter_id), model in zip(self.boards, models, strict=True):
                sock.sendto(
                    state_datagram(copter_id, sim_time_s),
                    ("127.0.0.1", ports.coptersim_state_port(copter_id)),
                )
                if tick % 3 == 0:
                    board.write(model.next_frame(x=0, y=0, w=100, h=100))
            tick += 1
            time.sleep(max(0.0, start + tick * 0.01 - time.monotonic()))
        sock.close()


Started = tuple[subprocess.Popen[bytes], PtyBoard, int]


def start_run(workdir: Path, name: str, foxglove: bool) -> Started:
    """``gizmo-host run`` on a pty of its own (plugged here), for a CopterID of its own."""
    copter_id = free_copter_id()
    stem = name.replace(" ", "_")
    config = workdir / f"{stem}.toml"
    config.write_text(CONFIG.format(copter_id=copter_id))
    link = str(workdir / f"{stem}.pty")
    board = PtyBoard(link)
    board.plug()
    args = [sys.executable, "-m", "gizmo_host.cli", "run", "--serial", link]
    args += ["--config", str(config), "--transport-delay-ms", "0", "--no-stdout"]
    if foxglove:
        args += ["--foxglove", "127.0.0.1:0"]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, cwd=ROOT)
    return proc, board, copter_id


def server_url(proc: subprocess.Popen[bytes]) -> str:
    assert proc.stderr is not None
    while line := proc.stderr.readline().decode():
        found = re.search(r"foxglove: serving (ws://\S+)", line)
        if found:
            return found.group(1)
    raise RuntimeError("gizmo-host run --foxglove did not say where it serves")


def viewer(url: str, stop: threading.Event, counts: dict[str, int]) -> None:
    """A viewer subscribed to every topic, reading everything until ``stop``."""

    async def read() -> None:
        async with connect(url) as client:
            await client.read_advertisements({"/gizmo/world"}, 5.0)
            await client.subscribe(sorted(client.by_topic()))
            while not stop.is_set():
                await client.read_one(5.0)
                for topic, received in client.messages.items():
                    counts[topic] = counts.get(topic, 0) + len(received)
                    received.clear()

    asyncio.run(read())


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="gizmo-bench-foxglove-") as tmp:
        workdir = Path(tmp)
        started = [start_run(workdir, name, name != "run") for name in VARIANTS]
        procs = dict(zip(VARIANTS, (p for p, _, _ in started), strict=True))
        feed = Feed([(board, copter_id) for _, board, copter_id in started])
        stop = threading.Event()
        counts: dict[str, int] = {}
        reader = None
        try:
            for _, board, _ in started:
                deadline = time.monotonic() + 10
                while not board.reader_attached() and time.monotonic() < deadline:
                    time.sleep(0.01)
            server_url(procs["foxglove idle"])
            url = server_url(procs["foxglove viewer"])
            feed.start()
            reader = threading.Thread(target=viewer, args=(url, stop, counts), daemon=True)
            reader.start()
            time.sleep(WARMUP_S)
            rounds: dict[str, list[float]] = {name: [] for name in VARIANTS}
            for _ in range(ROUNDS):
                before = {n: (cpu_ns(p.pid), time.monotonic_ns()) for n, p in procs.items()}
                time.sleep(WINDOW_S)
                for name, proc in procs.items():
                    cpu0, wall0 = before[name]
                    rounds[name].append(
                        100.0 * (cpu_ns(proc.pid) - cpu0) / (time.monotonic_ns() - wall0)
                    )
        finally:
            stop.set()
            feed.stop.set()
            for proc in procs.values():
                proc.terminate()
            for proc in procs.values():
                proc.wait(10)
            for _, board, _ in started:
                board.close()
    base = median(rounds["run"])
    print(
        f"gizmo-host run, world at 50 Hz, board 30 results/s, states 100 Hz; {ROUNDS} rounds "
        f"of {WINDOW_S:g} s, 3 processes side by side, {os.cpu_count()} CPUs"
    )
    print(f"{'':18} {'CPU % of a core (median)':>26} {'rounds':>24} {'vs run':>18}")
    for name in VARIANTS:
        value = median(rounds[name])
        each = " ".join(f"{v:5.2f}" for v in rounds[name])
        versus = "" if name == "run" else f"x{value / base:.2f} ({value - base:+.2f} pt)"
        print(f"{name:18} {value:26.2f} {each:>24} {versus:>18}")
    world = counts.get("/gizmo/world", 0)
    print(f"the viewer received {world} world messages, {sum(counts.values())} in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
