"""The range and gimbal attack rig for gizmo-host run: a pty board, a Config.json with distance,
LiDAR and gimbal sensors, CopterSim and sensor UDP, and the truth the tests judge world lines
against (no fusion code in it).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import math
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fusion.timeline import PoseAt
from gizmo_host.rigs.board import PtyBoard
from gizmo_host.rigs.free_ports import free_ports, port_is_free
from gizmo_host.rigs.rflysim.builders import sensor_datagrams
from rfly_link import messages as m
from rfly_link import ports
from rfly_link.config_json import VisionSensorConfig, parse_config
from tests.support.coptersim import free_copter_id
from tests.support.run_process import Run, spawn_run
from tests.support.world_attacks import (
    ACCURACY_MS,
    LOCK_TOML,
    SELECT,
    SPEED_M_S,
    TTL_MS,
    Board,
    Poses,
    Truth,
    proceeds,
    selected,
    state,
    stop,
)

RANGE_MAX_AGE_MS = 100.0


TOLERANCE_M = 0.3


LASER_SEQ, GIMBAL_SEQ = 2, 4


@dataclass
class Scene(Truth):
    """The truth, climbing at ``climb_m_s``; the target where the camera's axis meets the
    ground at ``gimbal_pitch_deg(t)`` (-90: straight below)."""

    climb_m_s: float = 0.0
    box_x: int = 0  # the board's box centre (x; off centre only with the camera straight down)
    pitches: list[tuple[int, float]] = field(default_factory=list)  # (host_ns, pitch) sent
    laser_ns: list[int] = field(default_factory=list)  # honest laser readings' true times

    def position(self, host_ns: int) -> tuple[float, float, float]:
        north, east, down = super().position(host_ns)
        return (north, east, down - self.climb_m_s * (host_ns - self.t0_ns) / 1e9)

    def pitch_deg(self, host_ns: int) -> float:
        before = [p for t, p in self.pitches if t <= host_ns]
        return before[-1] if before else -90.0

    def target(self, capture_ns: int) -> tuple[float, float, float]:
        north, east, down = self.position(capture_ns)
        if self.box_x:  # straight down, nose north: the image's right is east; 640 px, fx 320
            assert self.pitch_deg(capture_ns) == -90.0
            return (north, east - down * ((self.box_x + 1000) * 639 / 2000 - 319.5) / 320, 0.0)
        below = math.radians(-self.pitch_deg(capture_ns))
        return (north - down / math.tan(below), east, 0.0)


def sensor_entry(seq: int, type_id: int, copter: int, port: int, **over) -> dict:
    entry = {
        "SeqID": seq,
        "TypeID": type_id,
        "TargetCopter": copter,
        "TargetMountType": 0,
        "DataWidth": 0,
        "DataHeight": 0,
        "DataCheckFreq": 50,
        "SendProtocol": [1, 127, 0, 0, 1, port, 0, 0],
        "CameraFOV": 0.0,
        "SensorPosXYZ": [0.0, 0.0, 0.0],
        "EularOrQuat": 0,
        "SensorAngEular": [0.0, -90.0, 0.0],
        "SensorAngQuat": [1, 0, 0, 0],
        "otherParams": [100] + [0] * 15,
    }
    entry.update(over)
    return entry


@dataclass
class Rig:
    run: Run
    board: Board
    scene: Scene
    poses: Poses
    laser: Poses
    gimbal: Poses | None
    laser_sensor: VisionSensorConfig


Make = Callable[[int, float, tuple[float, float, float]], list[bytes]]


MakeFor = Callable[[int, Scene, VisionSensorConfig], Make]


async def start_run(link_path: str, tmp_path, copter: int, text: str, toml: str) -> Run:
    (tmp_path / "Config.json").write_text(text)
    config = tmp_path / "gizmo.toml"
    config.write_text(
        f"{LOCK_TOML}[store]\nttl_ms = {TTL_MS}\n"
        f'[verdict]\nselect = "{SELECT}"\ninterval_s = 0.2\n'
        f'[rflysim]\ncopter_id = {copter}\nconfig = "{tmp_path / "Config.json"}"\n' + toml
    )
    return await spawn_run(
        link_path,
        config,
        *("--stats-interval-s", "0.2", "--event-loop", "asyncio"),
        ready=lambda msg: msg["type"] == "world",  # the receivers are bound
        stderr=asyncio.subprocess.PIPE,
    )


CAMERA_DOWN = (
    "[camera]\nwidth_px = 640\nheight_px = 480\nhfov_deg = 90.0\n"
    "mount_rpy_deg = [0.0, -90.0, 0.0]\nmount_position_frd_m = [0.0, 0.0, 0.0]\n"
)


CAMERA_ON_GIMBAL = f"[camera]\nrflysim_sensor = {GIMBAL_SEQ}\non_gimbal = true\n"


def gimbal_port_free() -> bool:
    return port_is_free(ports.RFLYSIM3D_OUT_PORT)


@contextlib.contextmanager
def gimbal_port_turn() -> Iterator[None]:
    """The gimbal status's fixed port (RflySim3D's 20006) for one test at a time among the
    suite's workers (a lock file), so that none finds it taken by another and skips."""
    path = Path(tempfile.gettempdir()) / "gizmo-host-tests-port-20006.lock"
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


