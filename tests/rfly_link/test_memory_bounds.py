"""``gizmo-host rfly`` as a real process under load: its memory (VmRSS) stays bounded.

Two cases from issue 10: stdout stalls (a pipe nobody reads) while 1.2 MB LiDAR frames keep
arriving, and a flood of fragments for frames that never complete. The bounds are generous
(they prove boundedness, not a size), but far below what unbounded queues reached.
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from gizmo_host.rigs.free_ports import free_ports
from rfly_link import sensors
from rfly_link.reassembly import fragment_payload
from tests.support.rfly_process import (
    final_stats,
    sensor_json,
    start_rfly,
    vm_rss_bytes,
    wait_rx_queue_below,
    wait_udp_bound,
    write_config,
)

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

MIB = 1024 * 1024
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def interrupt(proc: subprocess.Popen[bytes]) -> bytes:
    """End rfly as Ctrl-C does (it still prints its statistics); returns its stderr."""
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    return err


def test_stalled_stdout_keeps_memory_bounded_and_counts_the_drops(tmp_path: Path) -> None:
    port = free_ports()[0]
    config = write_config(tmp_path / "Config.json", sensor_json(port, width=1000, height=20))
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, F_SETPIPE_SZ, 4096)  # output stalls after a few lines
    proc = start_rfly(["--config", str(config)], stdout=write_fd)
    os.close(write_fd)
    raw = np.arange(200_000 * 3, dtype=np.int16).reshape(-1, 3)
    payload = sensors.encode_point_cloud(sensors.PointLayout.PREFIX36_INT16_XYZ, raw)
    datagrams = [bytearray(d) for d in fragment_payload(payload, fragment_size=60_000)]
    frames, limit = 120, 160 * MIB  # 144 MB of frames; unbounded queues exceed the limit
    try:
        wait_udp_bound(proc, port)
        base = peak = vm_rss_bytes(proc.pid)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            for frame_id in range(frames):
                for d in datagrams:
                    struct.pack_into("<i", d, 16, frame_id)
                    tx.sendto(d, ("127.0.0.1", port))
                wait_rx_queue_below(port, 4 * MIB)  # every frame is received, none lost
                peak = max(peak, vm_rss_bytes(proc.pid))
                if peak - base > limit:
                    break
            wait_rx_queue_below(port, 1)
        output: list[bytes] = []
        with open(read_fd, "rb") as out:  # finally read stdout: rfly resumes printing
            reader = threading.Thread(target=lambda: output.append(out.read()))
            reader.start()
            err = interrupt(proc)
            reader.join(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert peak - base <= limit, f"RSS grew {(peak - base) / MIB:.0f} MiB over {base / MIB:.0f}"
    (stats,) = final_stats(err)
    printed = output[0].count(b"\n")
    print(f"RSS {base / MIB:.0f} MiB -> peak {peak / MIB:.0f} MiB; {stats}")
    assert stats["events"] >= frame_id  # the last may still be in the pipeline
    assert stats["drops"]["queue_full"] > 0
    # Every event was printed or counted, but those queued when Ctrl-C came (8 + 2 at most).
    assert 0 <= stats["events"] - printed - stats["drops"]["queue_full"] <= 10
    assert b"not keeping up" in err  # reported while it happened, not only at the end


def test_a_flood_of_never_completing_frames_stays_within_the_budget(tmp_path: Path) -> None:
    port = free_ports()[0]
    config = write_config(tmp_path / "Config.json", sensor_json(port))  # 64 MiB budget
    proc = start_rfly(["--config", str(config)], stdout=subprocess.DEVNULL)
    rng = random.Random(10)
    body = bytes(60_000)
    limit = 64 * MIB + 40 * MIB  # the budget, plus slack for Python's own allocations
    try:
        wait_udp_bound(proc, port)
        base = peak = vm_rss_bytes(proc.pid)
        end = time.monotonic() + 2.0
        frame_id = sent = 0
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            while time.monotonic() < end and peak - base <= limit:
                # Sizes vary so that no buffer fits the next frame; every fragment but the
                # last arrives, so each frame's buffer is written (resident) and never completes.
                size = rng.randint(30_000, 60_000)
                count = rng.randint(100, 32 * MIB // size)
                frame_id += 1
                for seq in range(count - 1):
                    head = struct.pack("<6id", 1234567893, 32 + size, seq, count, frame_id, 0, 0)
                    tx.sendto(head + body[:size], ("127.0.0.1", port))
                    sent += 1
                    if sent % 100 == 0:
                        peak = max(peak, vm_rss_bytes(proc.pid))
        err = interrupt(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert peak - base <= limit, f"RSS grew {(peak - base) / MIB:.0f} MiB over {base / MIB:.0f}"
    (stats,) = final_stats(err)
    print(f"RSS {base / MIB:.0f} MiB -> peak {peak / MIB:.0f} MiB; {stats}")
    assert stats["events"] == 0
    assert stats["drops"]["bytes_in_flight"] > 0  # the flood did reach the budget
