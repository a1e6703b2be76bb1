"""``gizmo-host fleet --json`` attacked through a real router, judged against what the test
itself sent: a forged publisher, garbage (NaN, 1e400, wrong types, a 5 MB line), a replay of
a stopped host's PROCEED lines, and a host that stops.

Two honest hosts (the host's own ``ZenohOutput``): uav1 says HOLD in every line, uav2 PROCEED.
One fleet process and one router for every assertion (they cost seconds to start).
"""

from __future__ import annotations

import itertools
import json
import time

import pytest

from gizmo_host.publish.lines import encode_line
from tests.support.fleet_peers import MS, FleetProcess, HonestHost, Peer, world_line
from tests.support.schemas import validate_message
from tests.support.zenoh_router import router, wait_until

pytestmark = [pytest.mark.subprocess, pytest.mark.realtime]
TTL_MS = 250
CONFLICT_MS = 1000  # the view's default: a conflict ends this long after the second voice
SLACK_S = 0.5  # a loaded machine's timer and pipe delays, on top of what the view promises


def _pace(seconds: float) -> None:
    time.sleep(seconds)  # the attacker's send rate, not a wait for an event


def _garbage() -> list[bytes]:
    good = world_line(10**9, time.monotonic_ns() + 10**12, time.time_ns(), "PROCEED")
    lines = [
        json.dumps({**good, "valid_until_ns": "X"}).replace('"X"', "1e400").encode(),
        json.dumps({**good, "seq": "X"}).replace('"X"', "NaN").encode(),
        json.dumps(
            {**good, "vehicle": {**good["vehicle"], "position_ned_m": [1e400, 0, 0]}}
        ).encode(),
        json.dumps({**good, "host_ns": "12"}).encode(),
        json.dumps({**good, "seq": True}).encode(),
        json.dumps({**good, "valid_until_ns": 2**70}).encode(),
        json.dumps([good]).encode(),
        b'{"type":"world","seq":',
        b"\xff\xfe",
        json.dumps({**good, "padding": "x" * 5_000_000}).encode(),  # 5 MB
    ]
    return lines


def _refused(row: dict) -> int:
    dropped = row["dropped"]
    return int(dropped["foreign"] + dropped["replayed"] + dropped["skipped"])


