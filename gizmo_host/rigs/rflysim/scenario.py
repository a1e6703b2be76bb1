"""A scripted scenario and its ground truth at any scenario time: the stand-in's pure core.

A :class:`SimScenario` is the ego vehicle and the other vehicles, each on a
:class:`~gizmo_host.rigs.rflysim.tracks.Track`, plus the simulation clock (:class:`SimTime`: where
it starts and an optional jump). :meth:`SimScenario.truth` takes the scenario time as an argument
and never reads a clock, so tests ask for the truth at any instant and the runner paces it by the
real one. The built-in scenarios are in :data:`SCENARIOS`:

- ``orbit``: the ego circles a parked ground vehicle at 10 m radius and 10 m up, nose on it,
  and from 8 s on, every 20 s, spins a full extra turn at 90°/s (the target leaves the image);
- ``approach``: a ground vehicle drives north at 1.5 m/s; the ego closes from 30 m behind it to
  10 m (time constant 8 s), 10 m up, nose on it;
- ``track``: a ground vehicle drives a 20 m circle at 3 m/s (8.6°/s of turn); the ego follows
  10 m behind it, 10 m up, nose on it. Its speed and turn rate are settable
  (:class:`TargetMotion`, ``gizmo-host sim --target-speed --target-turn-rate``): the circle's
  radius is the speed over the turn rate, and a turn rate of 0 drives straight north.

Each has a bystander copter hovering aside, so there are always two other vehicles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

from gizmo_host.rigs.rflysim.bodies import Body, Placed
from gizmo_host.rigs.rflysim.kinematics import SimVehicleState, vehicle_state
from gizmo_host.rigs.rflysim.tracks import (
    Approach,
    CircleDrive,
    Drive,
    Follow,
    Hover,
    MirroredCircle,
    Orbit,
    Track,
)
from gizmo_host.rigs.rflysim.views import TargetView, target_view
from hil_geometry.pinhole import Pinhole
from rfly_link import ports

CAR_SIZE_M = (4.5, 1.8, 1.5)  # length, width, height
COPTER_SIZE_M = (0.6, 0.6, 0.25)
QUADCOPTER = 3  # CopterSim's vehicle type for a quadcopter
_CAR_DOWN_M = -CAR_SIZE_M[2] / 2  # a car's reported position is its box's centre


@dataclass(frozen=True, slots=True)
class SimTime:
    """Scenario time -> simulation time: a start value and an optional discontinuity.

    From scenario time ``jump_at_s`` on, simulation time is ``jump_by_s`` further on (or back,
    when negative: a restart); the first odometry reply after it carries the discontinuity flag.
    """

    start_s: float = 0.0
    jump_at_s: float | None = None
    jump_by_s: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start_s) and self.start_s >= 0):
            raise ValueError(f"SimTime.start_s: expected a finite number >= 0, got {self.start_s}")
        if self.jump_at_s is not None:
            if not (math.isfinite(self.jump_at_s) and self.jump_at_s >= 0):
                raise ValueError(f"SimTime.jump_at_s: expected >= 0, got {self.jump_at_s}")
            if not math.isfinite(self.jump_by_s) or self.jump_by_s == 0:
                raise ValueError(
                    f"SimTime.jump_by_s: expected a finite non-zero number, got {self.jump_by_s}"
                )
            if self.start_s + self.jump_at_s + self.jump_by_s < 0:
                raise ValueError(
                    f"SimTime.jump_by_s: expected the simulation time to stay >= 0, got "
                    f"{self.start_s + self.jump_at_s + self.jump_by_s} s after the jump"
                )

    def epoch(self, t_s: float) -> int:
        """0 before the jump, 1 from it on."""
        return int(self.jump_at_s is not None and t_s >= self.jump_at_s)

    def sim_time_s(self, t_s: float) -> float:
        return self.start_s + t_s + (self.jump_by_s if self.epoch(t_s) else 0.0)


@dataclass(frozen=True, slots=True)
class Vehicle:
    copter_id: int
    track: Track
    size_m: tuple[float, float, float] = COPTER_SIZE_M  # length, width, height (body FRD)
    vehicle_type: int = QUADCOPTER

    def __post_init__(self) -> None:
        if not 1 <= self.copter_id <= ports.MAX_COPTERS:
            raise ValueError(f"copter_id: expected 1..{ports.MAX_COPTERS}, got {self.copter_id}")
        Body(self.copter_id, self.size_m)  # checks the sizes

    @property
    def body(self) -> Body:
        return Body(self.copter_id, self.size_m)


class SimVehicleTruth(NamedTuple):
    copter_id: int
    state: SimVehicleState

    def to_dict(self) -> dict[str, Any]:
        s = self.state
        return {
            "copter_id": self.copter_id,
            "position_ned_m": list(s.position_ned_m),
            "velocity_ned_m_s": list(s.velocity_ned_m_s),
            "quaternion_wxyz": list(s.quaternion_wxyz),
            "euler_rad": list(s.euler_rad),
            "angular_rate_frd_rad_s": list(s.angular_rate_frd_rad_s),
        }


class Truth(NamedTuple):
    """The scenario at one instant: every vehicle's state and, with a camera, the targets'
    bearings from it."""

    t_s: float  # scenario time
    sim_time_s: float  # what CopterSim and RflySim3D stamp on their messages
    epoch: int  # SimTime.epoch: changes at the time jump
    ego: SimVehicleTruth
    targets: tuple[SimVehicleTruth, ...]
    views: tuple[TargetView, ...]  # one per target when a camera is given, else empty

    def target(self, copter_id: int) -> SimVehicleTruth:
        for t in self.targets:
            if t.copter_id == copter_id:
                return t
        raise KeyError(f"no vehicle with CopterID {copter_id} in the scenario")

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "truth",
            "t_s": self.t_s,
            "sim_time_s": self.sim_time_s,
            "epoch": self.epoch,
            "ego": self.ego.to_dict(),
            "targets": [t.to_dict() for t in self.targets],
            "views": [v.to_dict() for v in self.views],
        }


@dataclass(frozen=True, slots=True)
class SimScenario:
    name: str
    ego: Vehicle
    others: tuple[Vehicle, ...]
    time: SimTime = SimTime()
    ground_down_m: float = 0.0

    def __post_init__(self) -> None:
        ids = [self.ego.copter_id, *(v.copter_id for v in self.others)]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Scenario {self.name}: expected distinct CopterIDs, got {ids}")

    @property
    def vehicles(self) -> tuple[Vehicle, ...]:
        return (self.ego, *self.others)

    def state(self, copter_id: int, t_s: float) -> SimVehicleState:
        for vehicle in self.vehicles:
            if vehicle.copter_id == copter_id:
                return vehicle_state(vehicle.track, t_s)
        raise KeyError(f"no vehicle with CopterID {copter_id} in scenario {self.name}")

    def truth(self, t_s: float, camera: Pinhole | None = None) -> Truth:
        """Ground truth at scenario time ``t_s`` (bearings from ``camera`` when given)."""
        ego = SimVehicleTruth(self.ego.copter_id, vehicle_state(self.ego.track, t_s))
        targets = tuple(
            SimVehicleTruth(v.copter_id, vehicle_state(v.track, t_s)) for v in self.others
        )
        views: tuple[TargetView, ...] = ()
        if camera is not None:
            views = tuple(
                target_view(camera, ego.state, t.copter_id, t.state.position_ned_m) for t in targets
            )
        return Truth(t_s, self.time.sim_time_s(t_s), self.time.epoch(t_s), ego, targets, views)

    def placed(self, truth: Truth) -> list[Placed]:
        """The other vehicles' boxes where the truth has them (for ray casts and boxes)."""
        bodies = {v.copter_id: v.body for v in self.others}
        return [
            Placed(bodies[t.copter_id], t.state.position_ned_m, t.state.quaternion_wxyz)
            for t in truth.targets
        ]


