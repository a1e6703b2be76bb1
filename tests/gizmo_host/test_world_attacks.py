"""Attacks on the ``world`` lines of ``gizmo-host run`` ([camera] + [rflysim]), as a hostile or
clumsy board and simulator would mount them: a real pty for the board, loopback UDP in
CopterSim's real wire formats for the pose, ``world`` lines read from the process's stdout.

Ground truth, on the host's monotonic clock: the vehicle flies north at ``SPEED_M_S`` from NED
(10, 5, -20) at host time ``t0``, level, nose north; the camera looks straight down and the
board reports its target at the image centre, so the target truly lies at
(north(t_capture), 5, 0). Every PROCEED world line is judged against that truth: the selected
target's true capture is within the TTL, its position is where the truth put it at that
capture, and no link DOWN or SILENT came between the capture and the verdict.
"""

from __future__ import annotations

import asyncio
import math
import random
import signal
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from gizmo_host.emulator import BoardModel, PtyBoard
from rfly_link import messages as m
from rfly_link import ports

from .test_safety_e2e import Run, spawn_run

TIMEOUT_S = 10.0
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


def free_copter_id() -> int:
    """A CopterID whose state and reply ports are both free here."""
    ids = list(range(300, ports.MAX_COPTERS + 1))
    random.Random().shuffle(ids)
    for copter_id in ids[:60]:
        probes = []
        try:
            for port in (
                ports.coptersim_state_port(copter_id),
                ports.coptersim_reply_port(copter_id),
            ):
                probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                probes.append(probe)
                probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for probe in probes:
                probe.close()
        return copter_id
    pytest.skip("no free CopterSim ports on 127.0.0.1")


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
        f"[store]\nttl_ms = {TTL_MS}\n"
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

    def send(self, **fields: int) -> None:
        now = time.monotonic_ns()
        result = self.model.next_result(now_ns=now, x=0, y=0, w=100, h=100, **fields)
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


def test_old_target_never_proceeds_after_link_silent(link_path, tmp_path):
    """The board goes quiet (SILENT), then comes back with another key only. The target seen
    before the silence is within its (long) TTL, but it predates the break: README rule 2
    ("nothing received before the latest link DOWN (or SILENT) ... justifies a PROCEED")."""
    ttl_ms = 1000.0

    async def body(run: Run, board: Board, poses: Poses) -> None:
        await board.stream(1.2)
        await run.wait_for(first_proceed)
        await run.wait_for(lambda msg: msg["type"] == "link" and msg["state"] == "SILENT")
        await board.stream(0.4, result_type=1, id=3)  # a colour blob: not the watched key

    messages, truth = asyncio.run(
        scenario(
            link_path, tmp_path, honest_state, body, "--silent-after-s", "0.15", "--ttl-ms", "1000"
        )
    )
    silent = next(msg for msg in messages if msg["type"] == "link" and msg["state"] == "SILENT")
    after_world = [w for w in proceeds(messages) if w["host_ns"] > silent["host_ns"]]
    after_verdict = [
        v
        for v in messages
        if v["type"] == "verdict"
        and v["decision"] == "PROCEED"
        and v["host_ns"] > silent["host_ns"]
    ]
    assert after_verdict == []  # the stream-level verdict keeps the promise
    assert violations(messages, truth, ttl_ms) == []
    assert after_world == []


def test_poses_turning_300_ms_late_never_give_old_positions_as_current(link_path, tmp_path):
    """Mid-flight every pose arrives 300 ms late with its true simulation time: a latency rise
    (README: the sim clock never moves towards "fresher" except at a new epoch, which is an
    odometry discontinuity or a sim-time reset)."""

    async def body(run: Run, board: Board, poses: Poses) -> None:
        await board.stream(0.3)  # the pose clock has locked; the device clock is locking
        poses.delay_s = 0.3
        await board.stream(1.6)

    messages, truth = asyncio.run(scenario(link_path, tmp_path, honest_state, body))
    assert any("clock_jump" in w["reasons"] for w in messages if w["type"] == "world")
    assert violations(messages, truth) == []


NAN, INF = math.nan, math.inf


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(x for x in status if x.startswith("VmRSS:"))
    return int(line.split()[1])


