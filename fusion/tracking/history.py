"""One key's frames in the tracker's window, and the repeated image that is no new frame.

A **frame** is the detections of one key at one capture time. A board whose line is faster
than its camera reports one image in frame after frame: a positive measurement with the box
of a detection held within ``SAME_IMAGE_NS`` of its capture (the board's clock counts
milliseconds, so either way) is that image again, counted as a duplicate and never fused.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from ..inputs import VisionObservation
from ..targets import Placement
from .noise import Array
from .tracks import Track

SAME_IMAGE_NS: Final = 2_000_000  # one image's reports: captures this close, the same box
MAX_HEARD: Final = 64  # frames without a detection remembered per source or key, and keys so


class Detection(NamedTuple):
    placement: Placement
    z: Array  # position, NED (3)
    r: Array  # its covariance (3×3)
    gate: float  # the χ² gate for its degrees of freedom
    z_f: list[float]  # z and r as plain floats, for the gate's 3×3 algebra
    r_f: list[list[float]]
    box: tuple[int, int, int, int]  # the board's box: a repeat of the image has the same
    # The covariance of a fix at a given point (NED) by the same ray's frame: a track weighs
    # the measurement by the noise where it predicts the target. None: ``r`` wherever.
    toward: Callable[[list[float]], Array] | None = None
    # A ground-plane fix of a target that may stand (``[world] flat_targets = false``): ``z``
    # is its point on the plane, not the target's. A track holds one kind or the other.
    on_plane: bool = False


class Frame(NamedTuple):
    capture_ns: int
    detections: tuple[Detection, ...]  # in a fixed order (by box, then arrival)


def detection_order(detection: Detection) -> tuple[int, ...]:
    """A frame's order of its detections: by box, then arrival."""
    obs = detection.placement.obs
    return (obs.center_x, obs.center_y, obs.width, obs.height, detection.placement.arrival)


def remember(table: OrderedDict[Any, deque[int]], name: Any, capture_ns: int) -> None:
    """Note a frame without a detection of ``name`` (a source or a key), boundedly."""
    heard = table.get(name)
    if heard is None:
        heard = table[name] = deque(maxlen=MAX_HEARD)
        while len(table) > MAX_HEARD:
            table.popitem(last=False)
    elif heard and heard[-1] == capture_ns:
        return  # one frame, reported again (several lost results of one image): kept once
    heard.append(capture_ns)


class History:
    """One key's frames in the window, the tracks before each, and the tracks after all."""

    __slots__ = (
        "before", "blind_ns", "floor_ns", "frames", "seen_ns", "source_id", "times", "tracks"
    )  # fmt: skip

    def __init__(self, source_id: int) -> None:
        self.source_id = source_id
        self.frames: list[Frame] = []
        self.times: list[int] = []  # the frames' capture times, for bisecting
        self.before: list[tuple[Track, ...]] = []
        self.tracks: tuple[Track, ...] = ()
        self.floor_ns: int | None = None  # the newest frame forgotten: nothing at or before it
        self.seen_ns: int | None = None  # the newest capture with a detection of the key
        self.blind_ns: int | None = None  # the newest with a positive of it, not placed


def repeated(history: History, t: int, obs: VisionObservation) -> int | None:
    """The capture time of a frame ``history`` holds that ``obs``, captured at ``t``, reports
    again (``None``: none): a detection with its box in a frame within ``SAME_IMAGE_NS``."""
    box = (obs.center_x, obs.center_y, obs.width, obs.height)
    times, frames = history.times, history.frames
    if times and -SAME_IMAGE_NS <= t - times[-1] <= SAME_IMAGE_NS:  # most: the newest frame's
        for d in frames[-1].detections:
            if d.box == box:
                return times[-1]
    start = bisect_left(times, t - SAME_IMAGE_NS)
    if start == len(times):  # nothing held that recent (a new image, in order)
        return None
    for k in range(start, bisect_right(times, t + SAME_IMAGE_NS, start)):
        for d in frames[k].detections:
            if d.box == box:
                return times[k]
    return None
