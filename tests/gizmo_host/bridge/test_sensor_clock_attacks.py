"""Issue 17's attacks on the simulation clocks of the vehicle's sensors in ``gizmo-host run``:
one glitched frame time, a stale burst when a stream starts, for the distance sensor, a
LiDAR, the CopterSim state and odometry, and combinations; end to end (a board on a real pty,
RflySim's wire formats over loopback UDP, ``world`` lines from the process's stdout).

The truth is the tests' own (see ``test_world_range_attacks``: camera and laser straight down,
the vehicle flying north at 4 m/s while climbing; ``test_world_pose_attacks``: the camera 45
degrees down, level flight): a PROCEED is wrong when its target is more than 0.3 m off on a
laser or LiDAR range (0.5 m otherwise), its bearing more than 2 degrees off, or its capture
older than the TTL. After a single glitch or a stale start PROCEED, on that sensor's range,
must come back within ~1.5 s.
"""

from __future__ import annotations

import asyncio
import json
import time

import numpy as np
import pytest

from gizmo_host.rigs.board import PtyBoard
from gizmo_host.rigs.free_ports import free_ports
from gizmo_host.rigs.rflysim.builders import sensor_datagrams
from rfly_link import ports
from rfly_link.config_json import parse_config
from rfly_link.sensors import INT16_FULL_SCALE, PointLayout, encode_point_cloud
from tests.support.coptersim import free_copter_id
from tests.support.pose_attacks import (
    RECOVER_S,
    Flight,
    MakeOut,
    Out,
    Rig,
    Sim,
    fly,
    honest,
    judge,
    odom_at,
    report,
    scenario,
    state_at,
    state_sims,
    timeline,
)
from tests.support.range_attacks import (
    CAMERA_DOWN,
    Scene,
    honest_laser,
    laser_frame,
    sensor_entry,
    start_run,
    until_proceed,
)
from tests.support.range_attacks import Rig as RangeRig
from tests.support.range_attacks import judge as judge_ranges
from tests.support.range_attacks import scenario as range_scenario
from tests.support.world_attacks import (
    POSE_PERIOD_S,
    SPEED_M_S,
    Board,
    Poses,
    proceeds,
    selected,
    stop,
)

pytestmark = [pytest.mark.realtime, pytest.mark.subprocess]

CLIMB_M_S = 8.0
GLITCH_S = 0.07  # one frame stamped 70 ms ahead: 0.56 m of climb


def range_figures(messages: list[dict], scene: Scene, source: str, since_ns: int = 0) -> dict:
    """PROCEED lines after ``since_ns``, wrong ones (``judge_ranges``), and the share of
    world lines that PROCEED with a range from ``source``."""
    world = [w for w in messages if w["type"] == "world" and w["host_ns"] >= since_ns]
    go = proceeds(world)
    on_source = [w for w in go if selected(w)["range_source"] == source]
    wrong = judge_ranges(world, scene)
    return {
        "world": len(world),
        "proceed": len(go),
        "wrong": len(wrong),
        "on_" + source: len(on_source),
        "availability": round(len(on_source) / len(world), 2) if world else 0.0,
        "first_wrong": wrong[:2],
    }


async def dense(board: Board, seconds: float, period_s: float = 0.004) -> None:
    """Frames every 4 ms for ``seconds`` (a board at 250 Hz), so that some capture falls in
    every few milliseconds around an event (the board's pace, not a wait for an event)."""
    loop = asyncio.get_running_loop()
    start_s = loop.time()
    for i in range(round(seconds / period_s)):
        board.send()
        await asyncio.sleep(max(0.0, start_s + (i + 1) * period_s - loop.time()))


# --- item 2: one glitched laser frame time --------------------------------------------------


