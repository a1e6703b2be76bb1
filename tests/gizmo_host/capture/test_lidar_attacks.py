"""Attacks on the LiDAR ranging, through the capture replay (``gizmo-host replay --offline``).

The capture is the generator's world case (the board and the RflySim stand-in: the drone
orbits a parked car, its camera on the car) with one more sensor in its Config.json: a world
NED LiDAR (TypeID 21) with a 60 m range. Its scans are made here from the scenario's truth: a
patch of points around the ray from the drone to the car, at the true range (honest) or at a
range the sensor cannot reach (red team rt34: points 300 m to 5,000 km along the ray made
PROCEEDs that far off). The truth is the car's centre from the scenario; every PROCEED
``world`` line's target position is judged against it.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gizmo_host.app.host_config import StoreConfig
from gizmo_host.app.world_config import RflySimConfig, resolve_world
from gizmo_host.rigs.rflysim import build_scenario
from gizmo_host.rigs.rflysim.builders import sensor_datagrams
from gizmo_host.stream.store import parse_selector
from rfly_link.sensors.point_clouds import PointLayout, encode_point_cloud
from tests.captures import generate

RANGE_M = 60.0  # the LiDAR's Config.json otherParams[0]
LIDAR_PORT = 10004
SCAN_NS = 50_000_000  # a scan every 50 ms
TOLERANCE_M = 2.0  # an honest LiDAR range places the car's box centre within this
CAR = 2  # the scenario's parked car

Scan = Callable[[float, np.ndarray, np.ndarray], np.ndarray]  # (t_s, ego, car) -> N×3 points


def lidar_entry() -> dict[str, Any]:
    return {
        "SeqID": 5, "TypeID": 21, "TargetCopter": 1, "TargetMountType": 0,
        "DataWidth": 32, "DataHeight": 4, "DataCheckFreq": 20,
        "SendProtocol": [1, 127, 0, 0, 1, LIDAR_PORT, 0, 1], "CameraFOV": 360.0,
        "SensorPosXYZ": [0.0, 0.0, 0.0], "EularOrQuat": 0, "SensorAngEular": [0.0, 0.0, 0.0],
        "SensorAngQuat": [1, 0, 0, 0], "otherParams": [RANGE_M] + [0] * 15,
    }  # fmt: skip


def patch(ego: np.ndarray, toward: np.ndarray, distance_m: float) -> np.ndarray:
    """Points ``distance_m`` from ``ego`` on a 3 deg grid of directions around ``toward``."""
    d = toward / np.linalg.norm(toward)
    a = np.cross(d, [0.0, 0.0, 1.0])
    a /= np.linalg.norm(a)
    b = np.cross(d, a)
    steps = np.tan(np.radians(np.arange(-3.0, 3.01, 0.25)))
    rays = np.array([d + u * a + v * b for u in steps for v in steps])
    return ego + distance_m * rays / np.linalg.norm(rays, axis=1, keepdims=True)


def honest(_t_s: float, ego: np.ndarray, car: np.ndarray) -> np.ndarray:
    return patch(ego, car - ego, float(np.linalg.norm(car - ego)))


def far(distance_m: float) -> Scan:
    return lambda _t_s, ego, car: patch(ego, car - ego, distance_m)


def replay(
    scan: Scan, *, ground_plane: bool, tracking: bool, duration_s: float = 3.0
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The replay's lines for the capture with ``scan``'s LiDAR, and the car's true centre."""
    case = generate.Case("rt34 lidar", duration_s, world=True)
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "Config.json"
        config.write_text(json.dumps({"VisionSensors": [lidar_entry()]}))
        setup = resolve_world(
            generate.CAMERA,
            {**generate.WORLD, "ground_plane": ground_plane},
            RflySimConfig(copter_id=1, config=str(config)),
            StoreConfig(),
            parse_selector(generate.SELECT),
            tracking_table=None if tracking else {"enabled": False},
        )
    assert setup is not None and setup.rflysim is not None
    recording = generate.Recording()
    generate.board_run(case, recording)
    generate.sim_run(case, recording, setup)
    scenario = build_scenario("orbit", time=case.sim_time)
    sensor = setup.rflysim.range_sensors[0]
    car = np.array(scenario.truth(0.0).target(CAR).state.position_ned_m)
    for i, t_ns in enumerate(range(SCAN_NS, round(duration_s * 1e9), SCAN_NS)):
        truth = scenario.truth(t_ns / 1e9)
        ego = np.array(truth.ego.state.position_ned_m)
        assert np.array_equal(truth.target(CAR).state.position_ned_m, car)  # parked
        points = scan(t_ns / 1e9, ego, car)
        raw = np.column_stack([points, np.zeros(len(points))]).astype(np.float32)
        payload = encode_point_cloud(
            PointLayout.PREFIX36_FLOAT32_XYZS, raw, copter_id=1, axis_type=0,
            position_m=tuple(ego), euler_rad=truth.ego.state.euler_rad,
        )  # fmt: skip
        for datagram in sensor_datagrams(sensor, payload, i, truth.sim_time_s):
            recording.datagram(generate.START_NS + t_ns + generate.NET_NS, LIDAR_PORT, datagram)
    return generate.replayed(recording, setup), car


