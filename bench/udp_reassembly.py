"""Benchmark: LiDAR frames over loopback UDP, received + reassembled + decoded, vs bare recv_into.

Run: ``.venv/bin/python bench/udp_reassembly.py [--frames N] [--window W]``

A sender process (no shared GIL) offers 200,000-point int16 LiDAR frames (1.6 MB, 27 fragments
of 60,000 B, 32-byte header) with credit-based flow control: at most ``--window`` frames are
unacknowledged, and the receiver acknowledges each frame when it is done with it. The offered
rate therefore adapts to the receiver and should lose nothing; any loss is reported.

Two receivers are measured in the same run, over the same datagrams, alternately:

* ``bare``: a ``recv_into`` loop into one preallocated buffer, acknowledging every 27 datagrams
  (the physical limit of this machine for this traffic);
* ``rfly_link``: ``UdpReceiver`` + ``SensorPipeline`` (reader thread, reassembly, decode to a
  float32 N×3 numpy array) delivering ``PointCloud`` events to an asyncio consumer.

Each round runs both receivers back to back and the verdict uses the median of the per-round
ratios, because other processes on a shared machine move both rates by a factor of two.

Targets: rfly_link >= 70 % of bare MB/s with zero reassembly loss; decode of one 200k-point int16
cloud to float32 <= 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing as mp
import os
import socket
import statistics
import struct
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rfly_link import config_json as config
from rfly_link import io as endpoints
from rfly_link import sensors
from rfly_link.reassembly import fragment_payload

POINTS = 200_000
FRAGMENT = 60_000
SCALE_M = 60.0
RCVBUF = 8 * 1024 * 1024


def lidar_payload() -> bytes:
    rng = np.random.default_rng(1)
    raw = rng.integers(-32767, 32768, size=(POINTS, 4)).astype(np.int16)
    return sensors.encode_point_cloud(sensors.PointLayout.PREFIX36_INT16_XYZS, raw, copter_id=1)


def pin(cpu: int | None) -> None:
    """Pin this process (and threads it creates later) to one CPU, when asked and possible."""
    if cpu is not None and hasattr(os, "sched_setaffinity") and cpu < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {cpu})


def sender_main(
    port: int, frames: int, window: int, credits: Connection, cpu: int | None = None
) -> None:
    pin(cpu)
    datagrams = [bytearray(d) for d in fragment_payload(lidar_payload(), fragment_size=FRAGMENT)]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, RCVBUF)
    in_flight = 0
    for frame_id in range(frames):
        while in_flight >= window:
            if not credits.poll(5.0):
                return  # the receiver gave up (loss): stop offering
            in_flight -= credits.recv()
        for d in datagrams:
            struct.pack_into("<i", d, 16, frame_id)
            sock.sendto(d, ("127.0.0.1", port))
        in_flight += 1
    sock.close()


SENDER_CPU: int | None = None


def start_sender(port: int, frames: int, window: int) -> tuple[mp.Process, Connection]:
    ctx = mp.get_context("spawn")  # never fork a process that runs a reader thread
    ours, theirs = ctx.Pipe()
    args = (port, frames, window, theirs, SENDER_CPU)
    proc = ctx.Process(target=sender_main, args=args, daemon=True)
    proc.start()
    return proc, ours


def give_credit(credits: Connection) -> None:
    with contextlib.suppress(OSError):  # the sender has finished and closed its end
        credits.send(1)


def read_rcvbuf_errors() -> int:
    return endpoints.read_udp_rcvbuf_errors() or 0


def run_bare(frames: int, window: int, per_frame: int) -> dict[str, float]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(2.0)
    buffer = bytearray(65535)
    errors0 = read_rcvbuf_errors()
    proc, credits = start_sender(sock.getsockname()[1], frames, window)
    total = frames * per_frame
    cpu0 = time.process_time()
    received = 0
    nbytes = 0
    t0 = t1 = 0.0
    try:
        while received < total:
            n = sock.recv_into(buffer)
            if received == 0:
                t0 = time.perf_counter()
            received += 1
            nbytes += n
            if received % per_frame == 0:
                give_credit(credits)
        t1 = time.perf_counter()
    except TimeoutError:
        t1 = time.perf_counter()
    cpu = time.process_time() - cpu0
    proc.join(10)
    sock.close()
    done = received // per_frame
    elapsed = max(t1 - t0, 1e-9)
    return {
        "frames": done,
        "lost_datagrams": total - received,
        "seconds": elapsed,
        "frames_s": (done - 1) / elapsed,
        "mb_s": (nbytes - nbytes / max(received, 1)) / elapsed / 1e6,
        "rcvbuf_errors": read_rcvbuf_errors() - errors0,
        "cpu_ms_per_frame": cpu / max(done, 1) * 1e3,
    }


async def run_pipeline_async(frames: int, window: int) -> dict[str, float]:
    sensor = config.VisionSensorConfig(
        index=0,
        seq_id=1,
        type_id=20,
        target_copter=1,
        target_mount_type=0,
        data_width=0,
        data_height=0,
        data_check_freq=10,
        camera_fov_deg=0.0,
        send_protocol=(1, 127, 0, 0, 1, 0, FRAGMENT, 1),
        sensor_pos_xyz_m=(0.0, 0.0, 0.0),
        has_eular_or_quat=True,
        eular_or_quat=0.0,
        sensor_ang_eular=(0.0, 0.0, 0.0),
        sensor_ang_quat=(1.0, 0.0, 0.0, 0.0),
        other_params=(SCALE_M,) + (0.0,) * 15,
    )
    (receiver,) = endpoints.vision_sensor_receivers([sensor], rcvbuf_bytes=RCVBUF)
    errors0 = read_rcvbuf_errors()
    async with receiver:
        proc, credits = start_sender(receiver.bound_port, frames, window)
        cpu0 = time.process_time()
        done = 0
        t0 = t1 = 0.0
        payload_bytes = 0
        try:
            while done < frames:
                event = await asyncio.wait_for(receiver.get(), 2.0)
                cloud = event.value
                assert cloud.xyz_m.shape == (POINTS, 3) and cloud.xyz_m.dtype == np.float32
                if done == 0:
                    t0 = time.perf_counter()
                else:
                    payload_bytes += len(event.frame.payload)
                done += 1
                give_credit(credits)
            t1 = time.perf_counter()
        except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
            t1 = time.perf_counter()
        cpu = time.process_time() - cpu0
        stats = receiver.stats
        proc.join(10)
    elapsed = max(t1 - t0, 1e-9)
    return {
        "frames": done,
        "lost_frames": frames - done,
        "seconds": elapsed,
        "frames_s": (done - 1) / elapsed,
        "mb_s": payload_bytes / elapsed / 1e6,
        "rcvbuf_errors": read_rcvbuf_errors() - errors0,
        "drops": stats.drops,
        "cpu_ms_per_frame": cpu / max(done, 1) * 1e3,
        "rcvbuf_granted": stats.rcvbuf_granted,
    }


def decode_time_ms(payload: bytes, repeats: int = 30) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        cloud = sensors.decode_sensor(20, payload, scale_m=SCALE_M)
        times.append((time.perf_counter() - t0) * 1e3)
        assert cloud.xyz_m.dtype == np.float32
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=250, help="frames per measured run")
    parser.add_argument("--window", type=int, default=2, help="unacknowledged frames allowed")
    parser.add_argument("--rounds", type=int, default=20, help="alternating bare/rfly_link rounds")
    parser.add_argument(
        "--no-pin",
        action="store_true",
        help="let the scheduler place sender and receiver (default: sender on CPU 1, "
        "receiver on CPU 0, the same for both receivers)",
    )
    args = parser.parse_args(argv)
    if not args.no_pin and (os.cpu_count() or 1) >= 2:
        global SENDER_CPU  # noqa: PLW0603  (a script-level setting read by start_sender)
        SENDER_CPU = 1
        pin(0)

    payload = lidar_payload()
    per_frame = len(fragment_payload(payload, fragment_size=FRAGMENT))
    print(
        f"LiDAR frame: {POINTS} points x 8 B int16 = {len(payload)} B payload, "
        f"{per_frame} datagrams of <= {FRAGMENT} B; window {args.window}; "
        f"rmem_max {Path('/proc/sys/net/core/rmem_max').read_text().strip()} B"
    )
    ratios, lost = [], 0
    best_bare = best_pipe = 0.0
    for round_ in range(args.rounds):
        bare = run_bare(args.frames, args.window, per_frame)
        pipe = asyncio.run(run_pipeline_async(args.frames, args.window))
        ratio = pipe["mb_s"] / bare["mb_s"]
        ratios.append(ratio)
        best_bare = max(best_bare, bare["mb_s"])
        best_pipe = max(best_pipe, pipe["mb_s"])
        lost += pipe["lost_frames"] + sum(pipe["drops"].values()) + bare["lost_datagrams"]
        print(
            f"round {round_ + 1}: bare recv_into {bare['frames_s']:7.1f} frames/s "
            f"{bare['mb_s']:7.1f} MB/s cpu {bare['cpu_ms_per_frame']:.2f} ms/frame "
            f"(lost datagrams {bare['lost_datagrams']}, RcvbufErrors +{bare['rcvbuf_errors']})"
        )
        print(
            f"         rfly_link      {pipe['frames_s']:7.1f} frames/s {pipe['mb_s']:7.1f} MB/s "
            f"cpu {pipe['cpu_ms_per_frame']:.2f} ms/frame (lost frames {pipe['lost_frames']}, "
            f"drops {pipe['drops']}, RcvbufErrors +{pipe['rcvbuf_errors']}) ratio {ratio:.0%}"
        )
    ratio = statistics.median(ratios)
    print(
        f"median ratio rfly_link / bare = {ratio:.0%} over {args.rounds} rounds (target >= 70%); "
        f"best rfly_link {best_pipe:.1f} MB/s, best bare {best_bare:.1f} MB/s; "
        f"reassembly loss {lost} (target 0)"
    )
    decode_ms = decode_time_ms(payload)
    print(f"decode 200k-point int16 cloud to float32: {decode_ms:.2f} ms median (target <= 5 ms)")
    ok = ratio >= 0.70 and lost == 0 and decode_ms <= 5.0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
