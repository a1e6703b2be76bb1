"""The lower envelope of one epoch's (remote time, offset) samples, and the remote clock's skew.

Every offset ``host - remote`` is the true offset plus a delay that is never negative, so the
true line lies on the lower envelope of the cloud. Remote time is cut into segments; each keeps
its minimum, which sheds jitter and late outliers without statistics about them. The slope (the
remote oscillator's skew against the host's) is a least-squares fit through the segment minima
of the window, points well above the fit discarded, clamped to the skew bound; it outlives the
epoch (it is the same oscillator). The phase is the lowest recent segment minimum under it.
"""

from __future__ import annotations

import math
from collections import deque

_REFIT_ALWAYS_BELOW = 16  # segments in the window: below this, refit the slope on every one
_REFIT_EVERY = 4  # segments between refits of a longer window
_FIT_DISCARD_NS = 1_000_000.0  # a segment minimum this far above the fit is not on the envelope


class _Segment:
    __slots__ = ("index", "low", "x")

    def __init__(self, index: int, x: float, low: float) -> None:
        self.index = index
        self.x = x
        self.low = low


class Envelope:
    """Segment minima, the slope through them and the phase (offset at x = 0 under it)."""

    __slots__ = (
        "_closed_since_fit",
        "_learn",
        "_max_skew",
        "_phase_segments",
        "_segment_ns",
        "_segments",
        "phase",
        "skew",
    )

    def __init__(
        self,
        *,
        segment_ns: float,
        window_segments: int,
        phase_segments: int,
        max_skew: float,
        learn_skew: bool,
    ) -> None:
        self._segment_ns = segment_ns
        self._segments: deque[_Segment] = deque(maxlen=window_segments)
        self._phase_segments = phase_segments
        self._max_skew = max_skew
        self._learn = learn_skew
        self._closed_since_fit = 0
        self.skew = 0.0
        self.phase = math.inf

    def clear(self) -> None:
        """Forget the phase history; the skew is kept (the same oscillator)."""
        self._segments.clear()
        self.phase = math.inf

    def level(self, x: float) -> float:
        """The envelope's offset at ``x`` (inf while empty)."""
        return self.phase + self.skew * x

    def add(self, x: float, offset: float) -> None:
        segments = self._segments
        index = x // self._segment_ns  # a whole float: compared with ints as it is
        if segments:
            current = segments[-1]
            if current.index == index:  # the usual case: keep the minimum and the phase
                if offset < current.low:
                    current.low, current.x = offset, x
                phase = offset - self.skew * x
                if phase < self.phase:  # noqa: PLR1730 - min() without a call, for every sample
                    self.phase = phase
                return
            if index < current.index:
                return  # a sample from a closed segment (reordered): nothing new to learn
            if self._learn and len(segments) >= 3:
                # A full window holds minutes of minima: refit it every few segments.
                self._closed_since_fit += 1
                if len(segments) < _REFIT_ALWAYS_BELOW or self._closed_since_fit >= _REFIT_EVERY:
                    self._closed_since_fit = 0
                    self._fit_skew()
        segments.append(_Segment(int(index), x, offset))
        skew = self.skew
        self.phase = min(s.low - skew * s.x for s in list(segments)[-self._phase_segments :])

    def _fit_skew(self) -> None:
        points = [(s.x, s.low) for s in self._segments]
        if points[-1][0] - points[0][0] < 4 * self._segment_ns:
            return
        for _ in range(2):
            slope, intercept = _least_squares(points)
            kept = [(x, o) for x, o in points if o - (intercept + slope * x) <= _FIT_DISCARD_NS]
            if len(kept) < 3 or len(kept) == len(points):
                break  # the fit stands on ``points``: ``slope`` is theirs
            points = kept
        else:
            slope, _ = _least_squares(points)
        self.skew = max(-self._max_skew, min(self._max_skew, slope))


def _least_squares(points: list[tuple[float, float]]) -> tuple[float, float]:
    """The least-squares line through ``points``: slope and intercept (each sum in list
    order, as the textbook form has it; a full window is 240 points every 2 s)."""
    n = len(points)
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    mean_x = sum(xs) / n
    mean_y = sum(ys) / n
    dx = [x - mean_x for x in xs]
    sxx = sum([d**2 for d in dx])
    if sxx == 0:
        return 0.0, mean_y
    slope = sum([d * (y - mean_y) for d, y in zip(dx, ys, strict=True)]) / sxx
    return slope, mean_y - slope * mean_x
