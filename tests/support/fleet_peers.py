"""Fleet peers for the tests, honest and not, and ``gizmo-host fleet --json`` as a process.

- ``world_line``: a world line as a host writes it (schema-valid), its truth chosen by the test;
- ``HonestHost``: the host's real Zenoh output (``ZenohOutput``: its own session, queue and
  thread, each put stamped by the session) fed a world line at ``rate_hz`` from a thread;
- ``Peer``: a bare Zenoh session of its own that puts whatever a test gives it, as an
  attacker would (another session: another Zenoh identity, unless it forges one);
- ``FleetProcess``: the fleet view's rows, each with its arrival time on this clock.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import zenoh

from gizmo_host.publish.lines import encode_line
from gizmo_host.zenoh.config import ZenohConfig
from gizmo_host.zenoh.sink import ZenohOutput
from tests.support.zenoh_router import session, wait_until

MS = 1_000_000


def world_line(
    seq: int,
    host_ns: int,
    wall_ns: int | None,
    verdict: str = "HOLD",
    valid_ms: int = 200,
    position_ned_m: tuple[float, float, float] = (10.0, 20.0, -30.0),
) -> dict[str, Any]:
    """A world line: one target, selected and located when ``verdict`` is PROCEED."""
    proceed = verdict == "PROCEED"
    target = {
        "key": "1:5:11", "result_type": 5, "id": 11, "label": "PEDESTRIAN", "confidence": 87,
        "tracked": True, "capture_ns": host_ns - 30 * MS, "age_ms": 30.0,
        "verdict": verdict, "reasons": [] if proceed else ["stale"],
        "bearing_camera": [0.912, 0.012, 0.41] if proceed else None,
        "bearing_ned": [0.6, 0.8, 0.0] if proceed else None,
        "azimuth_deg": 53.13 if proceed else None, "elevation_deg": -0.5 if proceed else None,
        "angular_size_deg": [2.1, 3.4] if proceed else None,
        "position_ned_m": [16.0, 28.0, 0.0] if proceed else None,
        "range_m": 10.0 if proceed else None, "range_source": "ground_plane" if proceed else None,
    }  # fmt: skip
    return {
        "type": "world", "format_version": 1, "seq": seq, "host_ns": host_ns,
        "wall_ns": wall_ns, "valid_until_ns": host_ns + valid_ms * MS, "verdict": verdict,
        "reasons": [] if proceed else ["stale"], "selected": "1:5:11" if proceed else None,
        "vehicle": {"copter_id": 1, "time_ns": host_ns - 5 * MS, "age_ms": 5.0, "epoch": 1,
                    "position_ned_m": list(position_ned_m),
                    "quaternion_wxyz": [1.0, 0.0, 0.0, 0.0], "velocity_ned_m_s": None},
        "sources": {"vision": {"state": "OK", "age_ms": 12.5}},
        "targets": [target],
    }  # fmt: skip


class HonestHost:
    """A host's Zenoh output, fed ``verdict`` world lines at ``rate_hz``; ``lines`` keeps
    every line handed to it (bytes, as published)."""

    def __init__(
        self,
        endpoint: str,
        vehicle: str,
        verdict: str,
        rate_hz: float = 20.0,
        config_file: str | None = None,
    ) -> None:
        config = ZenohConfig(
            enabled=True, mode="client", connect=(endpoint,), vehicle=vehicle, config=config_file
        )
        self.output = ZenohOutput(config)
        self.verdict = verdict
        self.period_s = 1 / rate_hz
        self.lines: list[bytes] = []
        self.last_sent = 0.0  # time.monotonic() of the newest line handed to the output
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> HonestHost:
        asyncio.run(self.output.start())  # it only starts the output's own thread
        wait_until(lambda: self.output.connected)
        self._thread.start()
        return self

    def _run(self) -> None:
        seq = 0
        while not self._stop.is_set():
            seq += 1
            line = encode_line(world_line(seq, time.monotonic_ns(), time.time_ns(), self.verdict))
            self.lines.append(line)
            self.output.send(line)
            self.last_sent = time.monotonic()
            self._stop.wait(self.period_s)

    def stop(self) -> float:
        """Stop sending and close; the time of the last line."""
        self._stop.set()
        self._thread.join(5)
        asyncio.run(self.output.close())
        return self.last_sent


class Peer:
    """A Zenoh session of its own: puts what it is given, stamped like a host's unless told."""

    def __init__(self, endpoint: str, config_file: str | None = None) -> None:
        self.session = session("client", connect=endpoint, config_file=config_file)

    def put(self, key: str, payload: bytes, timestamp: zenoh.Timestamp | None = None) -> None:
        """Put with congestion control BLOCK: every line the test sends reaches the view, so
        the view's counts can be judged against what was sent. (With Zenoh's default, DROP,
        the router dropped lines bound for a fleet view that a loaded machine slowed down:
        the 5 MB line or some of the 30 replayed ones never came to be counted.)"""
        self.session.put(
            key,
            payload,
            timestamp=timestamp or self.session.new_timestamp(),
            congestion_control=zenoh.CongestionControl.BLOCK,
        )

    def close(self) -> None:
        self.session.close()  # type: ignore[no-untyped-call]


class FleetProcess:
    """``gizmo-host fleet --json`` with ``args``; ``rows`` holds (arrival, row) as they come."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gizmo_host.cli", "fleet", "--json", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.rows: list[tuple[float, dict[str, Any]]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.rows.append((time.monotonic(), json.loads(line)))

    def of(self, vehicle: str, since: float = 0.0) -> list[tuple[float, dict[str, Any]]]:
        return [(t, r) for t, r in list(self.rows) if r["vehicle"] == vehicle and t >= since]

    def first(
        self, vehicle: str, predicate: Callable[[dict[str, Any]], bool], since: float = 0.0
    ) -> tuple[float, dict[str, Any]] | None:
        return next(((t, r) for t, r in self.of(vehicle, since) if predicate(r)), None)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> tuple[int, bytes]:
        if self.proc.poll() is None:
            self.proc.terminate()
        rc = self.proc.wait(10)
        self._reader.join(10)
        assert self.proc.stderr is not None
        return rc, self.proc.stderr.read()
