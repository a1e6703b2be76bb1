"""What the board reports of the targets it sees: the output policy, sans-I/O.

A target source (the built-in scenario, RflySim boxes, projected poses) says which targets are
in view at a capture, as :class:`TargetInView` values in the board's box units. The policy turns
one recognition cycle's detections into frame fields, as the board's detector task would:

- the task's ``result_type`` and a class per target (``classes``, e.g. copter 2 ->
  PEDESTRIAN; others get ``default_class``, or are not reported when it is None);
- ``per_cycle = "best"``: one frame per cycle, the most confident target (then the largest,
  then the lowest name); ``"all"``: one frame per reported target, in name order;
- nothing in view: one "not detected" frame (flags 06) with ``not_detected_id``.

The latency model draws each cycle's processing time: the frame's ``age_ms``, and the time
after the capture at which the board reads its clock for ``timestamp_ms`` and sends.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from gizmo_core import ConfigError
from gizmo_host.rigs.board.board import LOST_RELATIVE, TRACKED_RELATIVE
from gizmo_host.wire.results import BlobColor, DetectorId, NormBox, ResultType

BOX_RESULT_TYPES = (ResultType.COLOR_BLOB, ResultType.QR_CODE, ResultType.DETECTOR)
_INT16 = (-0x8000, 0x7FFF)


class TargetInView(NamedTuple):
    """One target in view at a capture: its name at the source, box and confidence.

    ``seen_ns``: the host time the source's data describe (a box list's or a pose's arrival),
    when it is older than the cycle's capture; None: the capture itself.
    """

    target: str  # a CopterID ("2"), or a scene object's name
    box: NormBox
    confidence: int  # 0..100
    seen_ns: int | None = None


class FrameFields(NamedTuple):
    """The payload fields of one frame the policy decided on (the board adds the header)."""

    flags: int
    id: int
    confidence: int
    x: int
    y: int
    w: int
    h: int
    target: str | None  # None: a not-detected frame
    seen_ns: int | None = None  # the detection's (None: the cycle's capture)


class PerCycle(Enum):
    BEST = "best"
    ALL = "all"


def class_id(result_type: ResultType, value: int | str, key: str) -> int:
    """A class given as a number or a name of the task's ids (PEDESTRIAN, RED, ...)."""
    if isinstance(value, str):
        names: Mapping[str, int] = {}
        if result_type is ResultType.DETECTOR:
            names = {d.name: int(d) for d in DetectorId}
        elif result_type is ResultType.COLOR_BLOB:
            names = {c.name: int(c) for c in BlobColor}
        upper = value.strip().upper()
        if upper in names:
            return names[upper]
        try:
            value = int(value, 0)
        except ValueError:
            expected = ", ".join(names) or "an integer"
            raise ConfigError(
                f"{key}: expected a {result_type.name} class ({expected}), got {value!r}"
            ) from None
    if isinstance(value, bool) or not _INT16[0] <= value <= _INT16[1]:
        raise ConfigError(f"{key}: expected a class id in -32768..32767, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class OutputPolicy:
    """How detections become frames (see the module docstring)."""

    result_type: ResultType = ResultType.DETECTOR
    classes: Mapping[str, int] = field(default_factory=dict)
    default_class: int | None = int(DetectorId.PEDESTRIAN)
    not_detected_id: int | None = None  # None: the first mapped class, else default_class, else 0
    per_cycle: PerCycle = PerCycle.BEST

    def __post_init__(self) -> None:
        if self.result_type not in BOX_RESULT_TYPES:
            names = ", ".join(t.name for t in BOX_RESULT_TYPES)
            raise ConfigError(
                f"output.result_type: expected a task with boxes ({names}), "
                f"got {self.result_type.name}"
            )

    @property
    def lost_id(self) -> int:
        if self.not_detected_id is not None:
            return self.not_detected_id
        if self.classes:
            return next(iter(self.classes.values()))
        return self.default_class if self.default_class is not None else 0

    def class_of(self, target: str) -> int | None:
        return self.classes.get(target, self.default_class)

    def frames(self, detections: Sequence[TargetInView]) -> list[FrameFields]:
        """The frames of one recognition cycle: at least one, "not detected" when none."""
        reported = []
        for detection in detections:
            ident = self.class_of(detection.target)
            if ident is not None:
                reported.append((detection, ident))
        if not reported:
            return [FrameFields(LOST_RELATIVE, self.lost_id, 0, 0, 0, 0, 0, None)]
        if self.per_cycle is PerCycle.BEST:
            best = min(
                reported,
                key=lambda pair: (
                    -pair[0].confidence,
                    -(pair[0].box.width * pair[0].box.height),
                    pair[0].target,
                ),
            )
            reported = [best]
        else:
            reported.sort(key=lambda pair: pair[0].target)
        return [
            FrameFields(
                TRACKED_RELATIVE,
                ident,
                min(max(d.confidence, 0), 100),
                d.box.center_x,
                d.box.center_y,
                d.box.width,
                d.box.height,
                d.target,
                d.seen_ns,
            )
            for d, ident in reported
        ]


class LatencyKind(Enum):
    FIXED = "fixed"  # always ``a_ms``
    UNIFORM = "uniform"  # uniform in ``a_ms .. b_ms``
    NORMAL = "normal"  # mean ``a_ms``, standard deviation ``b_ms``, cut at 0


@dataclass(frozen=True, slots=True)
class LatencyModel:
    """The board's processing latency per cycle, in whole ms (0..65535, the age_ms field)."""

    kind: LatencyKind = LatencyKind.NORMAL
    a_ms: float = 12.0
    b_ms: float = 1.5

    def __post_init__(self) -> None:
        if not 0 <= self.a_ms <= 65535 or not 0 <= self.b_ms <= 65535:
            raise ConfigError(f"latency: expected values in 0..65535 ms, got {self.describe()}")
        if self.kind is LatencyKind.UNIFORM and self.b_ms < self.a_ms:
            raise ConfigError(f"latency: expected uniform:LOW:HIGH with LOW <= HIGH, got {self}")

    def draw(self, rng: random.Random) -> int:
        if self.kind is LatencyKind.FIXED:
            value = self.a_ms
        elif self.kind is LatencyKind.UNIFORM:
            value = rng.uniform(self.a_ms, self.b_ms)
        else:
            value = rng.gauss(self.a_ms, self.b_ms)
        return min(max(round(value), 0), 65535)

    def describe(self) -> str:
        if self.kind is LatencyKind.FIXED:
            return f"{self.a_ms:g}"
        return f"{self.kind.value}:{self.a_ms:g}:{self.b_ms:g}"

    @classmethod
    def parse(cls, spec: str | float | int, key: str = "latency") -> LatencyModel:
        """``12`` (fixed), ``uniform:8:16`` or ``normal:12:2`` (ms)."""
        if isinstance(spec, (int, float)) and not isinstance(spec, bool):
            return cls(LatencyKind.FIXED, float(spec), 0.0)
        if not isinstance(spec, str):
            raise ConfigError(
                f"{key}: expected MS, uniform:LOW:HIGH or normal:MEAN:SD, got {spec!r}"
            )
        parts = spec.split(":")
        try:
            numbers = [float(p) for p in parts[1:]] if len(parts) > 1 else [float(parts[0])]
            kind = LatencyKind(parts[0]) if len(parts) > 1 else LatencyKind.FIXED
        except ValueError:
            raise ConfigError(
                f"{key}: expected MS, uniform:LOW:HIGH or normal:MEAN:SD, got {spec!r}"
            ) from None
        if len(numbers) != (1 if kind is LatencyKind.FIXED else 2):
            raise ConfigError(
                f"{key}: expected MS, uniform:LOW:HIGH or normal:MEAN:SD, got {spec!r}"
            )
        return cls(kind, numbers[0], numbers[1] if len(numbers) > 1 else 0.0)
