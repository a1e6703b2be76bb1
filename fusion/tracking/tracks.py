"""One track: its estimate, its latest measurement, and where it is in its lifecycle.

A track lives on the frames of its key (``source:type:id``): each frame of that key, or a frame
of its source that saw nothing, is a hit (a detection was assigned to it) or a miss. The
lifecycle follows from the last ``confirm_window`` frames:

- ``tentative``: never had ``confirm_hits`` hits among them; deleted as soon as it no longer
  can (more than ``confirm_window - confirm_hits`` misses);
- ``confirmed``: its key's latest frame was a hit, and ``confirm_hits`` of the last
  ``confirm_window`` frames were hits (all of them, for a track of a key that has a
  confirmed track already: a glitch or a ghost is not a second target on 3 frames of 5);
- ``coasting``: once confirmed, but not now: the prediction goes on, its covariance grows
  with the time since the last hit, and ``confirm_hits`` new hits confirm it again. After the
  link goes down or the board resets, the hits that arrived before count no more (the world
  model also shows a track not updated for its TTL as coasting);
- deleted ``delete_after_ms`` after its last hit.

A track is a frozen value: processing a frame returns new tracks, so any earlier set of tracks
is a checkpoint the tracker can replay from.
"""

from __future__ import annotations

from enum import Enum
from typing import Final, NamedTuple

from ..targets import Placement
from .motion import ImmState

MISS: Final = -1  # a window entry for a frame without a hit (a hit holds its arrival count)
_new_tuple: Final = tuple.__new__  # builds a NamedTuple without its Python-level __new__


class TrackStatus(Enum):
    TENTATIVE = "tentative"
    CONFIRMED = "confirmed"
    COASTING = "coasting"


class Track(NamedTuple):
    track_id: int
    key: str
    state: ImmState  # at ``time_ns``
    time_ns: int  # the capture time of its latest hit
    placement: Placement  # the measurement of its latest hit
    window: tuple[int, ...]  # the last frames of its key, oldest first: arrival or MISS
    confirmed: bool  # has been confirmed once
    # The newest arrival count of any measurement it took: its latest hit's, or a late one's
    # fused in its place (which never makes the track fresher: ``time_ns`` and ``placement``
    # stay its latest capture's). What the world model lists as taken (``estimates``).
    fused_arrival: int


class Lifecycle(NamedTuple):
    """The lifecycle's settings, in ns and frames."""

    confirm_hits: int
    confirm_window: int
    delete_after_ns: int

    def born(self, track_id: int, key: str, state: ImmState, placement: Placement) -> Track:
        capture = placement.obs.host_capture_ns
        arrival = placement.arrival
        window = (arrival,)
        return Track(
            track_id, key, state, capture, placement, window, self._enough(window), arrival
        )

    def hit(self, track: Track, state: ImmState, placement: Placement) -> Track:
        capture = placement.obs.host_capture_ns
        window = (*track.window, placement.arrival)[-self.confirm_window :]
        confirmed = track.confirmed or self._enough(window)
        fused = max(track.fused_arrival, placement.arrival)
        return _new_tuple(
            Track,
            (track.track_id, track.key, state, capture, placement, window, confirmed, fused),
        )

    def miss(self, track: Track) -> Track | None:
        """The track after a frame without a hit; ``None`` when a tentative track can no
        longer be confirmed."""
        window = (*track.window, MISS)[-self.confirm_window :]
        misses = window.count(MISS)
        if not track.confirmed and misses > self.confirm_window - self.confirm_hits:
            return None
        return track._replace(window=window)

    def alive(self, track: Track, now_ns: int) -> bool:
        return now_ns - track.time_ns <= self.delete_after_ns

    def status(self, track: Track, barrier: int) -> TrackStatus:
        """The track's state; hits that arrived at or before ``barrier`` (the latest link
        outage or device reset) do not count towards confirming it."""
        if not track.confirmed:
            return TrackStatus.TENTATIVE
        window = track.window
        if window[-1] > barrier:
            hits = 0  # after the barrier (a MISS is -1, below any barrier)
            for arrival in window:
                if arrival > barrier:
                    hits += 1
            if hits >= self.confirm_hits:
                return TrackStatus.CONFIRMED
        return TrackStatus.COASTING

    def _enough(self, window: tuple[int, ...]) -> bool:
        return len(window) - window.count(MISS) >= self.confirm_hits

    def unbroken(self, window: tuple[int, ...]) -> bool:
        """Every one of the last ``confirm_window`` frames a hit: what confirms a second
        track of a key that has a confirmed one (``Associator.process``)."""
        return len(window) >= self.confirm_window and MISS not in window
