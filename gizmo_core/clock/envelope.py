"""The lower envelope of one epoch's (remote time, offset) samples, and the remote clock's skew.

Every offset ``host - remote`` is the true offset plus a delay that is never negative, so the
true line lies on the lower envelope of the cloud. Remote time is cut into segments; each keeps
its minimum, which sheds jitter and late outliers without statistics about them. The slope (the
remote oscillator's skew against the host's) is a least-squares fit through the segment minima
of the window, points well above the fit discarded, clamped to the skew bound; it outlives the
epoch (it is the same oscillator). The phase is the lowest recent segment minimum under it.

A run of late samples that the mapping accepts as latency (:meth:`Envelope.split`) starts a new
*group* of segments: the phase forgets the older groups, the fit keeps them. The slope is fitted
through every group at once, each with its own intercept (a pooled within-group fit), so a
latency step between groups teaches no slope, while a steady drift, which slopes every group,
is learned across them: a clock drifting faster than the late rule lets one group grow (a
ceramic resonator's 0.5 %) is learned all the same. ``fitted`` is the slope before the clamp,
and ``beyond`` says it lies above the bound by more than its own uncertainty (the remote clock
runs slower than the bound lets the mapping follow).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Final

_REFIT_ALWAYS_BELOW: Final = 16  # segments in the window: below this, refit the slope on every one
_REFIT_EVERY: Final = 4  # segments between refits of a longer window
_FIT_DISCARD_NS: Final = (
    1_000_000.0  # a segment minimum this far above the fit is not on the envelope
)
_FIT_SPAN_SEGMENTS: Final = 4  # the groups' spans, summed, must reach this many segments for a fit
_BEYOND_MARGIN: Final = 50e-6  # ``beyond``: the fit above the bound by this plus 3 standard errors


class _Segment:
    __slots__ = ("group", "index", "low", "x")

    def __init__(self, index: int, x: float, low: float, group: int) -> None:
        self.index = index
        self.x = x
        self.low = low
        self.group = group


class Envelope:
    """Segment minima, the slope through them and the phase (offset at x = 0 under it)."""

    __slots__ = (
        "_closed_since_fit",
        "_group",
        "_learn",
        "_max_skew",
        "_phase_segments",
        "_seed_index",
        "_seed_offset",
        "_seed_x",
        "_segment_ns",
        "_segments",
        "beyond",
        "fitted",
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
        self._group = 0
        self._seed_x = 0.0  # ``split``'s point: under the phase, not a fit point
        self._seed_offset = math.inf
        self._seed_index = -math.inf  # its segment: the phase counts only later ones
        self.skew = 0.0
        self.fitted = 0.0  # the last fit's slope before the clamp
        self.beyond = False  # that slope lies above the bound beyond its uncertainty
        self.phase = math.inf

    def clear(self) -> None:
        """Forget the phase history; the skew is kept (the same oscillator)."""
        self._segments.clear()
        self._seed_offset = math.inf
        self._seed_index = -math.inf
        self.phase = math.inf

    def split(self, since_x: float, x: float, offset: float, shift: float) -> None:
        """The run of late samples from ``since_x`` to ``x`` is accepted as latency: from now
        on samples count ``shift`` less, and the envelope stands at ``offset`` at ``x`` (the
        mapping kept). The phase forgets every segment before and starts from that point (for
        as long as a segment would count). The fit keeps the segments before the run as a
        group of their own; the run's segments, ``shift`` lower, open the next group (they
        are the new level), but not the phase. The point is no sample: the fit never sees it."""
        segments = self._segments
        first = since_x // self._segment_ns
        run: list[_Segment] = []
        while segments and (
            segments[-1].index > first
            or (segments[-1].index == first and segments[-1].x >= since_x)  # its low is late
        ):
            run.append(segments.pop())
        group = self._group = self._group + 1
        for segment in reversed(run):
            segment.low -= shift
            segment.group = group
            segments.append(segment)
        index = x // self._segment_ns
        if not segments or segments[-1].group != group:
            # The next sample's segment is the new group's, even when it is the same time
            # slot as the last one kept (no sample yet: no point for the fit).
            segments.append(_Segment(int(index), x, math.inf, group))
        self._seed_index = index
        self._seed_x, self._seed_offset = x, offset
        self.phase = offset - self.skew * x

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
        group = self._group
        segments.append(_Segment(int(index), x, offset, group))
        skew = self.skew
        after = self._seed_index  # the phase counts the group's segments after ``split``'s
        recent = [
            s
            for s in list(segments)[-self._phase_segments :]
            if s.group == group and s.index > after
        ]
        phase = self._seed_offset - skew * self._seed_x  # while a segment would count it
        if len(recent) >= self._phase_segments:
            phase = math.inf
        for s in recent:
            low = s.low - skew * s.x
            if low < phase:  # noqa: PLR1730 - as above
                phase = low
        self.phase = phase

    def _fit_skew(self) -> None:
        points = [(s.group, s.x, s.low) for s in self._segments if s.low != math.inf]
        if not points:
            return
        if _within_span(points) < _FIT_SPAN_SEGMENTS * self._segment_ns:
            return
        fit = _pooled_least_squares(points)
        for _ in range(2):
            slope, intercepts, _sxx = fit
            kept = [
                p for p in points if p[2] - (intercepts[p[0]] + slope * p[1]) <= _FIT_DISCARD_NS
            ]
            if len(kept) < 3 or len(kept) == len(points):
                break  # the fit stands on ``points``: ``slope`` is theirs
            points = kept
            fit = _pooled_least_squares(points)
        slope, intercepts, sxx = fit
        if sxx <= 0:
            return  # no group spans two points: nothing to learn a slope from
        self.fitted = slope
        self.skew = max(-self._max_skew, min(self._max_skew, slope))
        # The slope's standard error from the residuals (each group has its own intercept).
        dof = len(points) - len(intercepts) - 1
        if dof < 1:
            self.beyond = False
            return
        ssr = 0.0
        for g, x, y in points:
            r = y - (intercepts[g] + slope * x)
            ssr += r * r
        error = math.sqrt(ssr / dof / sxx)
        self.beyond = slope - self._max_skew > 3.0 * error + _BEYOND_MARGIN


def _within_span(points: list[tuple[int, float, float]]) -> float:
    """The remote time the groups span, summed (points in order, a group's together)."""
    total = 0.0
    group, first, last = -1, 0.0, 0.0
    for g, x, _ in points:
        if g != group:
            total += last - first
            group, first = g, x
        last = x
    return total + last - first


def _pooled_least_squares(
    points: list[tuple[int, float, float]],
) -> tuple[float, dict[int, float], float]:
    """The least-squares slope common to every group, each group with its own intercept:
    the slope, the intercepts by group and the pooled sum of squared x deviations (0: no
    slope to fit). With one group it is the textbook line (each sum in list order; a full
    window is 240 points every 2 s)."""
    sums: dict[int, tuple[int, float, float]] = {}
    for g, x, y in points:
        n, sx, sy = sums.get(g, (0, 0.0, 0.0))
        sums[g] = (n + 1, sx + x, sy + y)
    means = {g: (sx / n, sy / n) for g, (n, sx, sy) in sums.items()}
    sxx = sxy = 0.0
    for g, x, y in points:
        mean_x, mean_y = means[g]
        d = x - mean_x
        sxx += d * d
        sxy += d * (y - mean_y)
    slope = sxy / sxx if sxx > 0 else 0.0
    return slope, {g: my - slope * mx for g, (mx, my) in means.items()}, sxx
