"""Benchmark: a fleet of hosts publishing world lines at 50 Hz, over Zenoh (through one router)
and, in the same run, over today's UDP sink, to one fleet view.

Run: ``.venv/bin/python bench/fleet.py [--sizes 5,10,20,40] [--seconds S]``

Each vehicle is the host's real output (``ZenohOutput``: its own session, bounded queue and
thread, congestion control DROP; or ``UdpOutput``) fed a 1.6 kB world line (three targets and
a vehicle) at 50 Hz, each stamped with ``wall_ns`` as it is made; the vehicles are spread over
``WORKERS`` processes (40 interpreters would not start on this box in a bench's time), and
"CPU per host" is those processes' CPU divided by the vehicles. The fleet
view is a process running the real ``FleetWatch`` and ``FleetView`` (JSON parsing, the
fresh/stale judgement, change reports); over UDP the same view is fed by a datagram endpoint.
The router is a zenoh-python session in router mode (``open_router``: its queue towards each
peer at Zenoh's maximum), a process of its own.

Reported per fleet size and transport:

- latency from the line's ``wall_ns`` (made and handed to the output) to its arrival in the
  view's process (one machine, one clock), p50 and p99;
- CPU (% of one core, user + system, from /proc over the measured window) of the view, of
  the router, and per host (mean of the vehicle processes);
- loss: lines a vehicle sent that the view never received (in brackets: of those, the ones
  its own bounded queue dropped; the rest were dropped on the way, by congestion control);
- growth: the view's CPU per vehicle relative to the smallest fleet (1.0 = linear).

``--scale 500,5000`` instead runs the real ``gizmo-host fleet --json`` (a process) against
that many vehicles at ``--rate-hz`` (default 2) each, published from ``WORKERS`` processes
through a router process, and reads its rows: rows/s, the vehicles printed in each 1-s window,
the gap between a vehicle's rows, the view's CPU and memory; the baseline, in the same run on
the same samples, is a Zenoh subscriber that only takes each sample's bytes.

The machine is shared (2 cores, other sessions): absolute numbers move between runs; the
comparison is within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gizmo_host.rigs.free_ports import free_ports

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RATE_HZ = 50
WARMUP_S = 2.0  # sessions connect, processes settle: not measured
TAIL_S = 1.0  # the view waits this long for the workers' last lines
STARTUP_S = 0.1  # per vehicle: its session (Python and the imports: the 3 s before)
WORKERS = 5  # processes the vehicles are spread over (each vehicle its own output, session)
CLK_TCK = os.sysconf("SC_CLK_TCK")


def world_line(vehicle: str, seq: int, host_ns: int, wall_ns: int) -> bytes:
    """A world line of the usual size: a vehicle, a PROCEED target, two HOLD ones."""
    from gizmo_host.publish.lines import encode_line

    target = {
        "key": "1:5:11", "result_type": 5, "id": 11, "label": "PEDESTRIAN", "confidence": 87,
        "tracked": True, "capture_ns": host_ns - 30_000_000, "age_ms": 30.125,
        "verdict": "PROCEED", "reasons": [], "bearing_camera": [0.912, 0.012, 0.41],
        "bearing_ned": [0.601, 0.799, 0.0123], "azimuth_deg": 53.05, "elevation_deg": -0.7,
        "angular_size_deg": [2.1, 3.4], "position_ned_m": [16.02, 27.98, 0.0],
        "range_m": 10.02, "range_source": "ground_plane",
    }  # fmt: skip
    hold = {**target, "key": "1:6:12", "verdict": "HOLD", "reasons": ["stale"], "id": 12}
    lost = {**hold, "key": "1:6:13", "id": 13, "reasons": ["lost"]}
    for name in ("bearing_camera", "bearing_ned", "azimuth_deg", "elevation_deg",
                 "angular_size_deg", "position_ned_m", "range_m", "range_source"):  # fmt: skip
        hold[name] = lost[name] = None
    return encode_line({
        "type": "world", "format_version": 1, "seq": seq, "host_ns": host_ns, "wall_ns": wall_ns,
        "valid_until_ns": host_ns + 200_000_000, "verdict": "PROCEED", "reasons": [],
        "selected": "1:5:11",
        "vehicle": {"copter_id": 1, "time_ns": host_ns - 5_000_000, "age_ms": 5.0, "epoch": 1,
                    "position_ned_m": [10.01, 20.02, -30.03],
                    "quaternion_wxyz": [0.9238795, 0.0, 0.0, 0.3826834],
                    "velocity_ned_m_s": [1.01, -0.5, 0.02]},
        "sources": {name: {"state": "OK", "age_ms": 12.5}
                    for name in ("vision", "pose", "imu", "range", "link", vehicle)},
        "targets": [target, hold, lost],
    })  # fmt: skip


# -- the processes -----------------------------------------------------------------------


async def worker(
    transport: str, vehicles: list[str], where: str, seconds: float, start_at: float
) -> None:
    """Hosts: for each vehicle its own output (its own session and thread over Zenoh), a
    world line every 1/RATE_HZ into each, all on one loop."""
    from gizmo_host.app.outputs import UdpOutput

    outputs: list[Any] = []
    for vehicle in vehicles:
        if transport == "zenoh":
            from gizmo_host.zenoh.config import ZenohConfig
            from gizmo_host.zenoh.sink import ZenohOutput

            config = ZenohConfig(enabled=True, mode="client", connect=(where,), vehicle=vehicle)
            outputs.append(ZenohOutput(config))
        else:
            outputs.append(UdpOutput(where))
    for output in outputs:
        await output.start()
    await asyncio.sleep(max(0.0, start_at - time.time()))
    period_ns = 1_000_000_000 // RATE_HZ
    start = time.monotonic_ns()
    end = start + round(seconds * 1e9)
    seq = 0
    next_ns = start
    while next_ns < end:
        seq += 1
        for vehicle, output in zip(vehicles, outputs, strict=True):
            output.send(world_line(vehicle, seq, time.monotonic_ns(), time.time_ns()))
        next_ns += period_ns
        await asyncio.sleep(max(0.0, (next_ns - time.monotonic_ns()) / 1e9))
    for output in outputs:
        await output.close()
    dropped = sum(o.stats()["dropped"] for o in outputs)
    print(json.dumps({"sent": seq * len(outputs), "dropped": dropped}), flush=True)


async def view(
    transport: str, where: str, seconds: float, start_at: float, window: tuple[float, float]
) -> None:
    """The fleet view: FleetWatch fed by Zenoh or by UDP datagrams; latencies per line."""
    from gizmo_host.zenoh.fleet import FleetView
    from gizmo_host.zenoh.watch import FleetWatch

    latencies: list[int] = []
    seqs: dict[str, set[int]] = {}
    reports = [0]
    watch = FleetWatch(FleetView(250_000_000), lambda rows: reports.__setitem__(0, reports[0] + 1))
    lo, hi = window  # wall-clock times: the lines made in the measured window count
    offer = watch.offer  # the view's own work, in both cases: hand-off, parse, judge, report

    def on_line(key: str, who: str, payload: bytes | None, rx_ns: int, rx_wall_ns: int) -> None:
        offer(key, who, payload, rx_ns, rx_wall_ns)
        assert payload is not None
        message = json.loads(payload)  # the view parsed it too; here for seq and wall_ns
        seqs.setdefault(key.split("/")[1], set()).add(message["seq"])
        if lo * 1e9 <= message["wall_ns"] <= hi * 1e9:
            latencies.append(rx_wall_ns - message["wall_ns"])

    loop = asyncio.get_running_loop()
    session = None
    if transport == "zenoh":
        from gizmo_host.zenoh.config import ZenohConfig
        from gizmo_host.zenoh.session import open_session

        session = open_session(ZenohConfig(enabled=True, mode="client", connect=(where,)))
        watch.offer = on_line  # type: ignore[method-assign]  # Zenoh's path: its threads
        watch.start(session)
    else:
        host, port = where.rsplit(":", 1)

        class Datagrams(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
                rx_ns, rx_wall = time.monotonic_ns(), time.time_ns()
                on_line(f"gizmo/udp{addr[1]}/world", "udp", data, rx_ns, rx_wall)
                watch.drain()

        transport_, _ = await loop.create_datagram_endpoint(Datagrams, local_addr=(host, int(port)))
        sock = transport_.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    await asyncio.sleep(max(0.0, start_at - time.time()) + seconds)
    if session is not None:
        watch.stop()
        session.close()
    latencies.sort()
    print(json.dumps({
        "received": {v: len(s) for v, s in seqs.items()},
        "p50_ms": latencies[len(latencies) // 2] / 1e6 if latencies else None,
        "p99_ms": latencies[int(len(latencies) * 0.99)] / 1e6 if latencies else None,
        "latencies": len(latencies), "reports": reports[0], "watch": watch.stats(),
    }), flush=True)  # fmt: skip


def router(endpoint: str, seconds: float) -> None:
    from gizmo_host.zenoh.session import open_router

    session = open_router(endpoint)
    time.sleep(seconds)
    session.close()


# -- the orchestration -------------------------------------------------------------------


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def _spawn(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, __file__, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )


def measure(transport: str, vehicles: int, seconds: float) -> dict[str, Any]:
    total = WARMUP_S + seconds + TAIL_S
    if transport == "zenoh":
        where = f"tcp/127.0.0.1:{free_ports(1, 'tcp')[0]}"
        routing = _spawn("--router", where, "--seconds", "3600")
        time.sleep(0.5)
    else:
        where = f"127.0.0.1:{free_ports()[0]}"
        routing = None
    # Every process starts (imports, connects) before start_at; the window is absolute time.
    start_at = time.time() + 3.0 + STARTUP_S * vehicles
    lo, hi = start_at + WARMUP_S, start_at + WARMUP_S + seconds
    viewer = _spawn(*("--view", transport, "--where", where, "--start-at", str(start_at)),
                    *("--seconds", str(total + 1.5), "--window", f"{lo},{hi}"))  # fmt: skip
    names = [f"uav{i}" for i in range(1, vehicles + 1)]
    groups = [names[i::WORKERS] for i in range(min(WORKERS, vehicles))]
    workers = [
        _spawn(
            *("--worker", transport, "--vehicle", ",".join(group), "--where", where),
            *("--seconds", str(WARMUP_S + seconds), "--start-at", str(start_at)),
        )
        for group in groups
    ]
    procs = [viewer, *workers, *([routing] if routing else [])]
    time.sleep(max(0.0, lo - time.time()))
    before = {p.pid: _cpu_s(p.pid) for p in procs}
    time.sleep(max(0.0, hi - time.time()))
    after = {p.pid: _cpu_s(p.pid) for p in procs}
    cpu = {pid: 100 * (after[pid] - before[pid]) / seconds for pid in before}
    sent = host_dropped = 0
    for proc in workers:
        out, _ = proc.communicate(timeout=60)
        report = json.loads(out.splitlines()[-1])
        sent += report["sent"]
        host_dropped += report["dropped"]
    out, _ = viewer.communicate(timeout=60)
    result = json.loads(out.splitlines()[-1])
    if routing is not None:
        routing.terminate()
        routing.wait(10)
    received = sum(result["received"].values())
    return {
        "transport": transport,
        "vehicles": vehicles,
        "p50_ms": result["p50_ms"],
        "p99_ms": result["p99_ms"],
        "view_cpu": cpu[viewer.pid],
        "host_cpu": sum(cpu[p.pid] for p in workers) / vehicles,
        "router_cpu": None if routing is None else cpu[routing.pid],
        "sent": sent,
        "lost": sent - received,
        "host_dropped": host_dropped,  # of "lost": dropped by the hosts' own bounded queues
        "samples": result["latencies"],
    }


# -- the fleet at scale: gizmo-host fleet --json itself, beside a null subscriber ----------


def scale_publisher(where: str, vehicles: list[str], rate_hz: float, seconds: float) -> None:
    """Many vehicles from one session: each a world line every 1/rate_hz, spread evenly."""
    from gizmo_host.zenoh.config import ZenohConfig
    from gizmo_host.zenoh.session import open_session

    session = open_session(ZenohConfig(enabled=True, mode="client", connect=(where,)))
    slices = 20  # per period: the puts are paced in slices of the fleet
    step = max(1, len(vehicles) // slices)
    period_s = 1 / rate_hz
    start = time.monotonic()
    seq = sent = 0
    while time.monotonic() < start + seconds:
        seq += 1
        for first in range(0, len(vehicles), step):
            due = start + (seq - 1) * period_s + first / len(vehicles) * period_s
            time.sleep(max(0.0, due - time.monotonic()))
            for vehicle in vehicles[first : first + step]:
                line = world_line(vehicle, seq, time.monotonic_ns(), time.time_ns())
                session.put(f"gizmo/{vehicle}/world", line, timestamp=session.new_timestamp())
                sent += 1
    session.close()  # type: ignore[no-untyped-call]
    print(json.dumps({"sent": sent}), flush=True)


def null_subscriber(where: str, seconds: float) -> None:
    """The baseline: the same samples into a callback that only takes their bytes."""
    from gizmo_host.zenoh.config import ZenohConfig
    from gizmo_host.zenoh.session import open_session

    session = open_session(ZenohConfig(enabled=True, mode="client", connect=(where,)))
    count = [0]

    def take(sample: Any) -> None:
        count[0] += len(sample.payload.to_bytes()) > 0 and str(sample.key_expr) != ""

    subscriber = session.declare_subscriber("gizmo/*/world", take)
    time.sleep(seconds)
    subscriber.undeclare()
    session.close()  # type: ignore[no-untyped-call]
    print(json.dumps({"samples": count[0]}), flush=True)


def _memory_kb(pid: int) -> dict[str, int]:
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return {k: int(fields[k].split()[0]) for k in ("VmRSS", "VmHWM")}


def scale(vehicles: int, rate_hz: float, seconds: float, warmup_s: float = 6.0) -> dict[str, Any]:
    """``gizmo-host fleet --json`` for ``vehicles`` at ``rate_hz`` each, its rows read here."""
    import threading

    where = f"tcp/127.0.0.1:{free_ports(1, 'tcp')[0]}"
    total = warmup_s + seconds + 1
    routing = _spawn("--router", where, "--seconds", "3600")
    time.sleep(0.5)
    names = [f"uav{i}" for i in range(1, vehicles + 1)]
    pace = ("--where", where, "--rate-hz", str(rate_hz), "--seconds", str(total))
    workers = [_spawn("--scale-worker", ",".join(names[i::WORKERS]), *pace) for i in range(WORKERS)]
    baseline = _spawn("--null", "--where", where, "--seconds", str(total))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    fleet = subprocess.Popen(
        [sys.executable, "-m", "gizmo_host.cli", "fleet", "--json", "--mode", "client",
         "--connect", where], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    printed: list[tuple[float, str]] = []

    def read() -> None:
        assert fleet.stdout is not None
        for line in fleet.stdout:
            printed.append((time.monotonic(), json.loads(line)["vehicle"]))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(warmup_s)
    lo = time.monotonic()
    before = {p.pid: _cpu_s(p.pid) for p in (fleet, baseline, routing, *workers)}
    memory_lo = _memory_kb(fleet.pid)
    time.sleep(seconds)
    hi = time.monotonic()
    after = {p.pid: _cpu_s(p.pid) for p in (fleet, baseline, routing, *workers)}
    memory_hi = _memory_kb(fleet.pid)
    cpu = {pid: 100 * (after[pid] - before[pid]) / (hi - lo) for pid in before}
    fleet.terminate()
    fleet.wait(10)
    reader.join(10)
    assert fleet.stderr is not None
    summary = json.loads(fleet.stderr.read().splitlines()[-1])
    sent = sum(json.loads(p.communicate(timeout=60)[0].splitlines()[-1])["sent"] for p in workers)
    baseline.communicate(timeout=60)
    routing.terminate()
    routing.wait(10)
    window = [(t, v) for t, v in printed if lo <= t < hi]
    seconds_seen = [{v for t, v in window if lo + k <= t < lo + k + 1} for k in range(int(hi - lo))]
    last: dict[str, float] = {}
    gaps = []
    for t, v in printed:
        if lo <= t < hi and v in last:
            gaps.append(t - last[v])
        last[v] = t
    gaps.sort()
    gap = gaps[-1] if gaps else float("nan")
    over = sum(g > 1.0 for g in gaps) / max(1, len(gaps))
    return {
        "vehicles": vehicles, "lines_per_s": vehicles * rate_hz, "sent": sent,
        "rows_per_s": len(window) / (hi - lo), "view_cpu": cpu[fleet.pid],
        "baseline_cpu": cpu[baseline.pid], "router_cpu": cpu[routing.pid],
        "min_vehicles_per_s": min(len(s) for s in seconds_seen), "max_gap_s": gap,
        "p99_gap_s": gaps[int(len(gaps) * 0.99)] if gaps else float("nan"), "gaps_over_1s": over,
        "rss_mb": (memory_lo["VmRSS"] / 1024, memory_hi["VmRSS"] / 1024),
        "peak_mb": memory_hi["VmHWM"] / 1024, "view": summary["fleet"],
    }  # fmt: skip


def print_scale(rows: list[dict[str, Any]]) -> None:
    print("| vehicles | lines/s in | rows/s out | vehicles printed per 1-s window (min) | "
          "gap between a vehicle's rows p99 / max s (share > 1 s) | view CPU | "
          "null subscriber CPU | ratio | view RSS MB (start-end of window, peak) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = r["view_cpu"] / r["baseline_cpu"] if r["baseline_cpu"] else float("nan")
        print(f"| {r['vehicles']} | {r['lines_per_s']:.0f} | {r['rows_per_s']:.0f} | "
              f"{r['min_vehicles_per_s']} | {r['p99_gap_s']:.2f} / {r['max_gap_s']:.2f} "
              f"({100 * r['gaps_over_1s']:.2f}%) | {r['view_cpu']:.1f} | "
              f"{r['baseline_cpu']:.1f} | {ratio:.1f} | {r['rss_mb'][0]:.0f}-"
              f"{r['rss_mb'][1]:.0f}, {r['peak_mb']:.0f} |")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5,10,20,40")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--worker", choices=["zenoh", "udp"])
    parser.add_argument("--view", choices=["zenoh", "udp"])
    parser.add_argument("--router")
    parser.add_argument("--vehicle")
    parser.add_argument("--where")
    parser.add_argument("--window", default="0,0")
    parser.add_argument("--start-at", type=float, default=0.0)
    parser.add_argument("--scale", help="fleet sizes for gizmo-host fleet --json, e.g. 500,5000")
    parser.add_argument("--rate-hz", type=float, default=2.0, help="with --scale: per vehicle")
    parser.add_argument("--scale-worker")
    parser.add_argument("--null", action="store_true")
    args = parser.parse_args()
    if args.scale_worker:
        scale_publisher(args.where, args.scale_worker.split(","), args.rate_hz, args.seconds)
        return 0
    if args.null:
        null_subscriber(args.where, args.seconds)
        return 0
    if args.scale:
        rows = [scale(int(n), args.rate_hz, args.seconds) for n in args.scale.split(",")]
        for row in rows:
            print(json.dumps(row), file=sys.stderr, flush=True)
        print(f"gizmo-host fleet --json, each vehicle a {len(world_line('uav1', 1, 0, 0))} B "
              f"world line at {args.rate_hz:g} Hz; {args.seconds:g} s measured; CPU in % of "
              "one core; the baseline is a Zenoh subscriber that only takes each sample's "
              "bytes, on the same samples in the same run\n")  # fmt: skip
        print_scale(rows)
        return 0
    if args.worker:
        vehicles = args.vehicle.split(",")
        asyncio.run(worker(args.worker, vehicles, args.where, args.seconds, args.start_at))
        return 0
    if args.view:
        lo, hi = (float(x) for x in args.window.split(","))
        asyncio.run(view(args.view, args.where, args.seconds, args.start_at, (lo, hi)))
        return 0
    if args.router:
        router(args.router, args.seconds)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for size in sizes:
        for transport in ("zenoh", "udp"):
            rows.append(measure(transport, size, args.seconds))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(f"{RATE_HZ} Hz world lines ({len(world_line('uav1', 1, 0, 0))} B) per vehicle, "
          f"{args.seconds:g} s measured per row; CPU in % of one core\n")  # fmt: skip
    print(
        "| vehicles | transport | p50 ms | p99 ms | view CPU | CPU per host | router CPU "
        "| sent | lost | view CPU per vehicle vs smallest |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    base: dict[str, float] = {}
    for row in rows:
        per_vehicle = row["view_cpu"] / row["vehicles"]
        base.setdefault(row["transport"], per_vehicle)
        growth = per_vehicle / base[row["transport"]] if base[row["transport"]] else float("nan")
        router_cpu = "-" if row["router_cpu"] is None else f"{row['router_cpu']:.1f}"
        print(f"| {row['vehicles']} | {row['transport']} | {row['p50_ms']:.2f} | "
              f"{row['p99_ms']:.2f} | {row['view_cpu']:.1f} | {row['host_cpu']:.2f} | "
              f"{router_cpu} | {row['sent']} | {row['lost']} ({row['host_dropped']}) | "
              f"{growth:.2f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
