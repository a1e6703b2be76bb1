"""The worked RflySim config (docs/rflysim-px4.toml) with the stand-ins on its ports: CopterSim's
state for the RflySim pose and a PX4-like autopilot on the companion's MAVLink ports (receive
on 20100 + 2N - 1, send to 20100 + 2N - 2), both flying the same scenario, in one host."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest

from fusion import WorldSnapshot
from gizmo_host.app.host import Host
from gizmo_host.app.host_config import config_from_mapping
from gizmo_host.mavlink import parse_url
from gizmo_host.mavlink.urls import rflysim_companion_ports
from gizmo_host.rigs.autopilot.beside_sim import autopilot_endpoint
from gizmo_host.rigs.autopilot.standin import StandinAutopilot, scenario_vehicle
from gizmo_host.rigs.demo.scene_rig import config_json
from gizmo_host.rigs.free_ports import free_ports
from gizmo_host.rigs.rflysim.core import Rates, StandIn
from gizmo_host.rigs.rflysim.scenario import build_scenario
from gizmo_host.rigs.rflysim.sim_runner import SimRunner
from gizmo_host.tomlfile import read_toml
from tests.support.mavlink_rig import until

EXAMPLE = Path(__file__).parents[3] / "docs" / "rflysim-px4.toml"
N = 41  # a vehicle no other test flies: its ports are RflySim's own for N
QUIET = Rates(state_hz=100, others_hz=0, heartbeat_hz=0, gimbal_hz=0, truth_hz=0, lidar_hz=0)


def test_the_worked_config_names_vehicle_1s_companion_ports_and_loads() -> None:
    document = read_toml(EXAMPLE)
    listen, send = rflysim_companion_ports(1)
    assert (listen, send) == (20101, 20100)
    endpoint = parse_url(document["mavlink"]["url"], document["mavlink"]["send_to"])
    assert endpoint.port == listen and endpoint.send_to == ("127.0.0.1", send)
    assert rflysim_companion_ports(N) == (20100 + 2 * N - 1, 20100 + 2 * N - 2)


def test_sim_mavlink_takes_coptersims_side_of_the_same_ports() -> None:
    endpoint = autopilot_endpoint("", 3, "10.0.0.2", "0.0.0.0")
    assert (endpoint.kind.value, endpoint.host, endpoint.port) == ("udpin", "0.0.0.0", 20104)
    assert endpoint.send_to == ("10.0.0.2", 20105)  # the companion receives on 20100 + 2N - 1
    assert autopilot_endpoint("udpout:127.0.0.1:14540", 3, "h", "b").port == 14540


def _document(tmp_path: Path) -> dict[str, Any]:
    """The example for vehicle N on this machine: its ports by the formula, the stand-in's
    Config.json (sensors on free ports), and the RflySim pose in the world (the MAVLink pose
    source keeps its own history: both paths in one run)."""
    document = read_toml(EXAMPLE)
    boxes, distance, lidar, gimbal = free_ports(4)
    config = tmp_path / "Config.json"
    config.write_text(config_json({1: boxes, 2: distance, 3: lidar, 4: gimbal}, ego_id=N))
    listen, send = rflysim_companion_ports(N)
    document["serial"]["path"] = str(tmp_path / "no-board")
    document["rflysim"].update(copter_id=N, config=str(config))
    document["world"]["pose_source"] = "rflysim"
    document["mavlink"].update(
        url=f"udpin:127.0.0.1:{listen}", send_to=f"127.0.0.1:{send}", landing_target="off"
    )
    document["publish"] = {"stdout": False, "stats_interval_s": 0}
    return document


@pytest.mark.realtime
def test_rflysim_and_mavlink_poses_agree_within_the_clock_bounds(tmp_path: Path) -> None:
    config = config_from_mapping(_document(tmp_path))
    listen, send = rflysim_companion_ports(N)
    scenario = build_scenario("orbit", ego_id=N)
    runner = SimRunner(
        StandIn(scenario, rates=QUIET),
        control_ports=dict.fromkeys(StandIn(scenario, rates=QUIET).control_ports(), 0),
    )

    vehicle = scenario_vehicle(scenario, lambda: runner.start_ns)
    host = Host.in_rig(config)
    snapshots: list[WorldSnapshot] = []
    assert host.world is not None and host.mavlink is not None
    host.world.add_listener(snapshots.append)
    link = host.mavlink
    pairs: list[tuple[float, float]] = []  # (position difference m, speed m/s)

    async def scenario_run() -> None:
        sim = asyncio.ensure_future(runner.run())
        await until(runner.started.is_set)
        autopilot = StandinAutopilot(
            parse_url(f"udpin:127.0.0.1:{send}", f"127.0.0.1:{listen}"),
            vehicle,
            skew_ppm=90.0,
            lag_ms=(8.0, 16.0),
        )
        tasks = [sim, asyncio.ensure_future(autopilot.run())]
        try:
            async with host:
                await until(lambda: link.session.locked and link.poses.counts["poses"] > 100)
                start = len(snapshots)
                await until(lambda: len(snapshots) > start + 100)  # 2 s of both
                for snapshot in snapshots[start:]:
                    rfly = snapshot.vehicle
                    if rfly is None:
                        continue
                    mav = link.poses.history.interpolate(rfly.time_ns)
                    if mav is None or rfly.velocity_ned_m_s is None:
                        continue
                    diff = math.dist(rfly.position_ned_m, mav.position_ned_m)
                    pairs.append((diff, math.hypot(*rfly.velocity_ned_m_s)))
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(scenario_run())
    assert len(pairs) > 50
    diffs = sorted(d for d, _ in pairs)
    speed = max(s for _, s in pairs)
    p95 = diffs[int(0.95 * len(diffs))]
    # Each clock mapping is good to a few ms (TIMESYNC: half the round trip; CopterSim's sim
    # clock: the arrival envelope): at 2 m/s, 10 ms between them is 2 cm.
    print(f"RflySim vs MAVLink pose: p95 {p95 * 100:.2f} cm at {speed:.2f} m/s")
    assert p95 <= speed * 0.010 + 0.005