def junk_state(copter_id: int) -> Make:
    """The honest state, each tick among hostile datagrams: the same state again, another
    vehicle's state far away, a non-finite value in every float field in turn, a simulation
    time that is not a number, infinite or huge, truncated and foreign bytes, and a burst of
    junk (~5,000 datagrams/s in all)."""
    bad_fields = [
        ("velocity_ned_m_s", (NAN, 0.0, 0.0)),
        ("euler_rad", (INF, 0.0, 0.0)),
        ("quaternion_wxyz", (NAN, NAN, NAN, NAN)),
        ("runned_time_s", NAN),
        ("runned_time_s", INF),
        ("runned_time_s", 1e300),
        ("runned_time_s", -1e12),
        ("position_ned_m", (NAN, 0.0, 0.0)),
        ("position_ned_m", (0.0, -INF, 0.0)),
        ("quaternion_wxyz", (2.0, 0.0, 0.0, 0.0)),  # not unit: the Euler angles apply
    ]

    def make(i: int, sim_time_s: float, position) -> list[bytes]:
        honest = state(copter_id, sim_time_s, position)
        name, value = bad_fields[i % len(bad_fields)]
        # No attitude besides the field under test (a valid pose elsewhere at the same time
        # would be a conflict, which holds: see test_world_pose_attacks).
        no_attitude = {"euler_rad": (NAN, NAN, NAN), "quaternion_wxyz": (NAN, NAN, NAN, NAN)}
        bad = {"position_ned_m": (0.0, 0.0, 0.0), **no_attitude, name: value}
        return [
            honest,
            honest,
            state(copter_id + 1, sim_time_s, (500.0, -300.0, -7.0)),
            state(copter_id, sim_time_s, position, **bad)
            if name != "quaternion_wxyz"
            else state(copter_id, sim_time_s, position, quaternion_wxyz=value),
            honest[:100],
            honest + b"\x00",
            struct.pack("<i", 12345678) + bytes(164),
            *(bytes([k]) * (k % 200 + 1) for k in range(40)),
        ]

    return make


def test_hostile_coptersim_datagrams_never_move_the_truth_and_a_stopped_pose_holds(
    link_path, tmp_path
):
    """PROCEED on true positions through the junk; the loop survives it; when the pose stream
    stops while vision continues the world HOLDs (pose_stale) within the pose TTL."""
    marks: dict[str, int] = {}

    async def body(run: Run, board: Board, poses: Poses) -> None:
        await board.stream(1.2)
        await run.wait_for(first_proceed)
        marks["rss_kb"] = rss_kb(run.proc.pid)
        marks["sent"] = poses.sent
        await board.stream(0.3)
        marks["rss_growth_kb"] = rss_kb(run.proc.pid) - marks["rss_kb"]
        marks["sent"] = poses.sent - marks["sent"]
        poses.paused = True
        marks["paused"] = time.monotonic_ns()
        await board.stream(0.4)
        line = await run.wait_for(
            lambda msg: msg["type"] == "world" and msg["host_ns"] > marks["paused"] + 300e6
        )
        assert line["verdict"] == "HOLD" and "pose_stale" in line["reasons"], line

    messages, truth = asyncio.run(scenario(link_path, tmp_path, junk_state, body))
    assert violations(messages, truth) == []
    assert marks["sent"] > 1000
    assert marks["rss_growth_kb"] < 16_000, marks
    print(marks)  # the flood is not buffered without bound
    world = run_world(messages)
    assert [w["seq"] for w in world] == list(range(1, len(world) + 1))
    before = [w for w in proceeds(messages) if w["host_ns"] < marks["paused"]]
    assert len(before) >= 5
    for line in before:
        assert line["vehicle"]["copter_id"] != 0
        assert line["sources"]["pose"]["state"] in ("OK", "FAULT")  # FAULT: the duplicates
    last_pose_ns = max(w["vehicle"]["time_ns"] for w in world if w["vehicle"])
    late = proceeds([w for w in world if w["host_ns"] > last_pose_ns + 255e6])
    assert late == []
    stats = [s for s in messages if s["type"] == "stats" and "world" in s][-1]["world"]
    rfly = stats["rflysim"]
    assert rfly["other_copter"] > 0 and rfly["dropped_invalid"] > 0
    assert sum(sum(r["drops"].values()) for r in rfly["receivers"].values()) > 1000
    assert stats["input_errors"] == 0


def run_world(messages: list[dict]) -> list[dict]:
    return [w for w in messages if w["type"] == "world"]


def discontinuous_odometry(copter_id: int) -> Make:
    """Odometry with the discontinuity bit on every reply, every other tick also the previous
    reply again (a duplicate arriving late, reordered) and one of another vehicle."""
    previous: list[bytes] = []

    def make(i: int, sim_time_s: float, position) -> list[bytes]:
        flags = ODOM_VALID | int(m.OdomFlags.DISCONTINUITY)
        out = [odom(copter_id, i, sim_time_s, position, flags=flags)]
        out.append(odom(copter_id + 1, i, sim_time_s, (0.0, 0.0, 0.0)))
        if i % 2 and previous:
            out.append(previous[0])
        previous[:] = out[:1]
        return out

    return make


