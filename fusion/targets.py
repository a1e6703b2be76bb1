"""The latest placed measurement per target key, bounded, with what supersedes it.

Each measurement is placed once, with its own pose, gimbal angles and range, and shown with
its own capture time; nothing is carried over from an older one. The board's "not detected"
frame may carry another key than the target it replaces, so a frame of a source that saw
nothing ends the currency of every earlier measurement of that source. Ordering is by arrival
count, which the clock mapping cannot reorder.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, ValuesView
from typing import Final, NamedTuple

from gizmo_core import HoldReason, Selector

from .geometry import Quat, Vec3
from .inputs import VisionObservation
from .ranging import RangeSource


class RayFrame(NamedTuple):
    """What placed a ray, beyond the ray: the camera's origin and attitude in NED, the focal
    lengths used (a gimbal's zoom changes them), and how fast the camera moved and turned at
    the capture (an error in the capture time costs that much). The noise model needs them."""

    origin_ned_m: Vec3
    camera_quaternion_wxyz: Quat  # camera axes in NED
    fx_px: float
    fy_px: float
    velocity_ned_m_s: Vec3 | None = None  # the camera's, None: unknown (taken as still)
    angular_rate_ned_rad_s: Vec3 | None = None  # the vehicle's, about NED axes
    # A ground-plane fix of a box that may stand (``Placer.geometry``): how far (σ) the ray's
    # point may lie above or below where it was placed, by the target's own extent. None:
    # no such term (a ranged fix, or ``flat_targets``).
    extent_height_sigma_m: float | None = None
    # A sensor's fix from a lone reading: how far (σ) the target may have moved along the ray
    # since (``RangeFix.moved_sigma_m``), on top of the sensor's own σ
    range_moved_sigma_m: float = 0.0
    range_noise_gain: float = 1.0  # the sensor's σ times this (``RangeFix.noise_gain``)


class Geometry(NamedTuple):
    """Where a measurement puts its target; the world-frame fields need a pose."""

    bearing_camera: Vec3
    angular_size_deg: tuple[float, float]
    bearing_ned: Vec3 | None
    azimuth_deg: float | None
    elevation_deg: float | None
    position_ned_m: Vec3 | None
    range_m: float | None
    range_source: RangeSource | None
    frame: RayFrame | None = None  # the camera's origin and attitude when it has a pose


_NONE_HELD: Final = 2**63  # ``TargetTable._oldest_ns`` with no target held


class ImageEdges(NamedTuple):
    """Where a box's side reaches the image's edge: its distance from the centre, in the
    board's units (1000 at the edge), across (``x``) and down (``y``)."""

    x: float
    y: float


EDGE_PIXELS: Final = 2.0  # a side this near the image's edge reaches it, in pixels
_ROUNDING: Final = 0.75  # the board rounds a box's centre and size each to whole units
_MAX_MARGIN: Final = 100.0  # units: an image of a few pixels is not all edge


def image_edges(width_px: int, height_px: int) -> ImageEdges:
    """The edges of a ``width_px`` x ``height_px`` image: ``EDGE_PIXELS`` in from each,
    and what the board's rounding moves a side (at most a tenth of the way to the centre).
    A detector clips a box to the last pixel, 2000/``height_px`` units in (4.2 at 480 rows:
    a fixed 4 units missed half of such boxes, red team rt38)."""

    def edge(pixels: int) -> float:
        return 1000 - min(EDGE_PIXELS * 2000 / pixels + _ROUNDING, _MAX_MARGIN)

    return ImageEdges(edge(width_px), edge(height_px))


def cut_off(obs: VisionObservation, edges: ImageEdges) -> bool:
    """Whether ``obs``'s box reaches the image's ``edges``: the target goes on beyond them,
    and the box's centre is not the target's. A ray through that centre placed a target
    2.4 m off with a covariance of 5 cm (red team rt37), so such a measurement is not placed,
    and HOLDs ``truncated``. A result without a box is never cut off."""
    if not obs.has_box:
        return False
    x, y, half_w, half_h = obs.center_x, obs.center_y, obs.width / 2, obs.height / 2
    return abs(x) + half_w >= edges.x or abs(y) + half_h >= edges.y


class Placement(NamedTuple):
    obs: VisionObservation
    arrival: int  # the world's count of vision observations when this one arrived
    geometry: Geometry | None  # None when the frame located nothing
    pose_reason: HoldReason | None  # why it has no pose at capture (None: it has one)


class TargetTable:
    """At most ``max_targets`` keys, the least recently updated evicted first, except that a
    key the verdict selects (``keep``) goes only once no other is left: clutter of more keys
    than the table holds would otherwise evict the selected target as it came, and its HOLD
    would last as long as the clutter stays in view."""

    def __init__(self, *, max_targets: int = 64, keep: Selector | None = None) -> None:
        if max_targets < 1:
            raise ValueError(f"max_targets: expected >= 1, got {max_targets!r}")
        self._max = max_targets
        # None: every key is selected (the default selector), so the oldest goes
        self._keep = None if keep is None or keep == Selector() else keep
        # The keys held that ``keep`` does not select, least recently updated first: the
        # next to go, found without a walk past the selected ones (rt56: a walk cost 125 us
        # a new key with 1,024 keys held, all selected)
        self._unselected: OrderedDict[str, None] = OrderedDict()
        self._by_key: OrderedDict[str, Placement] = OrderedDict()
        # Every placement held, least recently updated first (a live view): for a caller
        # to whom the order is nothing, cheaper than ``iter``.
        self.held: ValuesView[Placement] = self._by_key.values()
        # source_id -> its newest "nothing": its arrival, and what it says (``lost``, or why
        # the link withheld that frame's result)
        self._negative: dict[int, tuple[int, HoldReason]] = {}
        # Counts the changes to ``_negative``: ``superseded`` answers as before while it holds.
        self.nothing_version = 0
        self._oldest_ns = _NONE_HELD  # at most the oldest capture held: ``forget``'s shortcut
        self.evicted = 0
        self.superseded_on_arrival = 0

    def __len__(self) -> int:
        return len(self._by_key)

    def __iter__(self) -> Iterator[Placement]:
        """Most recently updated first."""
        return reversed(self._by_key.values())

    def get(self, key: str) -> Placement | None:
        return self._by_key.get(key)

    def put(self, placement: Placement) -> bool:
        """Store a placed measurement unless its key already holds a later arrival."""
        obs = placement.obs
        key, by_key = obs.key, self._by_key
        held = by_key.get(key)
        if held is None:
            by_key[key] = placement  # last: the most recently updated
            keep = self._keep
            if keep is not None and not keep.matches(obs.source_id, obs.result_type, obs.id):
                self._unselected[key] = None
            while len(by_key) > self._max:  # a new key only
                self._evict()
        elif held.arrival > placement.arrival:
            self.superseded_on_arrival += 1
            return False
        else:
            by_key[key] = placement
            by_key.move_to_end(key)
            if key in self._unselected:
                self._unselected.move_to_end(key)
        if obs.host_capture_ns < self._oldest_ns:  # noqa: PLR1730 - min() without a call
            self._oldest_ns = obs.host_capture_ns
        return True

    def _evict(self) -> None:
        """Drop the least recently updated key that ``keep`` does not select, or else the
        least recently updated (counted)."""
        self.evicted += 1
        if self._unselected:
            del self._by_key[self._unselected.popitem(last=False)[0]]
        else:
            self._by_key.popitem(last=False)

    def saw_nothing(
        self, source_id: int, arrival: int, reason: HoldReason = HoldReason.LOST
    ) -> None:
        """A frame of ``source_id`` arriving as ``arrival`` reported nothing tracked
        (``reason``: what its source's earlier targets HOLD for)."""
        newest = self._negative.get(source_id)
        if newest is None or arrival > newest[0]:
            self._negative[source_id] = (arrival, reason)
            self.nothing_version += 1

    def superseded(self, placement: Placement) -> HoldReason | None:
        """Why a later frame of the same source ends ``placement`` (it reported nothing
        tracked, or the link withheld it); ``None``: none came."""
        newest = self._negative.get(placement.obs.source_id)
        if newest is None or placement.arrival >= newest[0]:
            return None
        return newest[1]

    def forget(self, before_capture_ns: int) -> None:
        """Drop targets whose newest capture is older than ``before_capture_ns``."""
        if before_capture_ns <= self._oldest_ns:
            return  # none is (every check asks: most find nothing to drop)
        by_key = self._by_key
        unselected = self._unselected
        for key in [k for k, p in by_key.items() if p.obs.host_capture_ns < before_capture_ns]:
            del by_key[key]
            unselected.pop(key, None)
        self._oldest_ns = min((p.obs.host_capture_ns for p in by_key.values()), default=_NONE_HELD)

    def clear(self) -> None:
        self._by_key.clear()
        self._unselected.clear()
        self._negative.clear()
        self.nothing_version += 1
        self._oldest_ns = _NONE_HELD
