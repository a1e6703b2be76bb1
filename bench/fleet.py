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
    feed = watch.feed  # the view's own work, in both cases: parse, judge, report changes

    def on_line(vehicle: str, payload: bytes, rx_ns: int, rx_wall_ns: int) -> str | None:
        fed = feed(f"gizmo/{vehicle}/world", payload, rx_ns)
        message = json.loads(payload)  # the view parsed it too; here for seq and wall_ns
        seqs.setdefault(vehicle, set()).add(message["seq"])
        if lo * 1e9 <= message["wall_ns"] <= hi * 1e9:
            latencies.append(rx_wall_ns - message["wall_ns"])
        return fed

    loop = asyncio.get_running_loop()
    session = None
    if transport == "zenoh":
        from gizmo_host.zenoh.config import ZenohConfig
        from gizmo_host.zenoh.session import open_session

        session = open_session(ZenohConfig(enabled=True, mode="client", connect=(where,)))
        original = watch.feed

        def timed(key_expr: str, payload: bytes, rx_ns: int) -> str | None:
            # Zenoh's path: stamped on its thread, drained on the loop, changes reported there
            return on_line(key_expr.split("/")[1], payload, rx_ns, rx_ns + wall_offset)

        wall_offset = time.time_ns() - time.monotonic_ns()
        watch.feed = timed  # type: ignore[method-assign]
        feed = original
        watch.start(session)
    else:
        host, port = where.rsplit(":", 1)

        class Datagrams(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
                rx_ns, rx_wall = time.monotonic_ns(), time.time_ns()
                vehicle = on_line(f"udp{addr[1]}", data, rx_ns, rx_wall)
                watch._report_changes(None if vehicle is None else {vehicle})

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
    args = parser.parse_args()
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
