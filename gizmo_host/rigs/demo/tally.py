"""The demo's tally of the world it watched: verdicts, HOLD reasons, and bearing errors.

Pure (no clock, no I/O): :class:`Tally` takes every published ``WorldSnapshot`` and compares
each newly captured, PROCEED target's NED bearing with the stand-in's ground truth at that
capture time (the scenario is a function of time, so the truth is exact, not a sample): the
line of sight to the target's centre, computed by the stand-in's own camera
(:mod:`hil_geometry.pinhole`), not by un-projecting a box with the host's model. The board
reports the centre of the target's box, which is not the image of its centre (a box seen from
45° above is about 1° off): that box-centre bias is a figure of its own. Errors go into fixed
histograms (:class:`ErrorHistogram`), so a demo left running for a day holds the same few
kilobytes as one of ten seconds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from fusion import WorldSnapshot
from gizmo_core import Decision
from gizmo_host.rigs.rflysim.scenario import SimScenario
from gizmo_host.rigs.rflysim.views import box_centre_ray_ned, camera_pose, image_box, target_view
from hil_geometry.pinhole import Pinhole, angle_deg

BIN_DEG = 0.005  # the percentiles' resolution
MAX_BINNED_DEG = 20.0  # errors beyond it share the last bin (the maximum is kept exactly)


class ErrorHistogram:
    """Angles in degrees, binned ``BIN_DEG`` wide up to ``MAX_BINNED_DEG``: bounded memory."""

    def __init__(self) -> None:
        self._bins = [0] * (round(MAX_BINNED_DEG / BIN_DEG) + 1)
        self.count = 0
        self.max_deg = 0.0

    def add(self, error_deg: float) -> None:
        index = min(int(error_deg / BIN_DEG), len(self._bins) - 1)
        self._bins[index] += 1
        self.count += 1
        self.max_deg = max(self.max_deg, error_deg)

    def percentile(self, fraction: float) -> float | None:
        """The upper edge of the bin holding the ``fraction`` quantile (None when empty)."""
        if not self.count:
            return None
        rank = max(1, math.ceil(fraction * self.count))
        seen = 0
        for index, count in enumerate(self._bins):
            seen += count
            if seen >= rank:
                return min((index + 1) * BIN_DEG, self.max_deg)
        return self.max_deg  # pragma: no cover - the bins hold every sample

    def to_dict(self) -> dict[str, Any]:
        p50, p95 = self.percentile(0.5), self.percentile(0.95)
        return {
            "samples": self.count,
            "p50": None if p50 is None else round(p50, 3),
            "p95": None if p95 is None else round(p95, 3),
            "max": round(self.max_deg, 3) if self.count else None,
        }


EDGE_PX: Final = 2.5  # a box side this near the image's edge is cut off (the host's 2 px, rounded)


class TruthView(NamedTuple):
    """What the camera sees of one target: the line of sight to its centre, the range to it,
    and how far the ray through the centre of its image box (what a detector reports) is off
    that line."""

    copter_id: int
    bearing_ned: tuple[float, float, float]
    azimuth_deg: float
    elevation_deg: float
    range_m: float
    box_bias_deg: float
    # Its box reaches the image's edge (within EDGE_PX): the host holds ``truncated`` there
    cut_off: bool = False


class GroundTruth:
    """The stand-in's truth for the host's targets: a target's class id names its vehicle.

    ``start_ns`` is the host time of scenario time 0 (the stand-in reports it with its first
    truth record); before it is known there is no truth.
    """

    def __init__(
        self, scenario: SimScenario, camera: Pinhole, vehicle_by_class: Mapping[int, int]
    ) -> None:
        self.scenario = scenario
        self.camera = camera
        self.vehicle_by_class = dict(vehicle_by_class)
        self.start_ns: int | None = None

    def view(self, class_id: int, capture_ns: int) -> TruthView | None:
        """The camera's view at host time ``capture_ns`` of the vehicle reported as
        ``class_id``; None for an unknown class, a vehicle outside the image, or before the
        truth's start is known."""
        copter = self.vehicle_by_class.get(class_id)
        if copter is None or self.start_ns is None:
            return None
        truth = self.scenario.truth(max(0.0, (capture_ns - self.start_ns) / 1e9))
        placed = next((p for p in self.scenario.placed(truth) if p.body.copter_id == copter), None)
        if placed is None:
            return None
        pose = camera_pose(self.camera, truth.ego.state)
        box = image_box(self.camera, pose, placed)
        if box is None:
            return None
        view = target_view(self.camera, truth.ego.state, copter, placed.position_ned_m)
        bias = angle_deg(box_centre_ray_ned(self.camera, pose, box), view.bearing_ned)
        right, bottom = self.camera.width_px - 0.5 - EDGE_PX, self.camera.height_px - 0.5 - EDGE_PX
        cut = (
            min(box.min_x, box.min_y) <= EDGE_PX - 0.5 or box.max_x >= right or box.max_y >= bottom
        )
        return TruthView(
            copter, view.bearing_ned, view.azimuth_deg, view.elevation_deg, view.range_m, bias, cut
        )


