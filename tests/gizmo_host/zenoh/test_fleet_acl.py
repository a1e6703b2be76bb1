"""Zenoh's own TLS, mTLS and access control, as docs/zenoh/ configures them, with a real router
(zenoh's core in a Python session in router mode): each vehicle publishes only under its own
key, and no certificate from the fleet's CA means no session at all.

uav1 is the host's real Zenoh output (``[zenoh] config`` = docs/zenoh/vehicle.json5 with its
certificate); uav2 holds a valid fleet certificate and forges uav1's lines, and so does a
session holding the fleet view's own certificate, before and after uav1 stops; a stranger
holds a certificate named uav1 from another CA. The fleet view is ``gizmo-host fleet
--zenoh-config``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import zenoh

from gizmo_host.publish.lines import encode_line
from tests.support.fleet_peers import FleetProcess, HonestHost, Peer, world_line
from tests.support.fleet_tls import example, make_certs
from tests.support.zenoh_router import router, session, wait_until

pytestmark = [pytest.mark.subprocess, pytest.mark.realtime]


def test_each_vehicle_publishes_only_under_its_own_key_and_strangers_cannot_connect(
    tmp_path: Path,
) -> None:
    make_certs(tmp_path, "router", "uav1", "uav2", "fleet-view")
    router_file = example("router.json5", tmp_path)
    with router("tls", router_file) as endpoint:
        # No certificate from the fleet CA: the TLS handshake fails, no session opens.
        with pytest.raises(zenoh.ZError):
            session("client", connect=endpoint, config_file=example("vehicle.json5", tmp_path,
                    uav1="stranger"))  # fmt: skip
        fleet = FleetProcess(
            "--mode", "client", "--connect", endpoint, "--ttl-ms", "250",
            "--zenoh-config", example("vehicle.json5", tmp_path, uav1="fleet-view"),
        )  # fmt: skip
        uav1 = HonestHost(endpoint, "uav1", "HOLD", config_file=example("vehicle.json5", tmp_path))
        uav1.start()
        uav2 = Peer(endpoint, example("vehicle.json5", tmp_path, uav1="uav2"))
        view_file = example("vehicle.json5", tmp_path, uav1="fleet-view")
        viewer = Peer(endpoint, view_file)  # a session holding the fleet view's certificate
        try:
            wait_until(lambda: fleet.first("uav1", lambda r: r["state"] == "fresh"), 15)
            forged_from = time.monotonic()
            for seq in range(1, 21):  # uav2 forges PROCEED lines for uav1, and sends its own
                line = world_line(10_000 + seq, time.monotonic_ns(), time.time_ns(), "PROCEED")
                uav2.put("gizmo/uav1/world", encode_line(line))
                own = world_line(seq, time.monotonic_ns(), time.time_ns(), "HOLD")
                uav2.put("gizmo/uav2/world", encode_line(own))
                time.sleep(0.02)  # the forger's pace, not a wait for an event
            # uav2's own lines pass the router: it is connected, and its forgeries were
            # refused by the access control, not lost.
            wait_until(lambda: fleet.first("uav2", lambda r: r["seq"] == 20), 10)
            wait_until(lambda: fleet.first("uav1", lambda r: r["state"] == "fresh", forged_from))
            # The view may ask a vehicle for its newest line; another vehicle may not.
            assert _latest(endpoint, view_file)
            assert _latest(endpoint, example("vehicle.json5", tmp_path, uav1="uav2")) is None
            # Red team FAIL 4: the view's certificate could put under any vehicle: CONFLICT
            # while uav1 spoke, then, once it stopped, PROCEED rows for uav1. It is connected
            # (it may ask, above), and the router refuses every put of it.
            _forge(viewer, 20_000, 1.0)
            uav1.stop()
            stopped = time.monotonic()
            _forge(viewer, 30_000, 2.5)  # past --conflict-ms: a takeover, were it let through
            wait_until(lambda: fleet.first("uav1", lambda r: r["state"] == "stale", stopped))
        finally:
            uav1.stop()
            uav2.close()
            viewer.close()
            rc, err = fleet.stop()
    assert rc == 0, err.decode(errors="replace")
    rows = [r for _, r in fleet.rows if r["vehicle"] == "uav1"]
    assert rows and all(r["verdict"] == "HOLD" and r["said"] == "HOLD" for r in rows)
    assert all(r["publishers"] <= 1 and r["dropped"]["foreign"] == 0 for r in rows)
    assert all(r["handovers"] == 0 and r["dropped"]["replayed"] == 0 for r in rows)
    seqs = {r["seq"] for r in rows}
    assert max(seqs) < 10_000  # never one of the forged lines
    assert rows[-1]["state"] == "stale"  # uav1 stopped: stale, never taken over


def _forge(peer: Peer, first_seq: int, seconds: float) -> None:
    """PROCEED lines for uav1 from ``peer``, at 50 Hz for ``seconds``, current in every way."""
    seq, end = first_seq, time.monotonic() + seconds
    while time.monotonic() < end:
        line = world_line(seq, time.monotonic_ns(), time.time_ns(), "PROCEED")
        peer.put("gizmo/uav1/world", encode_line(line))
        seq += 1
        time.sleep(0.02)  # the forger's pace, not a wait for an event


def _latest(endpoint: str, config_file: str) -> bytes | None:
    """uav1's newest world line, asked for by a session with ``config_file``'s certificate."""
    asking = session("client", connect=endpoint, config_file=config_file)
    try:
        replies = list(asking.get("gizmo/uav1/world/latest", timeout=3))
    finally:
        asking.close()
    ok = [r.ok.payload.to_bytes() for r in replies if r.ok is not None]
    return ok[0] if ok else None
