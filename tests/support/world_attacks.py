"""The harness of the world attacks on ``gizmo-host run`` ([camera] + [rflysim]): the truth on
the host clock, CopterSim's pose stream, the board, and the judge of every PROCEED world line
(tests/gizmo_host/bridge/test_world_attacks.py and test_range_attacks.py say what they
attack).
"""

from __future__ import annotations

import asyncio
import math
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gizmo_host.rigs.board import BoardModel, PtyBoard
from rfly_link import messages as m
from rfly_link import ports
from tests.support.coptersim import free_copter_id
from tests.support.run_process import Run, spawn_run

TIMEOUT_S = 10.0
# The device clock locks after 300 ms of frames (the default is 1 s): the attacks start sooner,
# and are judged by the same rules (a PROCEED's capture time within ACCURACY_MS of the truth).
LOCK_TOML = "[clock]\nlock_after_ms = 300\n"
TTL_MS = 200.0
ACCURACY_MS = 5.0  # capture-time mapping error plus timer margin
POSITION_TOL_M = 0.2  # 50 ms of flight at SPEED_M_S
SPEED_M_S = 4.0
START_NED_M = (10.0, 5.0, -20.0)
FRAME_PERIOD_S = 1 / 30
POSE_PERIOD_S = 0.01
SELECT = "type=DETECTOR,id=11"
ODOM_VALID = int(
    m.OdomFlags.POSITION_VALID
    | m.OdomFlags.ATTITUDE_VALID
    | m.OdomFlags.VELOCITY_VALID
    | m.OdomFlags.ANGULAR_VELOCITY_VALID
)


@dataclass
class Truth:
    t0_ns: int = field(default_factory=time.monotonic_ns)
    captures_ns: list[int] = field(default_factory=list)  # the watched target's captures

    def position(self, host_ns: int) -> tuple[float, float, float]:
        north, east, down = START_NED_M
        return (north + SPEED_M_S * (host_ns - self.t0_ns) / 1e9, east, down)


Make = Callable[[int, float, tuple[float, float, float]], list[bytes]]


def state(copter_id: int, sim_time_s: float, position, **over) -> bytes:
    fields = {
        "copter_id": copter_id,
        "vehicle_type": 3,
        "velocity_ned_m_s": (SPEED_M_S, 0.0, 0.0),
        "euler_rad": (0.0, 0.0, 0.0),
        "quaternion_wxyz": (1.0, 0.0, 0.0, 0.0),
        "runned_time_s": sim_time_s,
        "position_ned_m": position,
    }
    fields.update(over)
    return m.SOut2Simulator(**fields).encode()


def odom(copter_id: int, seq: int, sim_time_s: float, position, *, flags: int = ODOM_VALID, **o):
    fields = {
        "sequence": seq % 2**32,
        "simulation_time_s": sim_time_s,
        "copter_id": copter_id,
        "frame_type": int(m.OdomFrameType.NED_FRD),
        "flags": flags,
        "position_ned_m": position,
        "quaternion_wxyz": (1.0, 0.0, 0.0, 0.0),
        "velocity_ned_m_s": (SPEED_M_S, 0.0, 0.0),
        "angular_velocity_frd_rad_s": (0.0, 0.0, 0.0),
    }
    fields.update(o)
    return m.OdomReply(**fields).encode()


@dataclass
class Poses:
    """CopterSim at 100 Hz: ``make(i, sim_time_s, true_position)`` gives the datagrams of
    tick ``i`` (the simulation runs in real time from 1000 s at ``t0``); they leave after
    ``delay_s`` (a slow network), or not at all while ``paused``."""

    port: int
    make: Make
    delay_s: float = 0.0
    paused: bool = False
    sent: int = 0

    async def run(self, stop: asyncio.Event, truth: Truth) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        loop = asyncio.get_running_loop()
        address = ("127.0.0.1", self.port)
        handles: list[asyncio.TimerHandle] = []
        i = 0
        try:
            while not stop.is_set():
                now = time.monotonic_ns()
                if not self.paused:
                    sim_time_s = 1000.0 + (now - truth.t0_ns) / 1e9
                    for datagram in self.make(i, sim_time_s, truth.position(now)):
                        if self.delay_s:
                            handles.append(
                                loop.call_later(self.delay_s, sock.sendto, datagram, address)
                            )
                        else:
                            sock.sendto(datagram, address)
                        self.sent += 1
                i += 1
                await asyncio.sleep(POSE_PERIOD_S)
        finally:
            for handle in handles:
                handle.cancel()
            sock.close()


