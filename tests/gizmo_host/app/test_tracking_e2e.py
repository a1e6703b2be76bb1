"""``gizmo-host run`` tracks a moving target, end to end: a real pty for the board, loopback
UDP in CopterSim's 168 B state format, and ``world`` lines read from the process's stdout.

The vehicle hovers level at NED (0, 0, -10), the camera looks straight down; a ground target
drives east at 3 m/s. The test computes the truth itself: the target's position at any host
time, and its pixel through ``hil_geometry``'s pinhole (never fusion's camera model), with
1.5 px of seeded Gaussian box noise; each frame stamps the board's live device clock when it
is written, 12 ms after its capture. Once, mid-run, the box is 3 m off.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import socket
import sys
import time

import numpy as np
import pytest

from gizmo_host.rigs.board import BoardModel, PtyBoard
from hil_geometry.pinhole import Pinhole
from rfly_link import ports
from tests.support.coptersim import free_copter_id, state_datagram
from tests.support.schemas import validate_message

pytestmark = [pytest.mark.subprocess, pytest.mark.realtime]

TIMEOUT_S = 15.0
HOVER_NED_M = (0.0, 0.0, -10.0)
SPEED_M_S = 3.0
START_EAST_M = -6.0
DRIVE_S = 4.0
LATENCY_MS = 12
BOX_SIGMA_PX = 1.5
PINHOLE = Pinhole.from_table(640, 480, hfov_deg=90.0, mount_rpy_deg=(0.0, -90.0, 0.0))
LEVEL = (1.0, 0.0, 0.0, 0.0)
GLITCH_AT_S = 2.5


class Truth:
    """The target's ground position at any host time (ns), from the moment it starts."""

    def __init__(self, start_ns: int) -> None:
        self.start_ns = start_ns

    def at(self, host_ns: int) -> np.ndarray:
        return np.array((0.0, START_EAST_M + SPEED_M_S * (host_ns - self.start_ns) / 1e9, 0.0))

    def centre(self, host_ns: int, rng: random.Random, off_m: float = 0.0) -> tuple[int, int]:
        point = self.at(host_ns) + np.array((off_m, 0.0, 0.0))
        pixel = PINHOLE.project_point(PINHOLE.pose(HOVER_NED_M, LEVEL), point)
        assert pixel is not None
        u = pixel[0] + rng.gauss(0.0, BOX_SIGMA_PX)
        v = pixel[1] + rng.gauss(0.0, BOX_SIGMA_PX)
        return round(u * 2000 / 639 - 1000), round(v * 2000 / 479 - 1000)


async def send_states(copter_id: int, stop: asyncio.Event) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    address = ("127.0.0.1", ports.coptersim_state_port(copter_id))
    loop = asyncio.get_running_loop()
    start = loop.time()
    try:
        while not stop.is_set():
            sim_time_s = 500.0 + (loop.time() - start)
            sock.sendto(state_datagram(copter_id, sim_time_s, HOVER_NED_M), address)
            await asyncio.sleep(0.01)
    finally:
        sock.close()


async def drive(board: PtyBoard, truth: Truth) -> int:
    """Frames at ~30 Hz while the target drives; returns the frames written."""
    model = BoardModel(live_clock=True, period_ms=33, latency_ms=LATENCY_MS)
    rng = random.Random(27)
    frames = glitched = 0
    while (now := time.monotonic_ns()) - truth.start_ns < DRIVE_S * 1e9:
        capture = now - LATENCY_MS * 1_000_000
        glitch = not glitched and (now - truth.start_ns) / 1e9 >= GLITCH_AT_S
        glitched |= glitch
        x, y = truth.centre(capture, rng, 3.0 if glitch else 0.0)
        board.write(model.next_frame(now_ns=now, x=x, y=y, w=40, h=40))
        frames += 1
        await asyncio.sleep(0.033)
    return frames


