"""One frame into a key's tracks: gating, optimal assignment, hits, misses, births, succession.

All of a frame's detections are matched at once: each detection's cost for a track is its
squared Mahalanobis distance from the track's prediction, a pair beyond the χ² gate is
forbidden, and a detection left unassigned costs the gate (it starts a tentative track
instead). The assignment is optimal (:mod:`fusion.tracking.assignment`), first among the
tracks confirmed once, then among the tentative ones for the detections left. A detection the
gate rejects never moves a track.

A track just confirmed where a coasting one of its key is predicted to be succeeds it and takes
its number. A new track's number is remembered by the measurement that started it, so a replay
of the frame gives it the same number.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Final

import numpy as np

from ..ranging import TREND_TOLERANCE_M
from . import motion
from .assignment import nearest_within, solve
from .config import TrackingConfig, chi2_quantile
from .history import Detection, Frame
from .tracks import MISS, Lifecycle, Track

_INF: Final = float("inf")
_MAX_BORN: Final = 4096  # the numbers of the tracks recently started, by their first measurement
Measured = tuple[list[float], list[list[float]]]  # a detection as a track takes it: z and r


class Associator:
    """Runs one frame on a set of tracks (``process``) and numbers the tracks it starts;
    counts into the tracker's ``counts``."""

    def __init__(
        self, config: TrackingConfig, lifecycle: Lifecycle, counts: dict[str, int]
    ) -> None:
        self._imm = motion.Imm(config.motion())
        # A coasting track's successor may be further than the gate (a manoeuvre the coasting
        # one did not follow): at the gate's miss rate cubed (0.999: 1e-9, χ²₃ 44.8).
        self._succession = chi2_quantile(1.0 - (1.0 - config.gate_probability) ** 3, 3)
        self._lifecycle = lifecycle
        self._counts = counts  # gated_out, tracks_started, tracks_continued
        self._born: OrderedDict[int, int] = OrderedDict()  # first arrival -> track number
        self._next_id = 1

    def number_after(self, other: Associator) -> None:
        """Number the tracks this one starts after every number ``other`` issued."""
        self._next_id = max(self._next_id, other._next_id)

    def process(
        self, tracks: tuple[Track, ...], frame: Frame, *, counted: bool
    ) -> tuple[Track, ...]:
        """The tracks after ``frame`` (``counted``: the first time it is run, not a replay)."""
        life, t = self._lifecycle, frame.capture_ns
        oldest = t - life.delete_after_ns  # alive: hit at or after it
        alive = [track for track in tracks if track.time_ns >= oldest]
        hits: dict[int, tuple[motion.Prediction, Detection, Measured]] = {}
        unassigned = list(frame.detections)
        # Tracks confirmed once choose first, then the tentative ones from what is left: a
        # new track's prediction is wide, and would otherwise win what is near both.
        for established in (True, False):
            candidates = [j for j, track in enumerate(alive) if track.confirmed is established]
            if not unassigned or not candidates:
                continue
            predict = self._imm.predict
            predictions = {
                j: predict(alive[j].state, (t - alive[j].time_ns) * 1e-9) for j in candidates
            }
            left: list[Detection] = []
            measured: dict[tuple[int, int], Measured] = {}
            on_plane = {j: _on_plane(alive[j]) for j in candidates}
            assigned = self._assign(unassigned, candidates, predictions, measured, on_plane)
            for i, k in enumerate(assigned):
                if k is not None:
                    hits[k] = (predictions[k], unassigned[i], measured[i, k])
                else:
                    left.append(unassigned[i])
            if established:
                self._counts["gated_out"] += counted * len(left)
            unassigned = left
        out: list[Track] = []
        # The tracks confirmed by this frame, by identity: a succession removes a track from
        # ``out``, which moves every later index (two confirmed at once met a stale index).
        promoted: list[Track] = []
        # A track of a key with a confirmed one is confirmed by an unbroken window unless it
        # succeeds a coasting one (a manoeuvre's first frames): a glitch of 3 frames, or a
        # ghost every other frame, reached 3 hits of 5 and PROCEEDed 3 m off as a second
        # target (red team rt37), where a real second target is seen in each frame.
        seasoned = any(track.confirmed for track in alive)
        for j, track in enumerate(alive):
            hit = hits.get(j)
            if hit is None:
                missed = life.miss(track)
                if missed is not None:
                    out.append(missed)
                continue
            prediction, d, (z, r) = hit
            state = self._imm.update(prediction, z, r, d.r if r is d.r_f else np.array(r))
            updated = life.hit(track, state, d.placement)
            if updated.confirmed and not track.confirmed:
                promoted.append(updated)
            out.append(updated)
        for d in unassigned:
            state = self._imm.initial_state(d.z, d.r)
            born = life.born(self._number(d.placement.arrival), d.placement.obs.key, state,
                             d.placement)  # fmt: skip
            if born.confirmed and seasoned and not life.unbroken(born.window):
                born = born._replace(confirmed=False)
            out.append(born)
        for new in promoted:
            succeeded = self._succeed(out, new, t, counted=counted)
            if not succeeded and seasoned and not life.unbroken(new.window):
                index = next(k for k, track in enumerate(out) if track is new)
                out[index] = new._replace(confirmed=False)  # a second target, not unbroken
        return tuple(out)

    @staticmethod
    def _assign(
        detections: list[Detection],
        candidates: list[int],
        predictions: dict[int, motion.Prediction],
        measured: dict[tuple[int, int], Measured],
        on_plane: dict[int, bool],
    ) -> list[int | None]:
        """For each detection, the candidate it is assigned (``None``: none): the minimum total
        of squared Mahalanobis distances, a pair beyond the gate forbidden, a detection left
        unassigned costing its gate. One detection (a key's usual frame) takes the nearest
        candidate within its gate, the first of equals: what the solver gives that one row.
        ``measured[i, j]``: detection i as candidate j takes it (``_measured``). A
        track takes fixes of its own kind only (``on_plane[j]``, ``Detection.on_plane``): a
        standing target's points on the plane and its ranged positions are two quantities
        (rt51: a ground-plane track that took one laser fix showed its point on the plane,
        un-lifted, 1.5-1.7 m off at Mahalanobis 164)."""
        mahalanobis2 = motion.mahalanobis2
        for i, d in enumerate(detections):
            for j in candidates:
                measured[i, j] = _measured(predictions[j], d)
        if len(detections) == 1:
            d = detections[0]
            costs = [
                mahalanobis2(predictions[j], *measured[0, j]) if on_plane[j] is d.on_plane else _INF
                for j in candidates
            ]
            k = nearest_within(costs, d.gate)
            return [None if k is None else candidates[k]]
        n, m = len(detections), len(candidates)
        cost = [[_INF] * (m + n) for _ in detections]
        for i, d in enumerate(detections):
            for k, j in enumerate(candidates):
                if on_plane[j] is not d.on_plane:
                    continue
                d2 = mahalanobis2(predictions[j], *measured[i, j])
                if d2 <= d.gate:
                    cost[i][k] = d2
            cost[i][m + i] = d.gate
        return [candidates[k] if k < m else None for k in solve(cost)]

    def _succeed(self, tracks: list[Track], new: Track, t: int, *, counted: bool) -> bool:
        """A track just confirmed where a coasting one of its key is predicted to be takes
        that one's number, and the coasting one ends: a target whose first frames of a
        manoeuvre fell outside the gate keeps its number. The new estimate is the new track's
        own; nothing of the old one moves it. Whether it took one."""
        index = next(k for k, track in enumerate(tracks) if track is new)
        state = new.state  # judged with the gains' covariance, as the gate judges
        mean, cov = motion.combined(state.x, state.p, state.mu)
        best: tuple[float, int] | None = None
        for k, old in enumerate(tracks):
            if k == index or not old.confirmed or old.window[-1] != MISS:
                continue
            ahead = self._imm.predict(old.state, (t - old.time_ns) * 1e-9)
            old_mean, old_cov = motion.combined(ahead.x, ahead.p, ahead.mu)
            gap = mean[:3] - old_mean[:3]
            d2 = float(gap @ np.linalg.solve(cov[:3, :3] + old_cov[:3, :3], gap))
            if d2 <= self._succession and (best is None or d2 < best[0]):
                best = (d2, k)
        if best is not None:
            old = tracks[best[1]]
            tracks[index] = new._replace(track_id=old.track_id)
            del tracks[best[1]]
            self._counts["tracks_continued"] += counted
            return True
        return False

    def _number(self, arrival: int) -> int:
        """The track number for a track started by the measurement that arrived as
        ``arrival``: the same in every replay."""
        number = self._born.get(arrival)
        if number is None:
            number = self._born[arrival] = self._next_id
            self._next_id += 1
            self._counts["tracks_started"] += 1
            while len(self._born) > _MAX_BORN:
                self._born.popitem(last=False)
        return number


