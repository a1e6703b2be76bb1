#!/usr/bin/env python3
"""Live link cost and latency: ``gizmo-host run`` on a pty against a minimal reader.

Three streams are written into a pseudo-terminal by a paced writer thread, as a UART would
deliver them (the bytes due every millisecond): the board's usual 30 results/s, and the
saturated line at 115200 and at 921600 baud. Each is read, alternately on the same stream, by:

- the real ``gizmo-host run --serial PTY`` with its default outputs (JSON Lines on stdout);
- a minimal reader written here (``MINIMAL_READER``): blocking reads, find ``A5 47``, check the
  CRC, unpack, print one compact JSON line per frame (flushed once per read). It is the
  simplest program that does the same job, and the anchor the issue 31 goals are set against.

A consumer thread reads each reader's stdout pipe. Reported, as medians over the runs:

- each reader's CPU use as % of one core (on-CPU time of all its threads from
  /proc/PID/task/*/schedstat, from the end of the warm-up until its last line arrived) and
  their ratio, per run (the two runs of a pair are back to back, so load drifts little);
- p50 / p99 latency from the write of a frame's last byte to the consumer reading its line,
  for both readers (worst run);
- lines missing at the end of each run (a reader that falls behind ends with fewer).

Targets (issue 31): CPU ratio <= 2 at 30 results/s and <= 1.5 on the saturated lines, p99 <=
2 ms at every rate, nothing lost. The service runs on the event loop ``gizmo-host run`` picks
by default (uvloop when installed; BENCH_EVENT_LOOP=asyncio for the standard loop);
BENCH_OUTPUT=socket reads its Unix socket instead of stdout (``--no-stdout``); a busy line is
written every millisecond (BENCH_CHUNK_MS: every 10 ms delivers 26 frames a write at 921600,
as a USB adapter's latency timer or a stalled writer would); BENCH_HOST_ROOT runs another
checkout's ``gizmo-host`` (a before figure); BENCH_HOST_ARGS adds flags to its command line
(``--wakeup-slice-us 0``: the kernel's own slice); BENCH_SPIN=N runs N processes spinning on
the CPU throughout (a busy machine). Runs in about 2 min (BENCH_WINDOW_S, BENCH_REPEATS change
that).

``--compare REF`` measures a change instead: this tree and git ``REF`` (checked out into a
temporary worktree) run side by side, each in its own process with its own pty, writer and
consumer, started together on one stream (``--stream``), for ``--rounds`` rounds. Load on
the shared VM then falls on both alike, so the paired difference is steady to about 0.1 point
of CPU where consecutive runs differ by ±20%.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from statistics import mean, median, stdev

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _git_ref as git_ref  # noqa: E402 - after the sys.path lines

from gizmo_core.native import build_kind  # noqa: E402
from gizmo_host.live.event_loop import resolve as resolve_event_loop  # noqa: E402
from gizmo_host.rigs.board import PtyBoard  # noqa: E402 - after the sys.path line
from gizmo_host.wire.protocol import VisionResult  # noqa: E402

WINDOW_S = float(os.environ.get("BENCH_WINDOW_S", "4"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))  # an odd count: the median is a run
WARMUP_S = 1.0
DRAIN_S = 2.0  # after the last write, how long a reader has to deliver its last lines
EVENT_LOOP = os.environ.get("BENCH_EVENT_LOOP", "auto")  # auto: uvloop when installed
OUTPUT = os.environ.get("BENCH_OUTPUT", "stdout")  # or "socket"
HOST_ARGS = shlex.split(os.environ.get("BENCH_HOST_ARGS", ""))
SPIN = int(os.environ.get("BENCH_SPIN", "0"))
CHUNK_S = float(os.environ.get("BENCH_CHUNK_MS", "1")) / 1000  # a busy line's write period
HOST_ROOT = Path(os.environ.get("BENCH_HOST_ROOT", ROOT))  # the tree whose gizmo-host runs
TARGETS = {"30Hz": 2.0, "line-115200": 1.5, "line-921600": 1.5}  # CPU ratio, issue 31
P99_TARGET_MS = 2.0

# The simplest reader that does the job: no asyncio, no service, nothing but the frames.
MINIMAL_READER = r"""
import binascii, json, os, struct, sys, termios, tty
NAMES = ("version", "msg_type", "header_flags", "sequence", "payload_len", "source_id",
         "result_type", "result_sequence", "timestamp_ms", "confidence", "flags", "age_ms",
         "x", "y", "w", "h", "id", "aux")
