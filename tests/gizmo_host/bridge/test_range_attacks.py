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
import time

import numpy as np
import pytest

from fusion import InvalidInput, LidarPoints
from fusion.config import WorldConfig
from fusion.inputs import PointFrame
from fusion.ranging import Ranger, ground_plane_range
from fusion.simclock import SimClockEstimator
from fusion.timeline import PoseAt
from gizmo_host.bridge.rfly_adapter import RflyAdapter
from gizmo_host.rigs.rflysim.bodies import Body, Placed
from gizmo_host.rigs.rflysim.builders import lidar_payload
from gizmo_host.rigs.rflysim.kinematics import SimVehicleState
from rfly_link.config_json import parse_config
from rfly_link.sensors import decode_sensor
from tests.support.range_attacks import (
    GIMBAL_SEQ,
    Make,
    MakeFor,
    Rig,
    Scene,
    gimbal,
    gimbal_status,
    honest_laser,
    hostile_laser,
    judge,
    laser_reading,
    level_pose,
    scenario,
    silent_laser,
    sources,
    until_proceed,
)
from tests.support.world_attacks import (
    proceeds,
    run_world,
    selected,
)

MS = 1_000_000
# a box 10° across: every beam and cone here fits in it
BOX_CONE_RAD = (math.radians(5.0), math.radians(10.0))


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


# Past the last status: its age bound, a capture's transit and wait, and its TTL
LATE_NS = (100 + 15 + 100 + 250) * 1_000_000


@pytest.mark.subprocess
@pytest.mark.realtime
def test_gimbal_that_stops_holds_and_foreign_statuses_never_count(link_path, tmp_path):
    """Camera on the gimbal (SeqID 4), laser silent: the gimbal laser ranges. Statuses of
    another gimbal and another vehicle (looking forward, 5 m) and garbage focal lengths never
    move a position; when the statuses stop while vision continues, no capture more than
    ``gimbal_max_age_ms`` (100) after the last status is placed (one within it is, once its
    wait for a next status is over: it is published up to that wait later), and once such a
    capture's TTL (250 ms) is past the world HOLDs."""
    marks: dict[str, int] = {}

    async def body(rig: Rig) -> None:
        await until_proceed(rig, 0.2)
        assert rig.gimbal is not None
        rig.gimbal.paused = True
        marks["stopped"] = time.monotonic_ns()
        await rig.board.stream(0.4)
        # Vision goes on until the host has published lines well past the last status (a busy
        # machine delays them; the judge below needs some).
        for _ in range(100):
            last_ns = rig.scene.pitches[-1][0] + LATE_NS
            if sum(w["host_ns"] > last_ns for w in run_world(rig.run.messages)) >= 5:
                break
            await rig.board.stream(0.1)

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
    after = [w for w in run_world(messages) if w["host_ns"] > last_status]
    placed = [t for w in after for t in w["targets"] if t["position_ned_m"] is not None]
    # the status arrives a little after it was sent: 20 ms of slack
    assert all(t["capture_ns"] <= last_status + 120e6 for t in placed), placed[-1:]
    late = [w for w in after if w["host_ns"] > last_status + LATE_NS]
    assert late and all(w["verdict"] == "HOLD" for w in late)
    for line in late:
        assert all(t["position_ned_m"] is None for t in line["targets"]), line
    stats = [s for s in messages if s["type"] == "stats" and "world" in s][-1]["world"]
    assert stats["rflysim"]["other_gimbal"] > 10 and stats["rflysim"]["other_copter"] > 10


def test_lidar_non_finite_points_are_a_typed_error_and_only_the_newest_scan_counts():
    """(LiDAR is not wired into ``gizmo-host run``: the fusion side.) A cloud with a NaN point
    is refused naming the field; a scan arriving after a newer one does not replace it; a scan
    older than ``lidar_max_age_ms`` gives no range, so the ground plane does."""
    with pytest.raises(InvalidInput, match="points_m"):
        LidarPoints(0, np.array([[1.0, 0.0, math.nan]]), PointFrame.WORLD_NED, 60.0)
    with pytest.raises(InvalidInput, match="points_m"):
        LidarPoints(0, np.zeros((4, 2)), PointFrame.WORLD_NED, 60.0)
    ranger = Ranger(WorldConfig(target_max_height_m=10.0))  # a return 8 m up: a tree
    down = (0.0, 0.0, 1.0)
    origin = (0.0, 0.0, -20.0)
    tall = BOX_CONE_RAD
    newer = LidarPoints(1_000_000_000, np.array([[0.0, 0.0, -8.0]] * 3), PointFrame.WORLD_NED, 60.0)
    older = LidarPoints(900_000_000, np.array([[0.0, 0.0, -15.0]] * 3), PointFrame.WORLD_NED, 60.0)
    ranger.add(newer)
    ranger.add(older)
    fix = ranger.fix(1_000_000_000, origin, down, tall, level_pose, lambda t: None, (0, 0, 0))
    assert fix is not None and fix.source.value == "lidar" and fix.range_m == pytest.approx(12.0)
    late = 1_000_000_000 + 201_000_000  # past lidar_max_age_ms (200)
    fix = ranger.fix(late, origin, down, tall, level_pose, lambda t: None, (0, 0, 0))
    assert fix is not None and fix.source.value == "ground_plane" and fix.range_m == 20.0


