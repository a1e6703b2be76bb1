"""Helpers to run ``gizmo-host rfly`` as a real process and watch its memory (Linux /proc)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

WAIT_S = 10.0


def sensor_json(port: int, *, type_id: int = 20, width: int = 0, height: int = 0) -> dict[str, Any]:
    """One UDP ``VisionSensors`` entry sending to 127.0.0.1:``port`` (0 x 0: default limits)."""
    return {
        "SeqID": 1,
        "TypeID": type_id,
        "TargetCopter": 1,
        "TargetMountType": 0,
        "DataWidth": width,
        "DataHeight": height,
        "DataCheckFreq": 50,
        "SendProtocol": [1, 127, 0, 0, 1, port, 0, 0],
        "CameraFOV": 0,
        "SensorPosXYZ": [0, 0, 0],
        "EularOrQuat": 0,
        "SensorAngEular": [0, 0, 0],
        "SensorAngQuat": [1, 0, 0, 0],
        "otherParams": [60] + [0] * 15,
    }


def write_config(path: Path, *sensors: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"VisionSensors": list(sensors)}))
    return path


def start_rfly(args: list[str], *, stdout: int | IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "gizmo_host.cli", "rfly", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )


def vm_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def wait_udp_bound(proc: subprocess.Popen[bytes], port: int) -> None:
    """Poll /proc/net/udp until something listens on 127.0.0.1:``port``."""
    local = f"0100007F:{port:04X}"
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"rfly exited early: {proc.communicate()[1].decode()}")
        rows = Path("/proc/net/udp").read_text().splitlines()[1:]
        if any(row.split()[1] == local for row in rows):
            return
        time.sleep(0.01)
    raise AssertionError(f"nothing bound 127.0.0.1:{port} within {WAIT_S} s")


def final_stats(stderr: bytes) -> list[dict[str, Any]]:
    """The per-receiver statistics lines rfly prints on stderr when it ends."""
    lines = [line for line in stderr.decode().splitlines() if line.startswith('{"receiver"')]
    return [json.loads(line) for line in lines]


def udp_rx_queue_bytes(port: int) -> int:
    """Bytes waiting in the receive queue of the socket bound to 127.0.0.1:``port``."""
    local = f"0100007F:{port:04X}"
    for row in Path("/proc/net/udp").read_text().splitlines()[1:]:
        fields = row.split()
        if fields[1] == local:
            return int(fields[4].split(":")[1], 16)
    raise AssertionError(f"nothing bound 127.0.0.1:{port}")


def wait_rx_queue_below(port: int, nbytes: int) -> None:
    """Pace a sender: poll until the receiver has taken in all but ``nbytes`` of its queue."""
    deadline = time.monotonic() + WAIT_S
    while udp_rx_queue_bytes(port) >= nbytes:
        if time.monotonic() > deadline:
            raise AssertionError(f"the receiver on port {port} stopped reading its socket")
        time.sleep(0.001)
