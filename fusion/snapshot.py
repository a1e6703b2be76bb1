"""What the world model publishes: one immutable snapshot, and its JSON form.

``WorldSnapshot.to_dict()`` is JSON-ready, ``type: "world"`` with ``format_version``; the
schema is ``fusion/schemas/world.json`` and the tests validate real snapshots against it. Host
times are ``time.monotonic_ns()`` values (``*_ns``), ages milliseconds. A HOLD target keeps
its key, capture time and reasons; its bearings, position, velocity, covariance and range are
``null``: a consumer that reads only numbers can never act on a target it should not. With
tracking, a target's position and velocity are its track's estimate at ``capture_ns``: a
consumer predicts it to its own time ``t`` as position + velocity × (t - capture_ns).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from importlib import resources
from typing import Any, Final

from gizmo_core import Decision, HoldReason

from .geometry import Quat, Vec3
from .ranging import RangeSource
from .tracking.tracks import TrackStatus

FORMAT_VERSION: Final = 1

# What a verdict change means: the overall verdict, its reasons and target, and each target's
# key, verdict and reasons (``WorldSnapshot.verdict_key``, ``WorldModel.verdict``).
_TargetKey = tuple[str, Decision, tuple[HoldReason, ...]]
VerdictKey = tuple[Decision, tuple[HoldReason, ...], str | None, frozenset[_TargetKey]]


class SourceState(Enum):
    OK = "OK"  # arriving within its stale threshold
    STALE = "STALE"  # late, not yet given up on (or the link is silent)
    DEAD = "DEAD"  # never arrived, gone for long, or the link is down
    RESYNC = "RESYNC"  # arriving, but its clock is re-acquiring (not locked, jumped, reset)
    FAULT = "FAULT"  # recent inputs were inconsistent and dropped


@dataclass(frozen=True, slots=True)
class SourceStatus:
    state: SourceState
    age_ms: float | None  # since its newest input; None when none arrived

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state.value, "age_ms": _ms(self.age_ms)}


@dataclass(frozen=True, slots=True)
class VehicleState:
    """The newest pose: FRD body attitude in NED, on the host timeline."""

    copter_id: int
    time_ns: int
    age_ms: float
    epoch: int
    position_ned_m: Vec3
    quaternion_wxyz: Quat
    velocity_ned_m_s: Vec3 | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "copter_id": self.copter_id,
            "time_ns": self.time_ns,
            "age_ms": _ms(self.age_ms),
            "epoch": self.epoch,
            "position_ned_m": list(self.position_ned_m),
            "quaternion_wxyz": list(self.quaternion_wxyz),
            "velocity_ned_m_s": _list(self.velocity_ned_m_s),
        }


@dataclass(frozen=True, slots=True)
class TargetState:
    key: str  # "source:type:id"
    result_type: int
    id: int
    label: str
    confidence: int
    tracked: bool
    capture_ns: int  # the measurement's capture time on the host clock
    age_ms: float
    verdict: Decision
    reasons: tuple[HoldReason, ...]
    bearing_camera: Vec3 | None  # unit vector, camera axes (x optical, y right, z down)
    bearing_ned: Vec3 | None  # unit vector, world NED
    azimuth_deg: float | None  # from north towards east, [0, 360)
    elevation_deg: float | None  # negative below the horizon
    angular_size_deg: tuple[float, float] | None  # [width, height]
    position_ned_m: Vec3 | None  # with tracking: the estimate at capture_ns
    range_m: float | None
    range_source: RangeSource | None
    velocity_ned_m_s: Vec3 | None = None  # the track's estimate at capture_ns
    covariance_ned: tuple[float, ...] | None = None  # 6×6 row-major: n, e, d, vn, ve, vd
    track_id: int | None = None
    track_state: TrackStatus | None = None
    # Where the camera was at the capture (NED), for a line of sight to the estimate; not in
    # the JSON line (``position_ned_m - range_m * bearing_ned`` there, for a measurement).
    camera_ned_m: Vec3 | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "result_type": self.result_type,
            "id": self.id,
            "label": self.label,
            "confidence": self.confidence,
            "tracked": self.tracked,
            "capture_ns": self.capture_ns,
            "age_ms": _ms(self.age_ms),
            "verdict": self.verdict.value,
            "reasons": [r.value for r in self.reasons],
            "bearing_camera": _list(self.bearing_camera),
            "bearing_ned": _list(self.bearing_ned),
            "azimuth_deg": self.azimuth_deg,
            "elevation_deg": self.elevation_deg,
            "angular_size_deg": _list(self.angular_size_deg),
            "position_ned_m": _list(self.position_ned_m),
            "range_m": self.range_m,
            "range_source": None if self.range_source is None else self.range_source.value,
            "velocity_ned_m_s": _list(self.velocity_ned_m_s),
            "covariance_ned": _list(self.covariance_ned),
            "track_id": self.track_id,
            "track_state": None if self.track_state is None else self.track_state.value,
        }


@dataclass(frozen=True, slots=True)
class WorldSnapshot:
    """``valid_until_ns``: the host time after which, with no newer snapshot, ``verdict`` is
    void. PROCEED: the selected target's stale time (capture + TTL), or the pose's when a pose
    is required, whichever is first. HOLD: when it is re-evaluated at the latest (the model's
    next deadline; a publisher caps it with its own next tick)."""

    seq: int
    host_ns: int
    valid_until_ns: int
    verdict: Decision
    reasons: tuple[HoldReason, ...]
    selected: str | None  # the key of the target the verdict is about
    vehicle: VehicleState | None
    sources: Mapping[str, SourceStatus]
    targets: tuple[TargetState, ...]  # newest capture first
    # host_ns on CLOCK_REALTIME, stamped by the publisher (the model reads no clock); None
    # until then, or when no wall clock is known (a replayed capture that recorded none).
    wall_ns: int | None = None

    @property
    def proceed(self) -> bool:
        return self.verdict is Decision.PROCEED

    def verdict_key(self) -> VerdictKey:
        """What a verdict change means (a publisher publishes when it changes)."""
        return (
            self.verdict,
            self.reasons,
            self.selected,
            frozenset((t.key, t.verdict, t.reasons) for t in self.targets),
        )

    def target(self, key: str) -> TargetState | None:
        """The target ``key`` names: its PROCEED one when it has several (tracks), else the
        first (the newest capture)."""
        mine = [t for t in self.targets if t.key == key]
        return next((t for t in mine if t.verdict is Decision.PROCEED), mine[0] if mine else None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "world",
            "format_version": FORMAT_VERSION,
            "seq": self.seq,
            "host_ns": self.host_ns,
            "wall_ns": self.wall_ns,
            "valid_until_ns": self.valid_until_ns,
            "verdict": self.verdict.value,
            "reasons": [r.value for r in self.reasons],
            "selected": self.selected,
            "vehicle": None if self.vehicle is None else self.vehicle.to_dict(),
            "sources": {name: s.to_dict() for name, s in self.sources.items()},
            "targets": [t.to_dict() for t in self.targets],
        }


def world_schema() -> dict[str, Any]:
    """The JSON Schema of ``WorldSnapshot.to_dict()``."""
    text = resources.files("fusion").joinpath("schemas/world.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _list(value: tuple[float, ...] | None) -> list[float] | None:
    return None if value is None else list(value)
