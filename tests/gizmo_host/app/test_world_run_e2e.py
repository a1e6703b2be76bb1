"""``gizmo-host run`` with the world model, end to end: a real pty for the board, loopback UDP in
CopterSim's real 168 B state format, and ``world`` lines read from the process's stdout.

Geometry: the vehicle hovers level at NED (10, 5, -20), nose north; the camera looks straight
down (pitch -90°); the board reports its target at the image centre. So the target is directly
below, on the ground plane 20 m down: bearing_ned (0, 0, 1), position (10, 5, 0).
"""

from __future__ import annotations

import asyncio
import json
import math
import signal
import socket
import sys

import pytest

from gizmo_host.rigs.board import BoardModel, PtyBoard
from rfly_link import ports
from tests.support.coptersim import HOVER_NED_M, free_copter_id, state_datagram
from tests.support.schemas import validate_message

pytestmark = [pytest.mark.subprocess, pytest.mark.realtime]

TIMEOUT_S = 15.0
TTL_MS = 200.0
POSITION_NED_M = HOVER_NED_M
POSE_PERIOD_S = 0.01  # 100 Hz, as CopterSim's state stream
FRAME_PERIOD_S = 0.033


async def send_states(copter_id: int, stop: asyncio.Event) -> int:
    """Stream the state at 100 Hz, simulation time from 1000 s (its own clock), until ``stop``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    address = ("127.0.0.1", ports.coptersim_state_port(copter_id))
    loop = asyncio.get_running_loop()
    start = loop.time()
    sent = 0
    try:
        while not stop.is_set():
            sim_time_s = 1000.0 + (loop.time() - start)
            sock.sendto(state_datagram(copter_id, sim_time_s), address)
            sent += 1
            sock.sendto(b"\x00" * 7, address)  # junk on the same port: a counted drop
            await asyncio.sleep(POSE_PERIOD_S)
    finally:
        sock.close()
    return sent


def test_world_lines_from_a_pty_and_coptersim_udp(link_path, tmp_path):
    assert len(state_datagram(1, 0.0)) == 168
    copter_id = free_copter_id()
    config = tmp_path / "gizmo.toml"
    config.write_text(
        f"[store]\nttl_ms = {TTL_MS}\n"
        '[verdict]\nselect = "type=DETECTOR,id=11"\n'
        "[camera]\nwidth_px = 640\nheight_px = 480\nhfov_deg = 90.0\n"
        "mount_rpy_deg = [0.0, -90.0, 0.0]\n"
        "[world]\nrate_hz = 20\n"
    )

    async def main_async() -> list[dict]:
        with PtyBoard(link_path) as board:
            proc = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "gizmo_host.cli", "run", "--serial", link_path),
                *("--config", str(config), "--transport-delay-ms", "0"),
                *("--rflysim-copter-id", str(copter_id), "--stats-interval-s", "0.3"),
                *("--event-loop", "asyncio"),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            assert proc.stdout is not None
            messages: list[dict] = []

            async def until(predicate) -> dict:
                while True:
                    line = await asyncio.wait_for(proc.stdout.readline(), TIMEOUT_S)
                    if not line:
                        stderr = (await proc.stderr.read()).decode()
                        raise AssertionError(f"gizmo-host run ended early: {stderr}")
                    message = json.loads(line)
                    validate_message(message)
                    messages.append(message)
                    if predicate(message):
                        return message

            stop_poses = asyncio.Event()
            poses = None
            try:
                version = await until(lambda msg: msg["type"] == "version")
                assert "world" in version["types"]
                # The receivers are bound once the first world line is out.
                await until(lambda msg: msg["type"] == "world")
                poses = asyncio.create_task(send_states(copter_id, stop_poses))
                await until(lambda msg: msg["type"] == "world" and msg["vehicle"] is not None)
                model = BoardModel(live_clock=True, period_ms=33)
                loop = asyncio.get_running_loop()

                async def frames() -> None:
                    while True:
                        board.write(model.next_frame(x=0, y=0, w=100, h=100))
                        await asyncio.sleep(FRAME_PERIOD_S)

                player = loop.create_task(frames())
                try:
                    await until(lambda msg: msg["type"] == "world" and msg["verdict"] == "PROCEED")
                    # A few more PROCEED lines while frames flow, then the frames stop.
                    for _ in range(3):
                        await until(lambda msg: msg["type"] == "world")
                finally:
                    player.cancel()
                    await asyncio.gather(player, return_exceptions=True)
                hold = await until(
                    lambda msg: (
                        msg["type"] == "world"
                        and msg["verdict"] == "HOLD"
                        and "stale" in msg["reasons"]
                    )
                )
                assert hold["vehicle"] is not None  # the poses still flow: only vision stopped
                stats = await until(lambda msg: msg["type"] == "stats" and "world" in msg)
                assert stats["world"]["rflysim"]["poses"] > 0
                receivers = stats["world"]["rflysim"]["receivers"]
                assert sum(sum(r["drops"].values()) for r in receivers.values()) > 0
            finally:
                stop_poses.set()
                if poses is not None:
                    await poses
                proc.send_signal(signal.SIGTERM)
                rc = await asyncio.wait_for(proc.wait(), TIMEOUT_S)
            assert rc == 0, (await proc.stderr.read()).decode()
            return messages

    messages = asyncio.run(main_async())
    world = [msg for msg in messages if msg["type"] == "world"]
    assert [w["seq"] for w in world] == list(range(1, len(world) + 1))
    proceeds = [w for w in world if w["verdict"] == "PROCEED"]
    assert proceeds
    for snapshot in proceeds:
        target = next(t for t in snapshot["targets"] if t["key"] == snapshot["selected"])
        # Never PROCEED on stale data: the selected target is within its TTL of capture.
        assert snapshot["host_ns"] - target["capture_ns"] <= TTL_MS * 1e6
        assert target["verdict"] == "PROCEED" and target["tracked"]
        assert target["label"] == "pedestrian"
        assert target["range_source"] == "ground_plane"
        _north, _east, down = target["bearing_ned"]
        assert math.isclose(down, 1.0, abs_tol=1e-3), target["bearing_ned"]
        assert math.isclose(target["elevation_deg"], -90.0, abs_tol=0.1)
        x, y, z = target["position_ned_m"]
        # Box centre 0 is pixel 319.5 of 640: on the optical axis, so within millimetres.
        assert math.dist((x, y, z), (10.0, 5.0, 0.0)) < 0.05, target["position_ned_m"]
        assert math.isclose(target["range_m"], 20.0, abs_tol=0.05)
        vehicle = snapshot["vehicle"]
        assert vehicle["copter_id"] == copter_id
        assert vehicle["position_ned_m"] == list(POSITION_NED_M)
        # The pose is current: within pose_ttl_ms (250) of the line. The source's own state
        # says STALE after 100 ms without a pose (source_stale_ms), which a loaded machine's
        # sender (this test's) reaches now and then: a PROCEED may stand on it, not older.
        pose = snapshot["sources"]["pose"]
        assert pose["state"] in {"OK", "STALE"} and pose["age_ms"] <= 250.0, pose
    last_proceed = max(w["seq"] for w in proceeds)
    holds_after = [w for w in world if w["seq"] > last_proceed]
    assert holds_after and all(w["verdict"] == "HOLD" for w in holds_after)
    first = holds_after[0]
    assert first["selected"] is None or first["targets"][0]["bearing_ned"] is None