def test_odometry_discontinuity_on_every_reply_never_gives_a_false_position(link_path, tmp_path):
    async def body(run: Run, board: Board, poses: Poses) -> None:
        await board.stream(1.1)
        await run.wait_for(lambda msg: msg["type"] == "world" and msg["vehicle"] is not None)

    messages, truth = asyncio.run(
        scenario(
            link_path,
            tmp_path,
            discontinuous_odometry,
            body,
            "--rflysim-request-odometry-hz",
            "100",
        )
    )
    assert violations(messages, truth) == []
    stats = [s for s in messages if s["type"] == "stats" and "world" in s][-1]["world"]
    assert stats["model"]["pose_epochs"] > 40
    assert stats["rflysim"]["other_copter"] > 40


def sim_time_games(copter_id: int) -> Make:
    """From tick 110 on, in a cycle of 40 ticks: the simulation time leaps 5 s ahead for 3
    ticks (no discontinuity flag) and falls back; 150 ms ahead for one tick and back; runs
    backwards by 1 ms a tick for 4 ticks; then honest again."""

    def make(i: int, sim_time_s: float, position) -> list[bytes]:
        k = (i - 110) % 40 if i >= 110 else -1
        if 0 <= k < 3:
            sim_time_s += 5.0
        elif k == 10:
            sim_time_s += 0.15
        elif 20 <= k < 24:
            sim_time_s = 1000.0 + (110 + 40 * ((i - 110) // 40) + 20) * POSE_PERIOD_S - k * 1e-3
        return [state(copter_id, sim_time_s, position)]

    return make


def test_sim_time_leaping_and_running_backwards_never_gives_a_false_position(link_path, tmp_path):
    async def body(run: Run, board: Board, poses: Poses) -> None:
        await board.stream(1.9)

    messages, truth = asyncio.run(scenario(link_path, tmp_path, sim_time_games, body))
    assert violations(messages, truth) == []
    world = run_world(messages)
    clock = [s for s in messages if s["type"] == "stats" and "world" in s][-1]["world"]
    clock = clock["rflysim"]["sim_clocks"]["state"]
    # The leaps are outliers, never the newest sim time. (The steps back are stamped from the
    # tick count, which lags real time as the sender's sleeps overrun: once that lag passes
    # the reorder window they are restarts, each a new epoch that locks again.)
    assert clock["outliers"] > 0, clock
    for line in world:  # an old pose is never shown as the vehicle's current one
        vehicle = line["vehicle"]
        if vehicle is not None and line["verdict"] == "PROCEED":
            true_north = truth.position(vehicle["time_ns"])[0]
            assert abs(vehicle["position_ned_m"][0] - true_north) < POSITION_TOL_M, line


def test_unplug_replug_while_poses_flow_never_proceeds_on_pre_down_vision(link_path, tmp_path):
    ttl_ms = 1500.0

    async def body(run: Run, board: Board, poses: Poses) -> None:
        await board.stream(1.2)
        await run.wait_for(first_proceed)
        board.pty.unplug()
        await run.wait_for(lambda msg: msg["type"] == "link" and msg["state"] == "DOWN")
        board.pty.plug()
        await run.wait_for(lambda msg: msg["type"] == "link" and msg["state"] == "SYNCING")
        await board.stream(0.6, result_type=1, id=3)  # another key only

    messages, truth = asyncio.run(
        scenario(link_path, tmp_path, honest_state, body, "--ttl-ms", str(ttl_ms))
    )
    assert violations(messages, truth, ttl_ms) == []
    down = next(msg for msg in messages if msg["type"] == "link" and msg["state"] == "DOWN")
    after = [w for w in run_world(messages) if w["host_ns"] > down["host_ns"]]
    assert after and all(w["verdict"] == "HOLD" for w in after)
    assert any(w["vehicle"] is not None and w["sources"]["pose"]["state"] == "OK" for w in after)


def test_device_reset_while_poses_flow_holds_and_bars_older_vision(link_path, tmp_path):
    ttl_ms = 1500.0
    marks: dict[str, int] = {}

    async def body(run: Run, board: Board, poses: Poses) -> None:
        await board.stream(1.2)
        await run.wait_for(first_proceed)
        board.model.reset()
        marks["reset"] = time.monotonic_ns()
        await board.stream(0.4, result_type=1, id=3)  # another key only

    messages, truth = asyncio.run(
        scenario(link_path, tmp_path, honest_state, body, "--ttl-ms", str(ttl_ms))
    )
    assert violations(messages, truth, ttl_ms) == []
    after = [w for w in run_world(messages) if w["host_ns"] > marks["reset"] + 50e6]
    assert after and all(w["verdict"] == "HOLD" for w in after)
    assert any("device_reset" in w["reasons"] for w in after)