def _measured(prediction: motion.Prediction, d: Detection) -> Measured:
    """Detection ``d`` as a track of ``prediction`` takes it: its position, and its covariance
    evaluated where the track predicts the target (the modes' mean), not where the measurement
    fell, so that how far a fix fell does not weigh it (``Detection.toward``; without: its
    own). A lone reading's range is moved back to the capture by the track's velocity along
    the ray, whose variance it then carries (``Carried``)."""
    carried = d.carried
    if d.toward is None and carried is None:
        return d.z_f, d.r_f
    mu0, mu1 = prediction.mu_f
    (a0, a1, a2), (b0, b1, b2) = prediction.positions
    point = [mu0 * a0 + mu1 * b0, mu0 * a1 + mu1 * b1, mu0 * a2 + mu1 * b2]
    if carried is None:
        assert d.toward is not None
        return d.z_f, d.toward(point).tolist()
    r = carried.r_f if carried.toward is None else carried.toward(point).tolist()
    mean, cov = motion.combined(prediction.x, prediction.p, prediction.mu)
    u = np.asarray(carried.ray_ned)
    rate = float(u @ mean[3:6])  # the target's own velocity along the ray, and its variance
    rate_var = float(u @ cov[3:6, 3:6] @ u)
    shift = rate * carried.carried_s
    z = [d.z_f[0] - u[0] * shift, d.z_f[1] - u[1] * shift, d.z_f[2] - u[2] * shift]
    var = rate_var * carried.carried_s**2
    span = carried.span_s
    if span:
        # The readings' disagreement less what the velocity explains, and its σ: a reading
        # may be off by the rest, less a second difference's allowance, as with no track
        unexplained = abs(carried.rise_m - rate * span) + 2.0 * math.sqrt(rate_var) * abs(span)
        doubt = min(abs(carried.rise_m), unexplained) - TREND_TOLERANCE_M
        var += max(0.0, doubt) ** 2
    r = [[r[k][m] + var * u[k] * u[m] for m in range(3)] for k in range(3)]
    return z, r


def _on_plane(track: Track) -> bool:
    """Whether ``track`` holds a standing target's points on the plane: its hits are all of
    one kind (``Associator._assign``), its latest's tells."""
    g = track.placement.geometry
    return g is not None and g.frame is not None and g.frame.extent_height_sigma_m is not None