async def scenario(
    link_path, tmp_path, body: Callable[[Rig], Awaitable[None]], **options: Any
) -> tuple[list[dict], Scene]:
    """``_scenario``'s, with the gimbal's port to itself when it has a gimbal."""
    with gimbal_port_turn() if options.get("gimbal") is not None else contextlib.nullcontext():
        return await _scenario(link_path, tmp_path, body, **options)


async def _scenario(
    link_path,
    tmp_path,
    body: Callable[[Rig], Awaitable[None]],
    *,
    laser: MakeFor,
    gimbal: MakeFor | None = None,
    world: str = "",
    climb_m_s: float = 0.0,
    box_x: int = 0,
) -> tuple[list[dict], Scene]:
    """The run, the board, the poses, the laser and (``gimbal``) the gimbal status, for
    ``body`` to drive; the lines published and the truth."""
    copter = free_copter_id()
    laser_port = free_ports()[0]
    sensors = [sensor_entry(LASER_SEQ, 5, copter, laser_port)]
    if gimbal is not None:
        if not gimbal_port_free():
            pytest.skip("port 20006 (the gimbal status) is taken here")
        sensors.append(
            sensor_entry(
                GIMBAL_SEQ,
                9,
                copter,
                free_ports()[0],
                DataWidth=640,
                DataHeight=480,
                CameraFOV=90.0,
            )
        )
    text = json.dumps({"VisionSensors": sensors})
    laser_sensor = next(s for s in parse_config(text, source="test").sensors if s.seq_id == 2)
    scene = Scene(climb_m_s=climb_m_s, box_x=box_x)
    camera = CAMERA_ON_GIMBAL if gimbal is not None else CAMERA_DOWN
    toml = camera + "[world]\nrate_hz = 50\n" + world
    velocity = (SPEED_M_S, 0.0, -climb_m_s)

    def poses_make(i: int, sim_time_s: float, position) -> list[bytes]:
        return [state(copter, sim_time_s, position, velocity_ned_m_s=velocity)]

    with PtyBoard(link_path) as pty:
        run = await start_run(link_path, tmp_path, copter, text, toml)
        senders = [
            Poses(ports.coptersim_state_port(copter), poses_make),
            Poses(laser_port, laser(copter, scene, laser_sensor)),
        ]
        if gimbal is not None:
            senders.append(Poses(ports.RFLYSIM3D_OUT_PORT, gimbal(copter, scene, laser_sensor)))
        done = asyncio.Event()
        tasks = [asyncio.create_task(s.run(done, scene)) for s in senders]
        try:
            board = Board(pty, scene)
            board.box["x"] = box_x
            rig = Rig(run, board, scene, senders[0], senders[1], None, laser_sensor)
            rig.gimbal = senders[2] if gimbal is not None else None
            await body(rig)
        finally:
            done.set()
            await asyncio.gather(*tasks)
        messages = await stop(run)
    return messages, scene


async def until_proceed(rig: Rig, then_s: float, limit_s: float = 10.0) -> None:
    """Frames until a world line PROCEEDs with a position (the clocks have locked: ~0.5 s
    alone, longer on a busy machine, so the limit is generous), then ``then_s`` more."""
    for _ in range(round(limit_s / 0.1)):
        if any(selected(w)["position_ned_m"] for w in proceeds(rig.run.messages)):
            break
        await rig.board.stream(0.1)
    await rig.board.stream(then_s)


def laser_frame(sensor, copter: int, distance_m: float, sim_time_s: float, i: int) -> list[bytes]:
    payload = m.DistanceSensor(distance_m=distance_m, copter_id=copter).encode()
    return sensor_datagrams(sensor, payload, i, sim_time_s)


def honest_laser(copter: int, scene: Scene, sensor) -> Make:
    """The laser straight down over flat ground: the altitude at its simulation time."""

    def make(i: int, sim_time_s: float, position) -> list[bytes]:
        scene.laser_ns.append(scene.t0_ns + round((sim_time_s - 1000.0) * 1e9))
        return laser_frame(sensor, copter, -position[2], sim_time_s, i)

    return make