def test_forged_garbage_and_replayed_lines_never_make_the_view_lie_or_stall() -> None:
    with router() as endpoint:
        fleet = FleetProcess("--mode", "client", "--connect", endpoint, "--ttl-ms", str(TTL_MS))
        uav1 = HonestHost(endpoint, "uav1", "HOLD").start()
        uav2 = HonestHost(endpoint, "uav2", "PROCEED").start()
        forger = Peer(endpoint)
        try:
            wait_until(lambda: fleet.first("uav1", lambda r: r["state"] == "fresh"), 15)
            wait_until(lambda: fleet.first("uav2", lambda r: r["verdict"] == "PROCEED"))

            # 1. Another session forges PROCEED lines for uav1, seq and host_ns ahead of its
            # host's, 90 m off, at 20 Hz for 1 s.
            attack_start = time.monotonic()
            for i in range(20):
                line = world_line(1000 + i, time.monotonic_ns() + 50 * MS, time.time_ns(),
                                  "PROCEED", position_ned_m=(99.0, 99.0, 0.0))  # fmt: skip
                forger.put("gizmo/uav1/world", encode_line(line))
                _pace(0.05)
            # 2. Then garbage, for uav1 and for uav3 (which nobody else publishes).
            for payload in _garbage():
                forger.put("gizmo/uav1/world", payload)
                forger.put("gizmo/uav3/world", payload)
            forger_end = time.monotonic()

            # The conflict ends within CONFLICT_MS of the forger's last line: uav1 is its own
            # host's HOLD again.
            back = wait_until(
                lambda: fleet.first("uav1", lambda r: r["verdict"] == "HOLD", forger_end), 10
            )
            assert back[0] - forger_end <= CONFLICT_MS / 1000 + SLACK_S
            during = [r for t, r in fleet.of("uav1", attack_start) if t <= forger_end]
            assert any(r["verdict"] == "CONFLICT" for r in during)

            # 3. uav2 stops; another session replays its PROCEED lines, oldest first. What
            # the view refused of uav2 before: once it shows uav2's last line, nothing honest
            # is left to count (on a loaded machine, a line the next one superseded before
            # the view's loop took it is counted "skipped").
            uav2_end = uav2.stop()
            last_seq = json.loads(uav2.lines[-1])["seq"]
            shown = wait_until(lambda: fleet.first("uav2", lambda r: r.get("seq") == last_seq), 20)
            before = _refused(shown[1])
            replayer = Peer(endpoint)
            for line in uav2.lines[-30:]:
                replayer.put("gizmo/uav2/world", line)
                _pace(0.05)
            replayer.close()
            # 4. uav1 stops too.
            uav1_end = uav1.stop()
            # (Generous deadlines: the bounds are the asserts on what came, not the waits.)
            stale = wait_until(lambda: fleet.first("uav1", lambda r: r["state"] == "stale"), 20)
            assert stale[1]["age_ms"] <= TTL_MS + 100 and stale[0] - uav1_end <= 1.0
            # Each of the 30 replayed lines is counted: a second voice (foreign) while uav2's
            # host was present, a replay (not newer than its newest line) after.
            try:
                wait_until(lambda: fleet.first("uav2", lambda r: _refused(r) - before == 30), 20)
            except AssertionError:
                rows = fleet.of("uav2")
                raise AssertionError(
                    f"30 replayed lines refused: the last uav2 row's {rows[-1][1]['dropped']}, "
                    f"{before} refused before the replay"
                ) from None
            # And the garbage is counted on uav1's row before the view stops (the 5 MB line
            # takes a while through the router on a busy machine).
            wait_until(lambda: fleet.first("uav1", lambda r: r["dropped"]["oversized"]), 20)
            assert fleet.alive()
        finally:
            for host in (uav1, uav2):
                if not host._stop.is_set():
                    host.stop()
            forger.close()
            rc, err = fleet.stop()

    assert rc == 0, err.decode(errors="replace")
    rows = [r for _, r in fleet.rows]
    for row in rows:
        validate_message(row)
    # Never a PROCEED for uav1 (its host said HOLD in every line, the forger PROCEED).
    assert not [r for r in rows if r["vehicle"] == "uav1" and r["verdict"] == "PROCEED"]
    # uav2: PROCEED rows only while its host ran (plus the last line's validity); stale on
    # time after it stopped, replay or not, and no replayed line taken.
    late = [r for t, r in fleet.of("uav2", uav2_end + 0.2 + SLACK_S) if r["verdict"] == "PROCEED"]
    assert not late
    uav2_stale = fleet.first("uav2", lambda r: r["state"] == "stale")
    assert uav2_stale is not None and uav2_stale[1]["age_ms"] <= TTL_MS + 100
    # uav2 was printed at least once a second throughout the attack, never in conflict.
    times = [t for t, _ in fleet.of("uav2", attack_start) if t <= uav2_end]
    assert times and max(b - a for a, b in itertools.pairwise(times)) <= 1 + SLACK_S
    assert not [r for t, r in fleet.of("uav2") if t <= uav2_end and r["verdict"] == "CONFLICT"]
    # Every dropped line is counted on its vehicle's row: the garbage, the forged lines, the
    # replayed ones.
    last1 = [r for r in rows if r["vehicle"] == "uav1"][-1]
    assert last1["dropped"]["oversized"] == 1
    assert last1["dropped"]["invalid"] + last1["dropped"]["skipped"] >= len(_garbage()) - 1
    assert "uav3" not in {r["vehicle"] for r in rows}  # nothing valid ever came for it