@pytest.mark.parametrize("frame", [PointFrame.WORLD_NED, PointFrame.BODY_FRD])
@pytest.mark.parametrize(("below_m", "used"), [(29.9, True), (30.0, False), (5e6, False)])
def test_lidar_points_beyond_the_sensors_range_of_it_are_refused(frame, below_m, used):
    """Red team rt34: returns farther than the sensor reaches placed targets there. The vehicle
    level at NED (0, 0, -20) (``level_pose``), the LiDAR 1 m ahead of the body origin with a
    30 m range, the camera's ray straight down from the origin: points on the ray ``below_m``
    down are sqrt(1 + below_m^2) from the sensor, within its range at 29.9 m (29.92) and not at
    30 m (30.017). Refused points are counted; nothing else ranges the ray (no ground plane)."""
    ranger = Ranger(WorldConfig(ground_plane=False))
    points = np.array([[0.0, 0.0, below_m]] * 3)  # body FRD of a level vehicle at the origin
    if frame is PointFrame.WORLD_NED:
        points += (0.0, 0.0, -20.0)
    ranger.add(LidarPoints(0, points, frame, 30.0, (1.0, 0.0, 0.0)))
    down, origin, camera = (0.0, 0.0, 1.0), (0.0, 0.0, -20.0), (0.0, 0.0, 0.0)
    fix = ranger.fix(0, origin, down, BOX_CONE_RAD, level_pose, lambda t: None, camera)
    if used:
        assert fix is not None and fix.source.value == "lidar"
        assert fix.range_m == pytest.approx(below_m)
        assert ranger.lidar_beyond_range == 0
    else:
        assert fix is None and ranger.lidar_beyond_range == 3
    # The sensor of a world-frame scan is placed by the pose at the scan's time: without one,
    # its range cannot be checked and the scan ranges nothing.
    ranger = Ranger(WorldConfig(ground_plane=False))
    ranger.add(LidarPoints(0, np.array([[0.0, 0.0, 9.9]] * 3), PointFrame.WORLD_NED, 30.0))
    assert ranger.fix(0, origin, down, BOX_CONE_RAD, lambda t: None, lambda t: None, camera) is None


