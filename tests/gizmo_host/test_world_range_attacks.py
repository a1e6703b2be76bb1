"""Attacks on the ranges and the gimbal of the ``world`` lines of ``gizmo-host run`` ([camera],
[rflysim] with a Config.json): the distance sensor (TypeID 5) on its own UDP port, the gimbal
status on port 20006, both in RflySim's wire formats over loopback UDP, the board on a pty.

Ground truth (host monotonic clock, as in ``test_world_attacks``): the vehicle flies north at
4 m/s from NED (10, 5, -20) at ``t0``, level, nose north, here optionally climbing; the camera
(or the gimbal) and the laser look straight down unless a test tilts them, and the board
reports its target at the image centre. Every PROCEED world line with a position is judged
against the truth at its capture time, and a ``laser`` range must come from an honest reading
within ``range_max_age_ms`` of that capture. LiDAR is not wired into ``gizmo-host run``: its
attacks and the grazing ground-plane rays go to ``fusion`` directly.
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np
import pytest

from fusion import InvalidInput, LidarPoints
from fusion.config import WorldConfig
from fusion.inputs import PointFrame
from fusion.ranging import Ranger, ground_plane_range
from fusion.timeline import PoseAt
from gizmo_host.emulator import PtyBoard
from rfly_link import messages as m
from rfly_link import ports
from rfly_link.config import VisionSensorConfig, parse_config
from rfly_link.sim.builders import sensor_datagrams
from tests.support.coptersim import free_copter_id
from tests.support.run_process import Run, spawn_run
from tests.support.world_attacks import (
    ACCURACY_MS,
    SELECT,
    SPEED_M_S,
    TTL_MS,
    Board,
    Poses,
    Truth,
    proceeds,
    run_world,
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
        below = math.radians(-self.pitch_deg(capture_ns))
        return (north - down / math.tan(below), east, 0.0)


def free_port() -> int:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
    finally:
        probe.close()


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
        f"[store]\nttl_ms = {TTL_MS}\n"
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
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.bind(("127.0.0.1", ports.RFLYSIM3D_OUT_PORT))
    except OSError:
        return False
    finally:
        probe.close()
    return True


async def scenario(
    link_path,
    tmp_path,
    body: Callable[[Rig], Awaitable[None]],
    *,
    laser: MakeFor,
    gimbal: MakeFor | None = None,
    world: str = "",
    climb_m_s: float = 0.0,
) -> tuple[list[dict], Scene]:
    copter = free_copter_id()
    laser_port = free_port()
    sensors = [sensor_entry(LASER_SEQ, 5, copter, laser_port)]
    if gimbal is not None:
        if not gimbal_port_free():
            pytest.skip("port 20006 (the gimbal status) is taken here")
        sensors.append(
            sensor_entry(
                GIMBAL_SEQ, 9, copter, free_port(), DataWidth=640, DataHeight=480, CameraFOV=90.0
            )
        )
    text = json.dumps({"VisionSensors": sensors})
    laser_sensor = next(s for s in parse_config(text, source="test").sensors if s.seq_id == 2)
    scene = Scene(climb_m_s=climb_m_s)
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
            rig = Rig(run, Board(pty, scene), scene, senders[0], senders[1], None, laser_sensor)
            rig.gimbal = senders[2] if gimbal is not None else None
            await body(rig)
        finally:
            done.set()
            await asyncio.gather(*tasks)
        messages = await stop(run)
    return messages, scene


async def until_proceed(rig: Rig, then_s: float, limit_s: float = 2.5) -> None:
    """Frames until a world line PROCEEDs with a position (the clocks have locked), then
    ``then_s`` more."""
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


@pytest.mark.subprocess
@pytest.mark.realtime
def test_laser_that_stops_is_not_carried_forward_and_junk_never_counts(link_path, tmp_path):
    """Ground plane off: the laser is the only range. While it reads, positions are true
    (climbing at 5 m/s: a 100 ms old range would be 0.5 m off); once it stops the position
    turns null within the range age bound, while the vision keeps PROCEEDing on bearing."""
    marks: dict[str, int] = {}

    async def body(rig: Rig) -> None:
        await until_proceed(rig, 0.2)
        rig.laser.paused = True
        marks["stopped"] = time.monotonic_ns()
        await rig.board.stream(0.5)

    messages, scene = asyncio.run(
        scenario(
            link_path,
            tmp_path,
            body,
            laser=hostile_laser,
            world="ground_plane = false\n",
            climb_m_s=5.0,
        )
    )
    assert judge(messages, scene) == []
    laser_lines = [w for w in proceeds(messages) if selected(w)["range_source"] == "laser"]
    assert len(laser_lines) >= 5
    last_laser = max(scene.laser_ns)
    late = [w for w in proceeds(messages) if selected(w)["capture_ns"] > last_laser + 130e6]
    assert late, "vision kept PROCEEDing after the laser stopped"
    assert {selected(w)["range_source"] for w in late} == {None}
    assert all(selected(w)["position_ned_m"] is None for w in late)
    stats = [s for s in messages if s["type"] == "stats" and "world" in s][-1]["world"]
    assert stats["rflysim"]["other_copter"] > 10


@pytest.mark.subprocess
@pytest.mark.realtime
def test_laser_turning_300_ms_late_is_not_used_as_current(link_path, tmp_path):
    """Mid-flight every laser frame arrives 300 ms late with its true frame time: the sensor's
    sim clock keeps its mapping, so the readings are 300 ms from every capture and unused."""
    marks: dict[str, int] = {}

    async def body(rig: Rig) -> None:
        await until_proceed(rig, 0.2)
        rig.laser.delay_s = 0.3
        marks["late"] = time.monotonic_ns()
        await rig.board.stream(0.5)

    messages, scene = asyncio.run(
        scenario(link_path, tmp_path, body, laser=honest_laser, climb_m_s=5.0)
    )
    assert judge(messages, scene) == []
    before = [w for w in proceeds(messages) if selected(w)["capture_ns"] < marks["late"] - 50e6]
    after = [w for w in proceeds(messages) if selected(w)["capture_ns"] > marks["late"] + 150e6]
    assert "laser" in sources(before)
    assert after and sources(after) == {"ground_plane"}


@pytest.mark.subprocess
@pytest.mark.realtime
def test_laser_beyond_any_range_is_not_used(link_path, tmp_path):
    """A distance frame of 1e6 m (the Config.json range is 100 m) at the honest frame's time.

    Broken: ``LaserRange`` takes any finite distance and the beam test accepts it; measured
    24/24 PROCEED lines with range_source laser, range_m 1e6, 999,980 m off the truth (3e38
    m: 3e38 m off). Neither the sensor's range (otherParams[0]) nor a plausibility bound
    applies, and of two readings at one time the later one wins.
    """

    async def body(rig: Rig) -> None:
        await until_proceed(rig, 0.2)

    messages, scene = asyncio.run(scenario(link_path, tmp_path, body, laser=laser_reading(1e6)))
    assert judge(messages, scene) == []


@pytest.mark.subprocess
@pytest.mark.realtime
def test_laser_frame_with_an_untimeable_frame_time_is_not_used(link_path, tmp_path):
    """Distance frames whose header time is NaN (the only laser), reading 3 m.

    Broken: the adapter cannot map the time and stamps the reading at its arrival instead
    (``RflyAdapter._distance``: ``host_ns = rx_ns``); measured 15/15 PROCEED lines placed with
    it, range 3.0 m, 17.0 m off the truth. With honest frames too, the untimed one wins when
    its arrival is nearer the capture: 2-12 of 20-23 lines, 17.0 m off.
    """

    async def body(rig: Rig) -> None:
        await until_proceed(rig, 0.2)

    messages, scene = asyncio.run(
        scenario(link_path, tmp_path, body, laser=laser_reading(3.0, frame_time_s=math.nan))
    )
    assert judge(messages, scene) == []


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


@pytest.mark.subprocess
@pytest.mark.realtime
def test_gimbal_that_stops_holds_and_foreign_statuses_never_count(link_path, tmp_path):
    """Camera on the gimbal (SeqID 4), laser silent: the gimbal laser ranges. Statuses of
    another gimbal and another vehicle (looking forward, 5 m) and garbage focal lengths never
    move a position; when the statuses stop while vision continues, positions stop within
    ``gimbal_max_age_ms`` (100) and the world HOLDs."""
    marks: dict[str, int] = {}

    async def body(rig: Rig) -> None:
        await until_proceed(rig, 0.2)
        assert rig.gimbal is not None
        rig.gimbal.paused = True
        marks["stopped"] = time.monotonic_ns()
        await rig.board.stream(0.4)

    messages, scene = asyncio.run(
        scenario(
            link_path,
            tmp_path,
            body,
            laser=silent_laser,
            gimbal=gimbal(lambda i: -90.0, hostile=True),
        )
    )
    assert judge(messages, scene) == []
    assert "gimbal_laser" in sources(messages) <= {"gimbal_laser", "ground_plane", None}
    last_status = scene.pitches[-1][0]
    late = [w for w in run_world(messages) if w["host_ns"] > last_status + 150e6]
    assert late and all(w["verdict"] == "HOLD" for w in late)
    for line in late:
        assert all(t["position_ned_m"] is None for t in line["targets"]), line
    stats = [s for s in messages if s["type"] == "stats" and "world" in s][-1]["world"]
    assert stats["rflysim"]["other_gimbal"] > 10 and stats["rflysim"]["other_copter"] > 10


def level_pose(t_ns: int) -> PoseAt:
    return PoseAt(t_ns, (0.0, 0.0, -20.0), (1.0, 0.0, 0.0, 0.0), None, 0)


def test_lidar_non_finite_points_are_a_typed_error_and_only_the_newest_scan_counts():
    """(LiDAR is not wired into ``gizmo-host run``: the fusion side.) A cloud with a NaN point
    is refused naming the field; a scan arriving after a newer one does not replace it; a scan
    older than ``lidar_max_age_ms`` gives no range, so the ground plane does."""
    with pytest.raises(InvalidInput, match="points_m"):
        LidarPoints(0, np.array([[1.0, 0.0, math.nan]]), PointFrame.WORLD_NED)
    with pytest.raises(InvalidInput, match="points_m"):
        LidarPoints(0, np.zeros((4, 2)), PointFrame.WORLD_NED)
    ranger = Ranger(WorldConfig())
    down = (0.0, 0.0, 1.0)
    origin = (0.0, 0.0, -20.0)
    newer = LidarPoints(1_000_000_000, np.array([[0.0, 0.0, -8.0]] * 3), PointFrame.WORLD_NED)
    older = LidarPoints(900_000_000, np.array([[0.0, 0.0, -15.0]] * 3), PointFrame.WORLD_NED)
    ranger.add(newer)
    ranger.add(older)
    fix = ranger.fix(1_000_000_000, origin, down, level_pose, lambda t: None, (0.0, 0.0, 0.0))
    assert fix is not None and fix.source.value == "lidar" and fix.range_m == pytest.approx(12.0)
    late = 1_000_000_000 + 201_000_000  # past lidar_max_age_ms (200)
    fix = ranger.fix(late, origin, down, level_pose, lambda t: None, (0.0, 0.0, 0.0))
    assert fix is not None and fix.source.value == "ground_plane" and fix.range_m == 20.0


def test_lidar_cloud_of_a_million_points_ranges_the_ray():
    """A 10^6-point cloud (clutter above, 50 points on the ray at 20 m) still gives the ray's
    range; the ranger keeps one scan, so memory is one cloud. (Its cost is not bounded: the
    report gives the figure; tests do not assert on timing.)"""
    rng = np.random.default_rng(7)
    points = rng.uniform(-50.0, 50.0, (1_000_000, 3))
    points[:, 2] = -20.0 - np.abs(points[:, 2])  # clutter above the vehicle, off the ray
    points[:50] = (0.0, 0.0, 0.0)
    ranger = Ranger(WorldConfig())
    ranger.add(LidarPoints(0, points, PointFrame.WORLD_NED))
    fix = ranger.fix(0, (0.0, 0.0, -20.0), (0.0, 0.0, 1.0), level_pose, lambda t: None, (0, 0, 0))
    assert fix is not None and fix.source.value == "lidar"
    assert fix.range_m == pytest.approx(20.0, abs=0.5)


@pytest.mark.parametrize(
    ("below_deg", "expected_m"),
    [(90.0, 20.0), (2.3, 20.0 / math.sin(math.radians(2.3))), (2.2, None), (0.01, None)],
)
def test_ground_plane_refuses_grazing_rays_past_max_ground_range(below_deg, expected_m):
    """From 20 m up, a ray 2.2 deg below the horizon meets the ground 521 m away (past
    ``max_ground_range_m``, 500): no range; level, upward rays and an origin under the ground
    give none either."""
    a = math.radians(below_deg)
    ray = (math.cos(a), 0.0, math.sin(a))
    found = ground_plane_range((0.0, 0.0, -20.0), ray, 0.0, 500.0)
    assert found == (None if expected_m is None else pytest.approx(expected_m))
    assert ground_plane_range((0.0, 0.0, -20.0), (1.0, 0.0, 0.0), 0.0, 500.0) is None
    assert ground_plane_range((0.0, 0.0, -20.0), (0.6, 0.0, -0.8), 0.0, 500.0) is None
    assert ground_plane_range((0.0, 0.0, 1.0), (0.0, 0.0, 1.0), 0.0, 500.0) is None