def _bystander(copter_id: int) -> Vehicle:
    return Vehicle(copter_id, Hover((-15.0, 20.0, -6.0), math.radians(45.0)))


def _car(copter_id: int, track: Track) -> Vehicle:
    return Vehicle(copter_id, track, CAR_SIZE_M)


def orbit(ego_id: int = 1, time: SimTime = SimTime()) -> SimScenario:
    car = _car(ego_id + 1, Hover((0.0, 0.0, _CAR_DOWN_M)))
    ego = Vehicle(ego_id, Orbit(center_ned_m=(0.0, 0.0, 0.0), radius_m=10.0, altitude_m=10.0))
    return SimScenario("orbit", ego, (car, _bystander(ego_id + 2)), time)


def approach(ego_id: int = 1, time: SimTime = SimTime()) -> SimScenario:
    drive = Drive((30.0, 0.0, _CAR_DOWN_M), speed_m_s=1.5, heading_deg=0.0)
    ego = Vehicle(ego_id, Approach(drive, start_distance_m=30.0, standoff_m=10.0))
    return SimScenario("approach", ego, (_car(ego_id + 1, drive), _bystander(ego_id + 2)), time)


@dataclass(frozen=True, slots=True)
class TargetMotion:
    """The ``track`` scenario's ground vehicle: speed and turn rate (positive: clockwise seen
    from above, north towards east)."""

    speed_m_s: float = 3.0
    turn_rate_deg_s: float = math.degrees(3.0 / 20.0)  # a 20 m circle at 3 m/s

    def __post_init__(self) -> None:
        if not (math.isfinite(self.speed_m_s) and 0.0 <= self.speed_m_s <= 50.0):
            raise ValueError(f"target speed: expected 0..50 m/s, got {self.speed_m_s}")
        if not (math.isfinite(self.turn_rate_deg_s) and abs(self.turn_rate_deg_s) <= 180.0):
            raise ValueError(
                f"target turn rate: expected -180..180 deg/s, got {self.turn_rate_deg_s}"
            )

    def path(self) -> Track:
        rate = math.radians(self.turn_rate_deg_s)
        if rate == 0.0 or self.speed_m_s == 0.0:
            return Drive((0.0, 0.0, _CAR_DOWN_M), self.speed_m_s, 0.0)
        radius = self.speed_m_s / abs(rate)
        if rate > 0:
            return CircleDrive((0.0, 0.0, _CAR_DOWN_M), radius_m=radius, speed_m_s=self.speed_m_s)
        return MirroredCircle((0.0, 0.0, _CAR_DOWN_M), radius, self.speed_m_s)