def test_a_world_scans_filter_follows_the_pose_at_its_time():
    """Red team rt35: the in-range filter of a world-frame scan was kept from its first use;
    a pose epoch that then moved the vehicle 50 m (a respawn) left returns 90 m from a 60 m
    sensor in use. The vehicle level at NED (0, 0, -20), looking north along the ray; the
    scan holds returns 20 m north of (0, 0, -20) and 70 m north of it. Placed at (0, 0, -20)
    only the 20 m ones are in range; placed at (-50, 0, -20) (the new epoch's pose at the
    scan's time) only the 70 m ones are, 120 m ahead of it: beyond, refused."""
    near = [(20.0, dy, -20.0) for dy in (-0.1, 0.0, 0.1)]
    far = [(70.0, dy, -20.0) for dy in (-0.1, 0.0, 0.1)]
    ranger = Ranger(WorldConfig(ground_plane=False))
    ranger.add(LidarPoints(0, np.array(near + far), PointFrame.WORLD_NED, 60.0))
    north, camera = (1.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    fix = ranger.fix(0, (0.0, 0.0, -20.0), north, BOX_CONE_RAD, level_pose, lambda t: None, camera)
    assert fix is not None and fix.range_m == pytest.approx(20.0, abs=0.01)
    assert ranger.lidar_beyond_range == 3  # the 70 m ones

    def moved(t_ns: int) -> PoseAt:
        return PoseAt(t_ns, (-50.0, 0.0, -20.0), (1.0, 0.0, 0.0, 0.0), None, 1)

    fix = ranger.fix(0, (-50.0, 0.0, -20.0), north, BOX_CONE_RAD, moved, lambda t: None, camera)
    assert fix is None  # the near ones are 70 m from the sensor now, the far ones 120 m
    assert ranger.lidar_beyond_range == 3 + 6  # each filter counts what it refuses
    # A world scan with no pose at its time ranges nothing, and says so once a scan.
    for _ in range(3):
        assert (
            ranger.fix(
                0, (0.0, 0.0, -20.0), north, BOX_CONE_RAD, lambda t: None, lambda t: None, camera
            )
            is None
        )
    assert ranger.lidar_unplaced == 1


def test_the_stand_ins_clipped_world_scan_never_ranges_short():
    """Red team rt35: a world-frame int16 scan saturates each coordinate at +-range (the
    stand-in's own sender clips there, as RflySim's int16 must). The vehicle at N = 30 m, 10 m
    up, a 60 m LiDAR, a wall 45 m ahead: returns past N = 60 came back at N = 60 and ranged a
    ray 14.5 deg down at 31 m, where it meets the ground at 39.9 m (truth here: 10 m up over
    sin 14.5 deg). Clipped coordinates are no returns now: the ray gets the ground's range."""
    entry = {
        "SeqID": 5, "TypeID": 21, "TargetCopter": 1, "TargetMountType": 0, "DataWidth": 361,
        "DataHeight": 4, "DataCheckFreq": 10, "SendProtocol": [1, 127, 0, 0, 1, 10004, 0, 1],
        "CameraFOV": 90.0, "SensorPosXYZ": [0, 0, 0], "EularOrQuat": 0,
        "SensorAngEular": [0, 0, 0], "SensorAngQuat": [0, 0, 0, 0],
        "otherParams": [60.0] + [0] * 15,
    }  # fmt: skip
    sensor = parse_config(json.dumps({"VisionSensors": [entry]})).sensors[0]
    ego_n = 30.0
    ego = SimVehicleState(
        (ego_n, 0.0, -10.0), (0.0,) * 3, (0.0,) * 3, (1.0, 0.0, 0.0, 0.0), (0.0,) * 3,
        (0.0,) * 3, (0.0, 0.0, -9.81),
    )  # fmt: skip
    wall = Placed(Body(7, (2.0, 40.0, 40.0)), (ego_n + 45.0, 0.0, -10.0), (1.0, 0.0, 0.0, 0.0))
    cloud = decode_sensor(21, lidar_payload(sensor, ego, [wall], 0.0), sensor.decode_params())
    assert np.isnan(cloud.xyz_m).any()  # the scan holds clipped returns
    adapter = RflyAdapter(1, estimator=lambda: SimClockEstimator(lock_ms=0.0))
    (points,) = adapter.message(cloud, 9 * MS, frame_time_s=4.0, sensor=sensor)
    assert adapter.counts["lidar_points_invalid"] > 0
    down = math.radians(14.5)
    ray = (math.cos(down), 0.0, math.sin(down))
    truth_m = 10.0 / math.sin(down)
    assert ego_n + ray[0] * truth_m < ego_n + 44.0  # the ray meets the ground before the wall
    ranger = Ranger(WorldConfig(ground_plane=True))
    ranger.add(points)

    def pose(t_ns: int) -> PoseAt:
        return PoseAt(t_ns, (ego_n, 0.0, -10.0), (1.0, 0.0, 0.0, 0.0), None, 0)

    fix = ranger.fix(
        points.host_ns, (ego_n, 0.0, -10.0), ray, BOX_CONE_RAD, pose, lambda t: None, (0, 0, 0)
    )
    assert fix is not None and fix.range_m == pytest.approx(truth_m, abs=2.0), fix


def test_lidar_cloud_of_a_million_points_ranges_the_ray():
    """A 10^6-point cloud (clutter above, 50 points on the ray at 20 m) still gives the ray's
    range; the ranger keeps one scan, so memory is one cloud. (Its cost is not bounded: the
    report gives the figure; tests do not assert on timing.)"""
    rng = np.random.default_rng(7)
    points = rng.uniform(-50.0, 50.0, (1_000_000, 3))
    points[:, 2] = -20.0 - np.abs(points[:, 2])  # clutter above the vehicle, off the ray
    points[:50] = (0.0, 0.0, 0.0)
    ranger = Ranger(WorldConfig())
    ranger.add(LidarPoints(0, points, PointFrame.WORLD_NED, 200.0))
    fix = ranger.fix(
        0, (0.0, 0.0, -20.0), (0.0, 0.0, 1.0), BOX_CONE_RAD, level_pose, lambda t: None, (0, 0, 0)
    )
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


def junk_gimbal(lasers: tuple[float, ...] = (), focals: tuple[float, ...] = ()) -> MakeFor:
    """The gimbal straight down at 100 Hz, its laser range cycling through ``lasers`` (none:
    the true slant range) and its focal lengths through ``focals`` (none: the true 320 px)."""

    def make_for(copter: int, scene: Scene, sensor) -> Make:
        def make(i: int, sim_time_s: float, position) -> list[bytes]:
            scene.pitches.append((scene.t0_ns + round((sim_time_s - 1000.0) * 1e9), -90.0))
            laser = lasers[i % len(lasers)] if lasers else -position[2]
            fx = focals[i % len(focals)] if focals else 320.0
            return [gimbal_status(copter, GIMBAL_SEQ, -90.0, fx, laser)]

        return make

    return make_for


@pytest.mark.subprocess
@pytest.mark.realtime
@pytest.mark.parametrize(
    ("lasers", "focals", "box_x", "counted"),
    [
        # 1e30 m is beyond any position (1e7 m): dropped by the adapter, counted there; 2999 m
        # and under: under the limit, beyond the ground the ray meets at 20 m (rt18: 2979 m
        # and 480 m off)
        (
            (1e4, 1e7, 1e30, 2999.0, 500.0, 35.5),
            (),
            0,
            {
                "model": ("gimbal_laser_junk", "range_below_ground"),
                "rflysim": ("dropped_invalid",),
            },
        ),
        # 5e-324 is 0 in the status's float32: no focal length, the configured one applies;
        # 20 px on a 640 px image is a 172° field of view (rt18: 150 m off)
        ((), (1e9, 1.0, 5e-324, 20.0), 500, {"model": ("gimbal_focal_implausible",)}),
    ],
    ids=["laser", "focal"],
)
def test_a_range_no_laser_reaches_or_a_focal_length_no_lens_has_never_places_a_target(
    link_path, tmp_path, lasers, focals, box_x, counted
):
    """Red team rt16: the gimbal status's laser range had no upper bound (1e4 m: every PROCEED
    9,980 m off; 1e30 m: the tracker divided by zero on every frame), and its focal lengths
    replaced the camera's whatever their size (fx = 1e9, the box off centre: every PROCEED
    9.98 m off; fx = 1: a bearing 63° off); rt18 then went under the new limits. The camera
    is on the gimbal, straight down, 20 m
    over flat ground; the truth puts the target on the ground where the box's pixel looks
    with the camera's own focal length (320 px). Now such a range is junk and such focal
    lengths are no zoom (counted): the ground plane places every PROCEED, true to 0.3 m."""

    async def body(rig: Rig) -> None:
        await until_proceed(rig, 0.5)

    messages, scene = asyncio.run(
        scenario(
            link_path,
            tmp_path,
            body,
            laser=silent_laser,
            gimbal=junk_gimbal(lasers, focals),
            box_x=box_x,
        )
    )
    placed = proceeds(messages)
    assert len(placed) >= 5
    assert all(selected(w)["position_ned_m"] is not None for w in placed)
    assert judge(messages, scene) == []
    assert sources(messages) == {"ground_plane"}
    stats = [s for s in messages if s["type"] == "stats" and "world" in s][-1]["world"]
    for part, counts in counted.items():
        for count in counts:
            assert stats[part][count] > 5, (part, count)


@pytest.mark.subprocess
@pytest.mark.realtime
def test_a_gimbal_whose_zoom_jumps_between_statuses_places_nothing(link_path, tmp_path):
    """Red team rt18: focal lengths alternating 320 and 640 px at 100 Hz (each plausible, one
    the lens's) put a third of the PROCEEDs 5 m off. A zoom that fast is no zoom a camera
    makes: the camera's intrinsics at a capture are unknown, and the world HOLDs."""

    async def body(rig: Rig) -> None:
        await rig.board.stream(1.5)

    messages, scene = asyncio.run(
        scenario(
            link_path,
            tmp_path,
            body,
            laser=silent_laser,
            gimbal=junk_gimbal(focals=(320.0, 640.0)),
            box_x=500,
        )
    )
    assert len(scene.captures_ns) >= 30 and len(run_world(messages)) >= 10
    assert judge(messages, scene) == []
    assert proceeds(messages) == []
