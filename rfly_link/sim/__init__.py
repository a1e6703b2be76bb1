"""A RflySim stand-in: CopterSim's and RflySim3D's side of the wire, from a scripted scenario.

Pure parts (no clock, no socket): :mod:`~rfly_link.sim.tracks` (scripted paths),
:mod:`~rfly_link.sim.kinematics` (a vehicle's state from its path),
:mod:`~rfly_link.sim.scenario` (the built-in scenarios and their ground truth),
:mod:`~rfly_link.sim.world` and :mod:`~rfly_link.sim.views` (ray casts and the camera),
:mod:`~rfly_link.sim.sensorset` (the simulated Config.json sensors),
:mod:`~rfly_link.sim.builders` (messages from the truth) and :mod:`~rfly_link.sim.core` (what to
send when, and the answers to requests). The asyncio edge is :mod:`~rfly_link.sim.runner`, the
command ``gizmo-host sim`` is :mod:`~rfly_link.sim.cli`; importing this package imports neither.
"""

from __future__ import annotations

from rfly_link.sim.core import Datagram, Output, Rates, StandIn, StandInStats
from rfly_link.sim.kinematics import VehicleState, vehicle_state
from rfly_link.sim.scenario import (
    SCENARIOS,
    Scenario,
    SimTime,
    Truth,
    Vehicle,
    VehicleTruth,
    build_scenario,
)
from rfly_link.sim.sensorset import builtin_config, builtin_config_text
from rfly_link.sim.views import TargetView

__all__ = [
    "SCENARIOS",
    "Datagram",
    "Output",
    "Rates",
    "Scenario",
    "SimTime",
    "StandIn",
    "StandInStats",
    "TargetView",
    "Truth",
    "Vehicle",
    "VehicleState",
    "VehicleTruth",
    "build_scenario",
    "builtin_config",
    "builtin_config_text",
    "vehicle_state",
]