async def start(link_path: str, tmp_path, copter_id: int, *extra: str) -> Run:
    config = tmp_path / "gizmo.toml"
    config.write_text(
        f"{LOCK_TOML}[store]\nttl_ms = {TTL_MS}\n"
        f'[verdict]\nselect = "{SELECT}"\ninterval_s = 0.2\n'
        "[camera]\nwidth_px = 640\nheight_px = 480\nhfov_deg = 90.0\n"
        "mount_rpy_deg = [0.0, -90.0, 0.0]\nmount_position_frd_m = [0.0, 0.0, 0.0]\n"
        "[world]\nrate_hz = 50\n"
    )
    return await spawn_run(
        link_path,
        config,
        *("--stats-interval-s", "0.2", "--rflysim-copter-id", str(copter_id)),
        *("--event-loop", "asyncio", *extra),
        ready=lambda msg: msg["type"] == "world",  # the receivers are bound
        stderr=asyncio.subprocess.PIPE,
    )


async def stop(run: Run) -> list[dict]:
    run.proc.send_signal(signal.SIGTERM)
    rc = await asyncio.wait_for(run.proc.wait(), TIMEOUT_S)
    assert run.reader is not None
    await asyncio.wait_for(run.reader, TIMEOUT_S)
    assert run.proc.stderr is not None
    stderr = (await run.proc.stderr.read()).decode()
    assert rc == 0, stderr
    assert "Traceback" not in stderr, stderr
    return run.messages


class Board:
    """The board on the host clock: frames at 30 Hz, the watched target's captures recorded."""

    def __init__(self, pty: PtyBoard, truth: Truth) -> None:
        self.pty = pty
        self.truth = truth
        self.model = BoardModel(live_clock=True)
        self.box = {"x": 0, "y": 0, "w": 100, "h": 100}  # the watched target's, every frame

    def send(self, **fields: int) -> None:
        now = time.monotonic_ns()
        result = self.model.next_result(now_ns=now, **{**self.box, **fields})
        watched = result.result_type == self.model.result_type and result.id == 11
        if watched and result.flags & 1 and not result.flags & 2:
            self.truth.captures_ns.append(now - self.model.latency_ms * 1_000_000)
        self.pty.write(result.encode())

    async def stream(self, seconds: float, **fields: int) -> None:
        loop = asyncio.get_running_loop()
        start_t = loop.time()
        for i in range(round(seconds / FRAME_PERIOD_S)):
            self.send(**fields)
            await asyncio.sleep(max(0.0, start_t + (i + 1) * FRAME_PERIOD_S - loop.time()))


def selected(line: dict) -> dict:
    return next(t for t in line["targets"] if t["key"] == line["selected"])


def violations(messages: list[dict], truth: Truth, ttl_ms: float = TTL_MS) -> list[str]:
    """Every PROCEED world line that broke the promise, explained."""
    found = []
    breaks = [
        msg["host_ns"]
        for msg in messages
        if msg["type"] == "link" and msg["state"] in ("DOWN", "SILENT")
    ]
    for line in messages:
        if line["type"] != "world" or line["verdict"] != "PROCEED":
            continue
        target = selected(line)
        capture = min(truth.captures_ns, key=lambda c: abs(c - target["capture_ns"]), default=None)
        if capture is None or abs(capture - target["capture_ns"]) > ACCURACY_MS * 1e6:
            found.append(f"world {line['seq']}: capture {target['capture_ns']} matches no frame")
            continue
        age_ms = (line["host_ns"] - capture) / 1e6
        if age_ms > ttl_ms + ACCURACY_MS:
            found.append(f"world {line['seq']}: target truly {age_ms:.1f} ms old")
        north, east, _down = truth.position(capture)
        error_m = math.dist(target["position_ned_m"], (north, east, 0.0))
        if error_m > POSITION_TOL_M:
            found.append(f"world {line['seq']}: position {error_m:.2f} m off the truth")
        if any(capture < b <= line["host_ns"] for b in breaks):
            found.append(f"world {line['seq']}: target captured before a link DOWN/SILENT")
    return found


def proceeds(messages: list[dict]) -> list[dict]:
    return [w for w in messages if w["type"] == "world" and w["verdict"] == "PROCEED"]


async def scenario(link_path, tmp_path, make_for: Callable[[int], Make], body, *extra):
    """Run ``gizmo-host run``, the board and CopterSim; ``body(run, board, poses)`` attacks."""
    copter_id = free_copter_id()
    odometry = "--rflysim-request-odometry-hz" in extra
    port = (ports.coptersim_reply_port if odometry else ports.coptersim_state_port)(copter_id)
    truth = Truth()
    with PtyBoard(link_path) as pty:
        run = await start(link_path, tmp_path, copter_id, *extra)
        poses = Poses(port, make_for(copter_id))
        stop_poses = asyncio.Event()
        sender = asyncio.create_task(poses.run(stop_poses, truth))
        try:
            await body(run, Board(pty, truth), poses)
        finally:
            stop_poses.set()
            await sender
        messages = await stop(run)
    return messages, truth


def honest_state(copter_id: int) -> Make:
    def make(i: int, sim_time_s: float, position) -> list[bytes]:
        return [state(copter_id, sim_time_s, position)]

    return make


def first_proceed(msg: dict) -> bool:
    return msg["type"] == "world" and msg["verdict"] == "PROCEED"


def run_world(messages: list[dict]) -> list[dict]:
    return [w for w in messages if w["type"] == "world"]