def judged(scan: Scan, **options: Any) -> tuple[list[tuple[int, str, float]], dict[str, Any]]:
    """(host_ns, range source, metres off the truth) of each PROCEED line's placed target,
    and the replay's last world stats."""
    lines, car = replay(scan, **options)
    placed = [
        (w["host_ns"], t["range_source"], math.dist(t["position_ned_m"], car))
        for w in lines
        if w["type"] == "world" and w["verdict"] == "PROCEED"
        for t in w["targets"]
        if t["position_ned_m"] is not None
    ]
    stats = [line for line in lines if line["type"] == "stats" and "world" in line][-1]["world"]
    return placed, stats


def test_honest_scans_place_the_car() -> None:
    """The rig's control: with honest scans (the ground plane off) the LiDAR places the
    target, within the tolerance, and refuses no point."""
    placed, stats = judged(honest, ground_plane=False, tracking=False)
    lidar = [off for _, source, off in placed if source == "lidar"]
    assert len(lidar) >= 5, placed
    assert max(lidar) < TOLERANCE_M
    assert stats["model"]["lidar_beyond_range"] == 0


@pytest.mark.parametrize("distance_m", [300.0, 5_000.0, 5e6])
@pytest.mark.parametrize("tracking", [True, False])
def test_returns_beyond_the_sensors_range_never_place_a_target(
    distance_m: float, tracking: bool
) -> None:
    """Points along the target's ray farther than the sensor reaches are refused, counted:
    no PROCEED places the car from them (before: 286 m to 5,000 km off)."""
    placed, stats = judged(far(distance_m), ground_plane=False, tracking=tracking)
    assert [p for p in placed if p[2] > TOLERANCE_M] == []
    assert [p for p in placed if p[1] == "lidar"] == []
    assert stats["model"]["lidar_beyond_range"] > 0
    assert stats["rflysim"]["lidar"] > 0  # the scans were read, their points refused


def test_a_hold_from_far_returns_ends_once_the_scans_are_honest() -> None:
    """Far returns for the first half, honest ones after: the LiDAR places the car again."""

    def scan(t_s: float, ego: np.ndarray, car: np.ndarray) -> np.ndarray:
        return far(5_000.0)(t_s, ego, car) if t_s < 2.0 else honest(t_s, ego, car)

    placed, stats = judged(scan, ground_plane=False, tracking=True, duration_s=4.0)
    assert [p for p in placed if p[2] > TOLERANCE_M] == []
    late = [p for p in placed if p[1] == "lidar" and p[0] > generate.START_NS + 2_300_000_000]
    assert late, placed
    assert stats["model"]["lidar_beyond_range"] > 0


def test_points_that_are_not_numbers_are_counted_and_the_rest_range() -> None:
    """NaN and infinite rows among honest ones: dropped and counted, the honest ones used."""
    bad = np.full((300, 3), np.nan)
    bad[100:200], bad[200:] = np.inf, -np.inf

    def scan(t_s: float, ego: np.ndarray, car: np.ndarray) -> np.ndarray:
        return np.vstack([bad, honest(t_s, ego, car)])

    placed, stats = judged(scan, ground_plane=False, tracking=False)
    lidar = [off for _, source, off in placed if source == "lidar"]
    assert len(lidar) >= 5 and max(lidar) < TOLERANCE_M
    assert stats["rflysim"]["lidar_points_invalid"] == 300 * stats["rflysim"]["lidar"]