def bearing_error_deg(measured_ned: Sequence[float], truth: TruthView) -> float:
    return angle_deg(measured_ned, truth.bearing_ned)


class TargetTruth(NamedTuple):
    azimuth_deg: float
    elevation_deg: float
    range_m: float
    error_deg: float | None  # None while the target holds (no bearing to compare)


class Tally:
    """Counts over every snapshot; bearing errors over every new PROCEED capture."""

    def __init__(self, truth: GroundTruth | None = None) -> None:
        self.truth = truth
        self.snapshots = self.proceed = self.hold = self.hold_episodes = 0
        self.hold_reasons: Counter[str] = Counter()
        self.errors = ErrorHistogram()  # host bearing vs the line of sight to the centre
        self.box_bias = ErrorHistogram()  # box-centre ray vs that line, at the same captures
        self.latest: WorldSnapshot | None = None
        self.first_proceed_ns: int | None = None
        self.target_truth: dict[str, TargetTruth] = {}  # the newest, by target key
        self._seen: dict[str, int] = {}  # target key -> the newest capture compared

    def __call__(self, snapshot: WorldSnapshot) -> None:
        """A ``WorldService`` listener."""
        was_proceed = self.latest is not None and self.latest.proceed
        self.latest = snapshot
        self.snapshots += 1
        if snapshot.verdict is Decision.PROCEED:
            self.proceed += 1
            if self.first_proceed_ns is None:
                self.first_proceed_ns = snapshot.host_ns
        else:
            self.hold += 1
            self.hold_reasons.update(r.value for r in snapshot.reasons)
            self.hold_episodes += was_proceed
        if self.truth is not None:
            self._compare(snapshot)

    def _compare(self, snapshot: WorldSnapshot) -> None:
        assert self.truth is not None
        for target in snapshot.targets:
            if self._seen.get(target.key) == target.capture_ns:
                continue
            self._seen[target.key] = target.capture_ns
            view = self.truth.view(target.id, target.capture_ns)
            if view is None:  # not in the image (or no truth yet): nothing to compare
                self.target_truth.pop(target.key, None)
                continue
            error = None
            if target.verdict is Decision.PROCEED and target.bearing_ned is not None:
                error = bearing_error_deg(target.bearing_ned, view)
                self.errors.add(error)
                self.box_bias.add(view.box_bias_deg)
            self.target_truth[target.key] = TargetTruth(
                view.azimuth_deg, view.elevation_deg, view.range_m, error
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshots": self.snapshots,
            "proceed": self.proceed,
            "hold": self.hold,
            "hold_episodes": self.hold_episodes,
            "hold_reasons": dict(sorted(self.hold_reasons.items())),
        }
