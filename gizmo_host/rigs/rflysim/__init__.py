"""A RflySim stand-in: CopterSim's and RflySim3D's side of the wire, from a scripted scenario.

Pure parts (no clock, no socket): :mod:`~gizmo_host.rigs.rflysim.tracks` (scripted paths),
:mod:`~gizmo_host.rigs.rflysim.kinematics` (a vehicle's state from its path),
:mod:`~gizmo_host.rigs.rflysim.scenario` (the built-in scenarios and their ground truth),
:mod:`~gizmo_host.rigs.rflysim.bodies` and :mod:`~gizmo_host.rigs.rflysim.views` (ray casts and the
camera), :mod:`~gizmo_host.rigs.rflysim.sensorset` (the simulated Config.json sensors),
:mod:`~gizmo_host.rigs.rflysim.builders` (messages from the truth) and
:mod:`~gizmo_host.rigs.rflysim.core` (what to
send when, and the answers to requests). The asyncio edge is
:mod:`~gizmo_host.rigs.rflysim.sim_runner`, the command's options and lines
:mod:`~gizmo_host.cli.sim_options`, and the command ``gizmo-host sim``
:mod:`~gizmo_host.cli.sim`; importing this package imports none of them.
"""

from __future__ import annotations

from gizmo_host.rigs.rflysim.core import Datagram, PollResult, Rates, StandIn, StandInStats
from gizmo_host.rigs.rflysim.kinematics import SimVehicleState, vehicle_state
from gizmo_host.rigs.rflysim.scenario import (
    SCENARIOS,
    SimScenario,
    SimTime,
    SimVehicleTruth,
    Truth,
    Vehicle,
    build_scenario,
)
from gizmo_host.rigs.rflysim.sensorset import builtin_config, builtin_config_text
from gizmo_host.rigs.rflysim.views import TargetView

__all__ = [
    "SCENARIOS",
    "Datagram",
    "PollResult",
    "Rates",
    "SimScenario",
    "SimTime",
    "SimVehicleState",
    "SimVehicleTruth",
    "StandIn",
    "StandInStats",
    "TargetView",
    "Truth",
    "Vehicle",
    "build_scenario",
    "builtin_config",
    "builtin_config_text",
    "vehicle_state",
]