def track(
    ego_id: int = 1, time: SimTime = SimTime(), target: TargetMotion = TargetMotion()
) -> SimScenario:
    path = target.path()
    ego = Vehicle(ego_id, Follow(path, distance_m=10.0, altitude_m=10.0))
    return SimScenario("track", ego, (_car(ego_id + 1, path), _bystander(ego_id + 2)), time)


ScenarioFactory = Callable[[int, SimTime], SimScenario]

SCENARIOS: Mapping[str, ScenarioFactory] = MappingProxyType(
    {"orbit": orbit, "approach": approach, "track": track}
)


def build_scenario(
    name: str,
    *,
    ego_id: int = 1,
    time: SimTime = SimTime(),
    target: TargetMotion | None = None,
) -> SimScenario:
    """A built-in scenario by name; the others are CopterIDs ``ego_id + 1`` and ``+ 2``.
    ``target``: the ``track`` scenario's target motion (only there)."""
    factory = SCENARIOS.get(name)
    if factory is None:
        raise ValueError(f"scenario: expected one of {', '.join(SCENARIOS)}, got {name!r}")
    if not 1 <= ego_id <= ports.MAX_COPTERS - 2:
        raise ValueError(f"ego copter: expected 1..{ports.MAX_COPTERS - 2}, got {ego_id}")
    if target is not None:
        if name != "track":
            raise ValueError(f"target motion: only for the track scenario, not {name!r}")
        return track(ego_id, time, target)
    return factory(ego_id, time)