def glitching_laser(flag: dict, every: int = 1) -> object:
    """The honest laser, a frame every ``every`` ticks of 10 ms; once ``flag["glitch"]`` is
    set, one frame is stamped ``GLITCH_S`` ahead (its distance the true one now)."""

    def make_for(copter: int, scene: Scene, sensor):
        honest_make = honest_laser(copter, scene, sensor)

        def make(i: int, sim_time_s: float, position) -> list[bytes]:
            if i % every:
                return []
            if flag.get("glitch") and not flag.get("done"):
                flag["done"] = time.monotonic_ns()
                scene.laser_ns.append(flag["done"])
                return laser_frame(sensor, copter, -position[2], sim_time_s + GLITCH_S, i)
            return honest_make(i, sim_time_s, position)

        return make

    return make_for


@pytest.mark.parametrize(
    "laser_hz",
    [
        # Before the fix: issue 17 item 2: one laser frame (20 Hz) stamped 70 ms ahead mis-
        # times the laser for the rest of the run: measured 75/120 PROCEED wrong, 0.56 m off;
        # from 1.5 s after the glitch still 23/28
        20,
        100,  # before the fix three frames behind the glitch passed for a "restart"
    ],
)
def test_one_glitched_laser_stamp_does_not_mistime_the_laser(link_path, tmp_path, laser_hz):
    """Camera and laser down, climbing at 8 m/s, ground plane off (the laser is the only
    range): after the glitch every laser position must still be true, and laser ranges must
    come back within ~1.5 s."""
    flag: dict = {}

    async def body(rig: RangeRig) -> None:
        await until_proceed(rig, 0.2)
        flag["glitch"] = True
        await rig.board.stream(RECOVER_S + 0.4)

    messages, scene = asyncio.run(
        range_scenario(
            link_path,
            tmp_path,
            body,
            laser=glitching_laser(flag, every=100 // laser_hz),
            world="ground_plane = false\n",
            climb_m_s=CLIMB_M_S,
        )
    )
    whole = range_figures(messages, scene, "laser")
    late = range_figures(messages, scene, "laser", flag["done"] + round(RECOVER_S * 1e9))
    print(f"\n[laser glitch {laser_hz} Hz] whole={whole} late={late}")
    assert whole["wrong"] == 0, whole
    assert late["availability"] > 0.6, late


# --- item 3: a stale burst at a sensor's start ----------------------------------------------


def late_starting_laser(flag: dict, stale_s: float = 0.5, every: int = 5) -> object:
    """Silent until ``flag["start"]``; its first burst is ``stale_s`` of frames buffered while
    it was not connected, the newest ``stale_s`` old (each at its own frame time, its true
    distance then); then it runs live, a frame every ``every`` ticks of 10 ms."""

    def make_for(copter: int, scene: Scene, sensor):
        honest_make = honest_laser(copter, scene, sensor)

        def make(i: int, sim_time_s: float, position) -> list[bytes]:
            if not flag.get("start") or i % every:
                return []
            if flag.get("started"):
                return honest_make(i, sim_time_s, position)
            flag["started"] = time.monotonic_ns()
            out: list[bytes] = []
            period_s = every * POSE_PERIOD_S
            n = round(stale_s / period_s)
            for k in range(n):
                then_s = sim_time_s - stale_s - (n - 1 - k) * period_s
                then_ns = scene.t0_ns + round((then_s - 1000.0) * 1e9)
                scene.laser_ns.append(then_ns)
                altitude_m = -scene.position(then_ns)[2]
                out += laser_frame(sensor, copter, altitude_m, then_s, 900_000 + k)
            return out

        return make

    return make_for


# Before the fix: issue 17 item 3: a laser (20 Hz) starting mid-flight with a burst of frames
# 0.5 s old: measured 2-3 of ~125 PROCEED wrong, 4.0 m off (captures near the burst)
def test_laser_starting_with_a_stale_burst_is_not_used_as_current(link_path, tmp_path):
    flag: dict = {}

    async def body(rig: RangeRig) -> None:
        await until_proceed(rig, 0.3)  # on the ground plane: the laser is silent
        flag["start"] = True
        await dense(rig.board, 0.12)
        await rig.board.stream(RECOVER_S + 0.5)

    messages, scene = asyncio.run(
        range_scenario(
            link_path,
            tmp_path,
            body,
            laser=late_starting_laser(flag),
            climb_m_s=CLIMB_M_S,
        )
    )
    whole = range_figures(messages, scene, "laser")
    late = range_figures(messages, scene, "laser", flag["started"] + round(RECOVER_S * 1e9))
    print(f"\n[laser stale start] whole={whole} late={late}")
    assert whole["wrong"] == 0, whole
    assert late["availability"] > 0.6, late


# --- LiDAR: one glitched scan time ----------------------------------------------------------

LIDAR_SEQ = 3
LIDAR_RANGE_M = 100.0


def ground_scan(copter: int, altitude_m: float) -> bytes:
    """A TypeID 20 scan (sensor axes = body FRD, the LiDAR mounted level): the ground below
    the vehicle on a 0.1 m grid 1 m across, ``altitude_m`` down."""
    offsets = np.arange(-0.5, 0.501, 0.1)
    grid = np.array([(x, y, altitude_m) for x in offsets for y in offsets])
    ints = np.rint(grid * (INT16_FULL_SCALE / LIDAR_RANGE_M)).astype(np.int16)
    return encode_point_cloud(PointLayout.PREFIX36_INT16_XYZ, ints, copter_id=copter)


async def lidar_scenario(
    link_path, tmp_path, flag: dict, body, every: int = 10
) -> tuple[list[dict], Scene]:
    """A level LiDAR (TypeID 20) scanning every ``every`` ticks of 10 ms, the only range."""
    copter = free_copter_id()
    lidar_port = free_ports()[0]
    entry = sensor_entry(
        LIDAR_SEQ,
        20,
        copter,
        lidar_port,
        DataWidth=11,
        DataHeight=11,
        SensorAngEular=[0.0, 0.0, 0.0],
        otherParams=[LIDAR_RANGE_M] + [0] * 15,
    )
    text = json.dumps({"VisionSensors": [entry]})
    sensor = parse_config(text, source="test").sensors[0]
    scene = Scene(climb_m_s=CLIMB_M_S)
    velocity = (SPEED_M_S, 0.0, -CLIMB_M_S)

    def pose(i: int, sim_time_s: float, position) -> list[bytes]:
        return [state_at(copter, sim_time_s, position, 0.0, velocity_ned_m_s=velocity)]

    def scan(i: int, sim_time_s: float, position) -> list[bytes]:
        if i % every:
            return []
        stamp_s = sim_time_s
        if flag.get("glitch") and not flag.get("done"):
            flag["done"] = time.monotonic_ns()
            stamp_s += GLITCH_S
        return sensor_datagrams(sensor, ground_scan(copter, -position[2]), i, stamp_s)

    toml = CAMERA_DOWN + "[world]\nrate_hz = 50\nground_plane = false\n"
    with PtyBoard(link_path) as pty:
        run = await start_run(link_path, tmp_path, copter, text, toml)
        senders = [Poses(ports.coptersim_state_port(copter), pose), Poses(lidar_port, scan)]
        done = asyncio.Event()
        tasks = [asyncio.create_task(s.run(done, scene)) for s in senders]
        try:
            rig = RangeRig(run, Board(pty, scene), scene, senders[0], senders[1], None, sensor)
            await body(rig)
        finally:
            done.set()
            await asyncio.gather(*tasks)
        messages = await stop(run)
    return messages, scene


# Before the fix: issue 17 item 2 on a LiDAR (10 Hz): one scan stamped 70 ms ahead: measured
# 94-96 of 120 PROCEED wrong, 0.56 m off; from 1.5 s after the glitch 26/26
def test_one_glitched_lidar_scan_time_does_not_mistime_the_lidar(link_path, tmp_path):
    flag: dict = {}

    async def body(rig: RangeRig) -> None:
        await until_proceed(rig, 0.2)
        flag["glitch"] = True
        await rig.board.stream(RECOVER_S + 0.4)

    messages, scene = asyncio.run(lidar_scenario(link_path, tmp_path, flag, body))
    whole = range_figures(messages, scene, "lidar")
    late = range_figures(messages, scene, "lidar", flag["done"] + round(RECOVER_S * 1e9))
    print(f"\n[lidar glitch] whole={whole} late={late}")
    assert whole["proceed"] > 10  # the LiDAR ranged before the glitch
    assert whole["wrong"] == 0, whole
    assert late["availability"] > 0.6, late


# --- the pose streams: a glitched stamp, a stale start --------------------------------------


def pose_glitch(flag: dict, ahead_s: float) -> object:
    def make_for(copter: int, flight: Flight) -> MakeOut:
        once = honest(copter, flight)

        def make(i: int, s: float, now_ns: int) -> list[Out]:
            if flag.get("glitch") and not flag.get("done"):
                flag["done"] = now_ns
                position, yaw = flight.pose(now_ns)
                return [Out(state_at(copter, flight.sim_time_s(now_ns) + ahead_s, position, yaw))]
            return once(i, s, now_ns)

        return make

    return make_for


def test_one_state_stamped_200_ms_ahead_does_not_mistime_the_pose(link_path, tmp_path):
    """Item 2 on the 100 Hz state stream: passes today only because the three states after
    the glitch count as a "restart" and re-anchor the clock (item 8's rule); it must keep
    passing once a restart needs more than reordering can explain."""
    flag: dict = {}

    async def body(rig: Rig) -> None:
        await fly(rig, 0.3)
        flag["glitch"] = True
        await rig.board.stream(RECOVER_S + 0.4)

    sims = state_sims(pose_glitch(flag, 0.2))
    messages, rig = asyncio.run(scenario(link_path, tmp_path, sims, body))
    figures = judge(messages, rig.flight)
    after = judge(messages, rig.flight, flag["done"] + round(RECOVER_S * 1e9), rig.marks["end"])
    report("state +200 ms", figures, after=after)
    assert figures.wrong == []
    assert after.availability > 0.7


def stale_start(flag: dict, stale_s: float, odometry: bool = False, gap_ticks: int = 5) -> object:
    """Silent until ``flag["start"]``; then first a burst of poses buffered while it was not
    connected (``stale_s`` of them at 20 Hz, the newest ``stale_s`` old, true poses at their
    own sim times), then after ``gap_ticks`` of 10 ms live at 100 Hz."""

    def make_for(copter: int, flight: Flight) -> MakeOut:
        def pose_at(i: int, now_ns: int) -> bytes:
            position, yaw = flight.pose(now_ns)
            sim_time_s = flight.sim_time_s(now_ns)
            if odometry:
                return odom_at(copter, i, sim_time_s, position, yaw)
            return state_at(copter, sim_time_s, position, yaw)

        def make(i: int, s: float, now_ns: int) -> list[Out]:
            if not flag.get("start"):
                return []
            if flag.get("started"):
                return [Out(pose_at(i, now_ns))] if i >= flag["live_from"] else []
            flag["started"], flag["live_from"] = now_ns, i + gap_ticks
            n = round(stale_s / 0.05)
            newest_ns = now_ns - round(stale_s * 1e9)
            return [Out(pose_at(i - n + k, newest_ns - (n - 1 - k) * 50_000_000)) for k in range(n)]

        return make

    return make_for


async def vision_first_then_poses(rig: Rig, flag: dict) -> None:
    for _ in range(25):  # until the device clock has locked (HOLD no_pose alone); no pose yet
        world = [w for w in rig.run.messages if w["type"] == "world"]
        if world and world[-1]["reasons"] == ["no_pose"]:
            break
        await rig.board.stream(0.1)
    flag["start"] = True
    await dense(rig.board, 0.12)
    await rig.board.stream(RECOVER_S + 0.8)


# Before the fix: issue 17 item 3 on the state stream: a first burst of states 0.5 s old:
# measured 1-3 of ~120 PROCEED wrong, 1.2-1.9 m off (the captures near the burst)
def test_state_stream_starting_with_a_stale_burst_is_not_used_as_current(link_path, tmp_path):
    flag: dict = {}
    sims = state_sims(stale_start(flag, 0.5))
    messages, rig = asyncio.run(
        scenario(link_path, tmp_path, sims, lambda rig: vision_first_then_poses(rig, flag))
    )
    figures = judge(messages, rig.flight)
    after = judge(messages, rig.flight, flag["started"] + round(RECOVER_S * 1e9), rig.marks["end"])
    report("state stale start", figures, after=after)
    print(timeline(messages, flag["started"]))
    assert figures.wrong == []
    assert after.availability > 0.7


# Before the fix: issue 17 item 3 on odometry: a first burst of replies 0.5 s old: measured 1-3
# of ~120 PROCEED wrong, 1.2-1.95 m off
def test_odometry_starting_with_a_stale_burst_is_not_used_as_current(link_path, tmp_path):
    flag: dict = {}

    def sims_for(copter: int, flight: Flight) -> list[Sim]:
        make = stale_start(flag, 0.5, odometry=True)(copter, flight)
        return [Sim(ports.coptersim_reply_port(copter), make)]

    messages, rig = asyncio.run(
        scenario(
            link_path,
            tmp_path,
            sims_for,
            lambda rig: vision_first_then_poses(rig, flag),
            "--rflysim-request-odometry-hz",
            "100",
        )
    )
    figures = judge(messages, rig.flight)
    after = judge(messages, rig.flight, flag["started"] + round(RECOVER_S * 1e9), rig.marks["end"])
    report("odometry stale start", figures, after=after)
    assert figures.wrong == []
    assert after.availability > 0.7


# --- combinations ---------------------------------------------------------------------------


def swapped_pairs(make_for):
    """The laser's frames with adjacent pairs swapped (tick 2k leaves after 2k+1)."""

    def swapped_for(copter: int, scene: Scene, sensor):
        inner = make_for(copter, scene, sensor)
        held: list[bytes] = []

        def make(i: int, sim_time_s: float, position) -> list[bytes]:
            out = inner(i, sim_time_s, position)
            if i % 2 == 0:
                held[:] = out
                return []
            out, held[:] = out + held, []
            return out

        return make

    return swapped_for


# Before the fix: issue 17 items 2+8 on the laser (20 Hz): frames swapped in pairs plus one
# stamped 70 ms ahead: measured 66-84/120 PROCEED wrong, 0.47-0.56 m off; late 20-26 of 28
def test_laser_glitch_while_its_frames_are_reordered(link_path, tmp_path):
    """Both at once on the laser: adjacent frames swapped throughout, and one frame 70 ms
    ahead. No wrong PROCEED, and laser PROCEED back within ~1.5 s of the glitch."""
    flag: dict = {}

    async def body(rig: RangeRig) -> None:
        await until_proceed(rig, 0.2)
        flag["glitch"] = True
        await rig.board.stream(RECOVER_S + 0.4)

    messages, scene = asyncio.run(
        range_scenario(
            link_path,
            tmp_path,
            body,
            laser=swapped_pairs(glitching_laser(flag, every=5)),
            world="ground_plane = false\n",
            climb_m_s=CLIMB_M_S,
        )
    )
    whole = range_figures(messages, scene, "laser")
    late = range_figures(messages, scene, "laser", flag["done"] + round(RECOVER_S * 1e9))
    print(f"\n[laser glitch + swaps] whole={whole} late={late}")
    assert whole["wrong"] == 0, whole
    assert late["availability"] > 0.6, late
