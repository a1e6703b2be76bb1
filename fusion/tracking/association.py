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

from collections import OrderedDict
from typing import Final

import numpy as np

from . import motion
from .assignment import nearest_within, solve
from .config import TrackingConfig, chi2_quantile
from .history import Detection, Frame
from .tracks import MISS, Lifecycle, Track

_INF: Final = float("inf")
_MAX_BORN: Final = 4096  # the numbers of the tracks recently started, by their first measurement


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
        hits: dict[int, tuple[motion.Prediction, Detection, list[list[float]]]] = {}
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
            noise: dict[tuple[int, int], list[list[float]]] = {}
            on_plane = {j: _on_plane(alive[j]) for j in candidates}
            assigned = self._assign(unassigned, candidates, predictions, noise, on_plane)
            for i, k in enumerate(assigned):
                if k is not None:
                    hits[k] = (predictions[k], unassigned[i], noise[i, k])
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
            prediction, d, r = hit
            state = self._imm.update(prediction, d.z_f, r, d.r if r is d.r_f else np.array(r))
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
        noise: dict[tuple[int, int], list[list[float]]],
        on_plane: dict[int, bool],
    ) -> list[int | None]:
        """For each detection, the candidate it is assigned (``None``: none): the minimum total
        of squared Mahalanobis distances, a pair beyond the gate forbidden, a detection left
        unassigned costing its gate. One detection (a key's usual frame) takes the nearest
        candidate within its gate, the first of equals: what the solver gives that one row.
        ``noise[i, j]``: detection i's covariance for candidate j, where j predicts it. A
        track takes fixes of its own kind only (``on_plane[j]``, ``Detection.on_plane``): a
        standing target's points on the plane and its ranged positions are two quantities
        (rt51: a ground-plane track that took one laser fix showed its point on the plane,
        un-lifted, 1.5-1.7 m off at Mahalanobis 164)."""
        mahalanobis2 = motion.mahalanobis2
        for i, d in enumerate(detections):
            for j in candidates:
                noise[i, j] = _noise_for(predictions[j], d)
        if len(detections) == 1:
            d = detections[0]
            costs = [
                mahalanobis2(predictions[j], d.z_f, noise[0, j])
                if on_plane[j] is d.on_plane
                else _INF
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
                d2 = mahalanobis2(predictions[j], d.z_f, noise[i, j])
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


def _noise_for(prediction: motion.Prediction, d: Detection) -> list[list[float]]:
    """Detection ``d``'s covariance for a track of ``prediction``: evaluated where the track
    predicts the target (the modes' mean), not where the measurement fell, so that how far a
    fix fell does not weigh it (``Detection.toward``; without: its own)."""
    if d.toward is None:
        return d.r_f
    mu0, mu1 = prediction.mu_f
    (a0, a1, a2), (b0, b1, b2) = prediction.positions
    point = [mu0 * a0 + mu1 * b0, mu0 * a1 + mu1 * b1, mu0 * a2 + mu1 * b2]
    r: list[list[float]] = d.toward(point).tolist()
    return r


def _on_plane(track: Track) -> bool:
    """Whether ``track`` holds a standing target's points on the plane: its hits are all of
    one kind (``Associator._assign``), its latest's tells."""
    g = track.placement.geometry
    return g is not None and g.frame is not None and g.frame.extent_height_sigma_m is not None