BODY = struct.Struct("<BBBHHBBHIBBHhhhhhh")
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NOCTTY)
tty.setraw(fd)
termios.tcflush(fd, termios.TCIFLUSH)
print("ready", file=sys.stderr, flush=True)
out = sys.stdout
buf = b""
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    buf += data
    pos = 0
    while True:
        start = buf.find(b"\xa5\x47", pos)
        if start < 0:
            pos = len(buf) - 1 if buf.endswith(b"\xa5") else len(buf)
            break
        if len(buf) - start < 35:
            pos = start
            break
        if (buf[start + 2] != 1 or buf[start + 3] != 0x60
                or binascii.crc_hqx(buf[start + 2:start + 33], 0xFFFF)
                != buf[start + 33] | buf[start + 34] << 8):
            pos = start + 1
            continue
        fields = dict(zip(NAMES, BODY.unpack_from(buf, start + 2)))
        print(json.dumps(fields, separators=(",", ":")), file=out)
        pos = start + 35
    buf = buf[pos:]
    out.flush()
"""


def sleeps(pid: int) -> int:
    """Voluntary context switches of every thread of ``pid``: how often it blocked, i.e. woke."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def cpu_ns(pid: int) -> int:
    """On-CPU time of every thread of ``pid`` (ns precision, unlike /proc/PID/stat ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended
    return total


def build_stream(count: int, baud: int | None, rate_hz: float | None) -> tuple[bytes, list[float]]:
    """Frames and the time (s from start) each frame's last byte is due on the wire."""
    frames, due = [], []
    frame_s = 350 / baud if baud else 0.0
    for seq in range(count):
        end_s = (seq + 1) * frame_s if rate_hz is None else seq / rate_hz + 350 / 115200
        frames.append(
            VisionResult(
                sequence=seq % 65536,
                result_sequence=seq % 65536,
                source_id=1,
                result_type=5,
                id=11,
                flags=5,
                age_ms=12,
                timestamp_ms=10_000 + int(end_s * 1000),
            ).encode()
        )
        due.append(end_s)
    return b"".join(frames), due