def test_a_moving_target_is_tracked_with_an_honest_estimate(link_path, tmp_path):
    copter_id = free_copter_id()
    config = tmp_path / "gizmo.toml"
    config.write_text(
        '[verdict]\nselect = "type=DETECTOR,id=11"\n'
        "[camera]\nwidth_px = 640\nheight_px = 480\nhfov_deg = 90.0\n"
        "mount_rpy_deg = [0.0, -90.0, 0.0]\n"
        "[world]\nrate_hz = 50\n"
    )

    async def main_async() -> tuple[list[dict], Truth, int]:
        with PtyBoard(link_path) as board:
            proc = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "gizmo_host.cli", "run", "--serial", link_path),
                *("--config", str(config), "--transport-delay-ms", "0"),
                *("--rflysim-copter-id", str(copter_id), "--stats-interval-s", "0"),
                *("--event-loop", "asyncio"),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            assert proc.stdout is not None
            lines: list[dict] = []

            async def until(predicate) -> None:
                while True:
                    raw = await asyncio.wait_for(proc.stdout.readline(), TIMEOUT_S)
                    if not raw:
                        stderr = (await proc.stderr.read()).decode()
                        raise AssertionError(f"gizmo-host run ended early: {stderr}")
                    message = json.loads(raw)
                    validate_message(message)
                    if message["type"] == "world":
                        lines.append(message)
                    if predicate(message):
                        return

            async def read_all() -> None:
                await until(lambda _: False)

            stop = asyncio.Event()
            poses = None
            reader = None
            try:
                await until(lambda m: m["type"] == "world")  # the receivers are bound
                poses = asyncio.create_task(send_states(copter_id, stop))
                await until(lambda m: m["type"] == "world" and m["vehicle"] is not None)
                truth = Truth(time.monotonic_ns())
                reader = asyncio.create_task(read_all())
                frames = await drive(board, truth)
            finally:
                stop.set()
                if poses is not None:
                    await poses
                proc.send_signal(signal.SIGTERM)
                rc = await asyncio.wait_for(proc.wait(), TIMEOUT_S)
                if reader is not None:
                    await asyncio.gather(reader, return_exceptions=True)
            assert rc == 0, (await proc.stderr.read()).decode()
            return lines, truth, frames

    lines, truth, frames = asyncio.run(main_async())
    assert frames > 90
    proceed = [w for w in lines if w["verdict"] == "PROCEED"]
    assert len(proceed) > 60
    first_proceed_ns = proceed[0]["host_ns"]
    positions, velocities, predicted, track_ids = [], [], [], set()
    for world in proceed:
        target = world["targets"][0]
        assert target["key"] == world["selected"] and target["verdict"] == "PROCEED"
        assert target["track_state"] == "confirmed"
        track_ids.add(target["track_id"])
        covariance = np.array(target["covariance_ned"]).reshape(6, 6)
        assert np.allclose(covariance, covariance.T, rtol=0, atol=1e-15)
        assert np.linalg.eigvalsh(covariance).min() >= -1e-12 * np.abs(covariance).max()
        capture = target["capture_ns"]
        position, velocity = np.array(target["position_ned_m"]), target["velocity_ned_m_s"]
        positions.append(float(np.linalg.norm(position - truth.at(capture))))
        ahead = position + np.array(velocity) * (world["host_ns"] - capture) / 1e9
        predicted.append(float(np.linalg.norm(ahead - truth.at(world["host_ns"]))))
        if world["host_ns"] - first_proceed_ns > 1e9:  # the velocity has had a second
            velocities.append(float(np.linalg.norm(np.subtract(velocity, (0, SPEED_M_S, 0)))))
    assert track_ids == {proceed[0]["targets"][0]["track_id"]}  # one number, glitch or not
    assert max(positions) < 0.5  # the 3 m glitch never reached a PROCEED
    assert np.percentile(positions, 95) <= 0.10, np.percentile(positions, 95)
    assert np.percentile(predicted, 95) <= 0.15, np.percentile(predicted, 95)
    # The goal up to 3 m/s; measured 0.043-0.050 over runs, under load too (the capture times
    # the live path maps are off by 0.2-0.4 ms, 1 mm at 3 m/s: the filter's own noise rules).
    assert velocities and np.percentile(velocities, 95) <= 0.10, np.percentile(velocities, 95)
    # The 3 m glitch (sent at GLITCH_AT_S) starts a tentative track, kept but not listed (its
    # key has a confirmed one): no located target of any line, in any state, stands there.
    located = [
        float(np.linalg.norm(np.array(t["position_ned_m"]) - truth.at(t["capture_ns"])))
        for w in lines for t in w["targets"] if t["position_ned_m"] is not None
        and w["host_ns"] - truth.start_ns > GLITCH_AT_S * 1e9
    ]  # fmt: skip
    assert located and max(located) < 0.5
