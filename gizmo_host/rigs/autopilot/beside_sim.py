"""``gizmo-host sim --mavlink``: the RflySim stand-in's ego also as a PX4-like autopilot.

CopterSim relays PX4 SITL's MAVLink to a companion on two ports per vehicle N: it listens on
``20100 + 2N - 2`` and sends to ``20100 + 2N - 1`` (the companion's side is the worked config,
docs/rflysim-px4.toml). The stand-in autopilot
(:class:`~gizmo_host.rigs.autopilot.standin.StandinAutopilot`: its own boot clock, TIMESYNC, the
streams SET_MESSAGE_INTERVAL asks for, LANDING_TARGET kept) flies the same scenario as the RflySim
stand-in, so a host can take either pose.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from gizmo_host.mavlink import parse_url
from gizmo_host.mavlink.urls import Endpoint, rflysim_companion_ports
from gizmo_host.rigs.autopilot.standin import StandinAutopilot, scenario_vehicle
from gizmo_host.rigs.rflysim.sim_runner import SimRunner


def autopilot_endpoint(url: str, copter_id: int, host: str, bind: str) -> Endpoint:
    """``url`` (``""``: CopterSim's side of vehicle ``copter_id``'s companion ports)."""
    if url:
        return parse_url(url)
    companion_rx, coptersim_rx = rflysim_companion_ports(copter_id)
    return parse_url(f"udpin:{bind}:{coptersim_rx}", f"{host}:{companion_rx}")


async def with_autopilot(
    main: Coroutine[Any, Any, Any], runner: SimRunner, url: str, host: str, bind: str
) -> Any:
    """Run ``main`` (the RflySim stand-in) with the ego's autopilot beside it until it ends."""
    scenario = runner.stand_in.scenario
    endpoint = autopilot_endpoint(url, scenario.ego.copter_id, host, bind)
    autopilot = StandinAutopilot(endpoint, scenario_vehicle(scenario, lambda: runner.start_ns))
    task = asyncio.create_task(autopilot.run(), name="sim autopilot")
    try:
        return await main
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