class PacedWriter(threading.Thread):
    """Writes ``stream`` into the pty so that frame ``i`` completes at ``due[i]``."""

    def __init__(self, board: PtyBoard, stream: bytes, due: list[float]) -> None:
        super().__init__(daemon=True)
        self.board, self.stream, self.due = board, stream, due
        self.written_ns: list[int] = [0] * len(due)

    def run(self) -> None:
        start = time.monotonic()
        sent = frame = 0
        n = len(self.due)
        line_rate = n > 1 and self.due[1] - self.due[0] < 0.004
        while frame < n:
            now = time.monotonic() - start
            # Everything due by now: whole frames plus the leading part of the next one.
            while frame < n and self.due[frame] <= now:
                frame += 1
            end = frame * 35
            if line_rate and 0 < frame < n:
                # Line-rate stream: the next frame is partly on the wire already.
                part = (now - self.due[frame - 1]) / (self.due[frame] - self.due[frame - 1])
                end += int(35 * max(0.0, min(part, 1.0)))
            if end > sent:
                self.board.write(self.stream[sent:end])
                stamp = time.monotonic_ns()
                for i in range(sent // 35, end // 35):
                    self.written_ns[i] = stamp
                sent = end
            if not line_rate and frame < n:
                # Between frames of the 30/s stream the line is idle until the next frame is
                # due: sleep until then rather than wake every millisecond.
                time.sleep(max(0.0, self.due[frame] - (time.monotonic() - start)))
            else:
                time.sleep(CHUNK_S)  # mid-frame on a busy line: the bytes of each period


_RESULT_PREFIX, _SEQUENCE_KEY = b'{"type":"result"', b'"sequence":'


class Consumer(threading.Thread):
    """Reads a reader's output (a pipe, or a Unix socket after its ``version`` line),
    recording when each frame's line arrives. Only result lines count: a ``gizmo-host`` line
    starts with ``{"type":"result"``, a minimal reader's with ``{"version"``."""

    def __init__(self, read: callable, greeting: bool) -> None:
        super().__init__(daemon=True)
        self.read = read
        self.greeting = greeting
        self.received_ns: dict[int, int] = {}
        self.ready = threading.Event()
        self.last_ns = 0

    def run(self) -> None:
        buffer = b""
        if self.greeting:
            while b"\n" not in buffer:  # the version line: the server has registered us
                buffer += self.read()
            buffer = buffer.split(b"\n", 1)[1]
        self.ready.set()
        seq_base = 0
        last_seq = -1
        while True:
            try:
                data = self.read()
            except OSError:
                return
            if not data:
                return
            stamp = time.monotonic_ns()
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                # Only the sequence number is needed: a full json.loads per line would make
                # this thread a noticeable load on a 2-CPU machine, disturbing the readers.
                if not (line.startswith(_RESULT_PREFIX) or line.startswith(b'{"version"')):
                    continue
                start = line.index(_SEQUENCE_KEY) + len(_SEQUENCE_KEY)
                seq = int(line[start : line.index(b",", start)])
                if seq < last_seq - 30000:
                    seq_base += 65536
                last_seq = seq
                self.received_ns[seq_base + seq] = stamp
                self.last_ns = stamp


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def wait_line(stream, text: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        if text in line:
            return
    raise RuntimeError(f"did not see {text!r}")


def _host_command(link: str, baud: int, sock_path: str | None) -> list[str]:
    command = [sys.executable, "-m", "gizmo_host.cli", "run", "--serial", link, "--baud", str(baud)]
    if sock_path is not None:
        command += ["--socket", sock_path, "--no-stdout"]
    return [*command, "--event-loop", EVENT_LOOP, *HOST_ARGS]


def measure(
    kind: str,
    baud: int,
    stream: bytes,
    due: list[float],
    tmp: str,
    *,
    root: Path = ROOT,
    start_at: float | None = None,
) -> dict:
    """One run of ``kind`` (``host`` or ``minimal``) on its own pty. ``start_at``: the
    ``time.monotonic()`` at which to start writing (side-by-side runs)."""
    link = os.path.join(tmp, f"{kind}-{os.getpid()}")
    sock_path = os.path.join(tmp, f"{kind}.sock") if kind == "host" and OUTPUT == "socket" else None
    with PtyBoard(link) as board:
        if kind == "host":
            command = _host_command(link, baud, sock_path)
            ready = "SYNCING"
        else:
            command = [sys.executable, "-c", MINIMAL_READER, link]
            ready = "ready"
        proc = subprocess.Popen(
            command,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=False,
        )
        sock = None
        try:
            assert proc.stderr is not None and proc.stdout is not None
            errors = open(proc.stderr.fileno(), closefd=False)  # noqa: SIM115
            wait_line(errors, ready)
            threading.Thread(target=lambda: [None for _ in errors], daemon=True).start()
            if sock_path is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(sock_path)
                consumer = Consumer(lambda: sock.recv(1 << 16), greeting=True)
                threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
            else:
                out_fd = proc.stdout.fileno()
                consumer = Consumer(lambda: os.read(out_fd, 1 << 16), greeting=False)
            consumer.start()
            consumer.ready.wait()
            if start_at is not None:
                time.sleep(max(0.0, start_at - time.monotonic()))
            writer = PacedWriter(board, stream, due)
            writer.start()
            time.sleep(WARMUP_S)  # start-up work (imports, first frames) is not steady state
            first = int(WARMUP_S / (due[1] - due[0])) if len(due) > 1 else 0
            sleeps_before = sleeps(proc.pid)
            cpu_before, wall_before = cpu_ns(proc.pid), time.monotonic_ns()
            writer.join()
            wall_after = time.monotonic_ns()
            deadline = time.monotonic() + DRAIN_S
            while len(consumer.received_ns) < len(due) and time.monotonic() < deadline:
                time.sleep(0.005)
            cpu_after = cpu_ns(proc.pid)  # with what it took to deliver the last lines
            sleeps_after = sleeps(proc.pid)
        finally:
            proc.terminate()
            proc.wait(10)
            if sock is not None:
                sock.close()
    latencies_ms = [
        (consumer.received_ns[i] - writer.written_ns[i]) / 1e6
        for i in range(first, len(due))
        if i in consumer.received_ns
    ]
    frames_per_s = len(due) / due[-1]
    wall_s = (wall_after - wall_before) / 1e9
    return {
        "cpu_pct": 100.0 * (cpu_after - cpu_before) / (wall_after - wall_before),
        "sleeps_per_frame": (sleeps_after - sleeps_before) / wall_s / frames_per_s,
        "p50_ms": percentile(latencies_ms, 0.50),
        "p99_ms": percentile(latencies_ms, 0.99),
        "lost": len(due) - len(consumer.received_ns),
        "frames": len(due),
    }


SCENARIOS = [
    ("30Hz", 115200, 30.0),
    ("line-115200", 115200, None),
    ("line-921600", 921600, None),
]


def scenario_stream(baud: int, rate_hz: float | None) -> tuple[bytes, list[float]]:
    count = int(WINDOW_S * (rate_hz if rate_hz is not None else baud / 350))
    return build_stream(count, baud if rate_hz is None else None, rate_hz)


def main() -> int:
    print(
        f"gizmo-host run (output: {OUTPUT}, event loop {resolve_event_loop(EVENT_LOOP)}) "
        f"against a minimal reader, alternating on the same pty stream ({WINDOW_S:g} s per run, "
        f"{REPEATS} pairs, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
        f"{build_kind()}{f'; {SPIN} spinning' if SPIN else ''}"
        f"{f'; host flags {shlex.join(HOST_ARGS)}' if HOST_ARGS else ''})"
    )
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(SPIN)]
    try:
        return _measure_all()
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def _measure_all() -> int:
    print(
        f"{'stream':<13}{'frames':>7}  {'host CPU %':>10}{'min CPU %':>10}"
        f"  {'ratio (runs)':<30}{'median':>7}{'target':>7}"
        f"{'sleeps':>7}{'p50/p99 ms host':>17}{'p50/p99 ms min':>16}{'lost':>8}"
    )
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for name, baud, rate_hz in SCENARIOS:
            stream, due = scenario_stream(baud, rate_hz)
            hosts, minimals, ratios = [], [], []
            for i in range(REPEATS):  # alternating: the shared VM's load drifts between runs
                order = ("host", "minimal") if i % 2 == 0 else ("minimal", "host")
                got = {
                    kind: measure(kind, baud, stream, due, tmp, root=HOST_ROOT) for kind in order
                }
                hosts.append(got["host"])
                minimals.append(got["minimal"])
                ratios.append(got["host"]["cpu_pct"] / got["minimal"]["cpu_pct"])
            ratio = median(ratios)
            target = TARGETS[name]
            host_p99 = max(r["p99_ms"] for r in hosts)
            lost = sum(r["lost"] for r in hosts)
            min_lost = sum(r["lost"] for r in minimals)
            min_p99 = max(r["p99_ms"] for r in minimals)
            print(
                f"{name:<13}{len(due):>7}  {median(r['cpu_pct'] for r in hosts):>10.2f}"
                f"{median(r['cpu_pct'] for r in minimals):>10.2f}"
                f"  {'/'.join(f'{r:.2f}' for r in ratios):<30}{ratio:>7.2f}{'<=' + str(target):>7}"
                f"{median(r['sleeps_per_frame'] for r in hosts):>7.2f}"
                f"{max(r['p50_ms'] for r in hosts):>8.2f}/{host_p99:<8.2f}"
                f"{max(r['p50_ms'] for r in minimals):>7.2f}/{min_p99:<8.2f}"
                f"{lost:>4}/{min_lost:<3}"
            )
            ok &= lost == 0 and host_p99 <= P99_TARGET_MS and ratio <= target
    print("(CPU: % of one core, medians; ratio: host / minimal reader per pair of runs, then")
    print(" their median; sleeps: times the host blocked per frame; latency: last byte written")
    print(" -> line read from the reader's output, worst run; lost: lines missing, host/minimal)")
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


def measure_one(root: str, start_at: float, name: str) -> int:
    """One side of ``--compare``: print its measurement as JSON."""
    baud, rate_hz = next((baud, rate) for n, baud, rate in SCENARIOS if n == name)
    stream, due = scenario_stream(baud, rate_hz)
    with tempfile.TemporaryDirectory() as tmp:
        result = measure("host", baud, stream, due, tmp, root=Path(root), start_at=start_at)
    print(json.dumps(result))
    return 0


def compare(ref: str, rounds: int, name: str) -> int:
    """This tree against git ``ref``, side by side: paired CPU differences."""
    with git_ref.checkout(ROOT, ref) as other:
        if other is None:
            print(f"--compare needs a git checkout in which {ref!r} names a commit")
            return 2
        print(
            f"this tree against {ref}, side by side on the {name} stream "
            f"({WINDOW_S:g} s per round, {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.2f})"
        )
        print(
            f"{'round':<7}{'this CPU %':>11}{'ref CPU %':>11}{'this - ref':>12}{'this/ref':>10}"
            f"{'p99 this':>10}{'p99 ref':>9}{'lost':>6}"
        )
        diffs, ratios = [], []
        for i in range(rounds):
            start_at = time.monotonic() + 5.0  # both started, their readers synced
            sides = [str(ROOT), other] if i % 2 == 0 else [other, str(ROOT)]
            procs = {
                side: subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        "--one",
                        side,
                        "--start-at",
                        repr(start_at),
                        "--stream",
                        name,
                    ],
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for side in sides
            }
            got = {side: json.loads(proc.communicate()[0]) for side, proc in procs.items()}
            this, base = got[str(ROOT)], got[other]
            diffs.append(this["cpu_pct"] - base["cpu_pct"])
            ratios.append(this["cpu_pct"] / base["cpu_pct"])
            print(
                f"{i:<7}{this['cpu_pct']:>11.2f}{base['cpu_pct']:>11.2f}{diffs[-1]:>+12.2f}"
                f"{ratios[-1]:>10.2f}{this['p99_ms']:>10.2f}{base['p99_ms']:>9.2f}"
                f"{this['lost'] + base['lost']:>6}"
            )
    spread = stdev(diffs) if len(diffs) > 1 else float("nan")
    print(
        f"this - ref: mean {mean(diffs):+.2f}, median {median(diffs):+.2f}, "
        f"sd {spread:.2f} points of CPU; this / ref: median {median(ratios):.2f}"
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", metavar="REF", help="measure this tree against git REF")
    parser.add_argument("--rounds", type=int, default=6, help="side-by-side rounds (--compare)")
    parser.add_argument(
        "--stream",
        default="line-115200",
        choices=[name for name, _, _ in SCENARIOS],
        help="the stream (--compare)",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        sys.exit(measure_one(args.one, args.start_at, args.stream))
    sys.exit(compare(args.compare, args.rounds, args.stream) if args.compare else main())