def laser_reading(distance_m: float, *, frame_time_s: float | None = None) -> MakeFor:
    """One reading of ``distance_m`` a tick (at the tick's simulation time, or with the frame
    time ``frame_time_s``), after the honest one when the frame time is the true one."""

    def make_for(copter: int, scene: Scene, sensor) -> Make:
        honest = honest_laser(copter, scene, sensor)

        def make(i: int, sim_time_s: float, position) -> list[bytes]:
            t = sim_time_s if frame_time_s is None else frame_time_s
            first = honest(i, sim_time_s, position) if frame_time_s is None else []
            return [*first, *laser_frame(sensor, copter, distance_m, t, i + 500_000)]

        return make

    return make_for


def judge(messages: list[dict], scene: Scene) -> list[str]:
    """Every PROCEED world line that broke the promise: a capture no frame made or older than
    the TTL, a position off the truth, a laser range from no honest reading near the capture."""
    found = []
    for line in proceeds(messages):
        target = selected(line)
        capture = min(scene.captures_ns, key=lambda c: abs(c - target["capture_ns"]), default=None)
        if capture is None or abs(capture - target["capture_ns"]) > ACCURACY_MS * 1e6:
            found.append(f"world {line['seq']}: capture {target['capture_ns']} matches no frame")
            continue
        age_ms = (line["host_ns"] - capture) / 1e6
        if age_ms > TTL_MS + ACCURACY_MS:
            found.append(f"world {line['seq']}: target truly {age_ms:.1f} ms old")
        position = target["position_ned_m"]
        if position is None:
            continue
        error_m = math.dist(position, scene.target(capture))
        if not error_m <= TOLERANCE_M:
            found.append(
                f"world {line['seq']}: position {error_m:.2f} m off the truth "
                f"({target['range_source']}, range {target['range_m']})"
            )
        if target["range_source"] == "laser":
            gap_ms = min((abs(t - capture) / 1e6 for t in scene.laser_ns), default=math.inf)
            if gap_ms > RANGE_MAX_AGE_MS + ACCURACY_MS:
                found.append(f"world {line['seq']}: laser range from a reading {gap_ms:.0f} ms off")
    return found


def sources(messages: list[dict]) -> set[str | None]:
    return {selected(w)["range_source"] for w in proceeds(messages)}


def hostile_laser(copter: int, scene: Scene, sensor) -> Make:
    """The honest laser among readings that must never count: no return as 0, negative, NaN
    and infinite distances, another vehicle's 3 m, and an honest distance whose frame time is
    """
    honest = honest_laser(copter, scene, sensor)
    junk = [0.0, -5.0, math.nan, math.inf, -math.inf]

    def make(i: int, sim_time_s: float, position) -> list[bytes]:
        return [
            *honest(i, sim_time_s, position),
            *laser_frame(sensor, copter, junk[i % len(junk)], sim_time_s, i + 100_000),
            *laser_frame(sensor, copter + 1, 3.0, sim_time_s, i + 200_000),
        ]

    return make


def silent_laser(copter: int, scene: Scene, sensor) -> Make:
    return lambda i, sim_time_s, position: []


def gimbal_status(copter: int, seq: int, pitch_deg: float, fx: float, laser_m: float) -> bytes:
    other = [0.0] * 16
    other[3], other[4], other[7] = fx, fx, laser_m
    return m.GimbalStatus(
        seq_id=seq,
        type_id=9,
        target_copter=copter,
        eular_or_quat=0.0,
        sensor_ang_eular=(0.0, pitch_deg, 0.0),
        other_params=tuple(other),
    ).encode()


def gimbal(pitch_at: Callable[[int], float], *, hostile: bool = False) -> MakeFor:
    """The gimbal status at 100 Hz, pitch ``pitch_at(tick)``, with the true slant range to
    the target as its laser range; ``hostile``: each also with garbage intrinsics (NaN, 0,
    negative), and statuses of another gimbal (SeqID 5) and another vehicle looking forward."""

    def make_for(copter: int, scene: Scene, sensor) -> Make:
        garbage = [math.nan, 0.0, -320.0, math.inf]

        def make(i: int, sim_time_s: float, position) -> list[bytes]:
            pitch = pitch_at(i)
            now = scene.t0_ns + round((sim_time_s - 1000.0) * 1e9)
            scene.pitches.append((now, pitch))
            slant = -position[2] / math.sin(math.radians(-pitch))
            fx = garbage[i % len(garbage)] if hostile else 320.0
            out = [gimbal_status(copter, GIMBAL_SEQ, pitch, fx, slant)]
            if hostile:
                out.append(gimbal_status(copter, GIMBAL_SEQ + 1, -30.0, 320.0, 5.0))
                out.append(gimbal_status(copter + 1, GIMBAL_SEQ, -30.0, 320.0, 5.0))
            return out

        return make

    return make_for


def level_pose(t_ns: int) -> PoseAt:
    return PoseAt(t_ns, (0.0, 0.0, -20.0), (1.0, 0.0, 0.0, 0.0), None, 0)
