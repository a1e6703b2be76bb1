"""A track's lifecycle, frame by frame: tentative, confirmed after 3 of 5, coasting, deleted;
the gate: a detection 3 m off never moves a confirmed track."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fusion.tracking import Track, Tracker, TrackingConfig, TrackStatus
from tests.support.tracking_inputs import CAMERA, MS, placed

FRAME_NS = 33 * MS
START = 1_000 * MS
NO_BARRIER = -1


class Feed:
    """One target driving north at 2 m/s; frames numbered from 0."""

    def __init__(self, **config: float) -> None:
        self.tracker = Tracker(CAMERA, TrackingConfig(**config))  # type: ignore[arg-type]
        self.arrival = 0

    def capture(self, frame: int) -> int:
        return START + frame * FRAME_NS

    def hit(self, frame: int, offset: tuple[float, float] = (0.0, 0.0)) -> int:
        self.arrival += 1
        t = self.capture(frame)
        north = 2.0 * (t - START) * 1e-9
        self.tracker.add(placed(t, self.arrival, (north + offset[0], offset[1], 0.0)))
        return self.arrival

    def miss(self, frame: int) -> None:
        self.tracker.saw_nothing(1, self.capture(frame))

    def tracks(self, frame: int) -> list[Track]:
        return self.tracker.tracks(self.capture(frame))

    def status(self, track: Track, frame: int, barrier: int = NO_BARRIER) -> TrackStatus:
        assert track in self.tracks(frame)
        return self.tracker.lifecycle.status(track, barrier)

    def only(self, frame: int) -> Track:
        (track,) = self.tracks(frame)
        return track


def test_tentative_until_the_third_hit_then_confirmed() -> None:
    feed = Feed()
    for frame in range(3):
        feed.hit(frame)
        track = feed.only(frame)
        expected = TrackStatus.CONFIRMED if frame == 2 else TrackStatus.TENTATIVE
        assert feed.status(track, frame) is expected
    assert track.track_id == 1


def test_three_of_five_with_misses_between() -> None:
    feed = Feed()
    feed.hit(0)
    feed.miss(1)
    feed.hit(2)
    feed.miss(3)
    assert feed.status(feed.only(3), 3) is TrackStatus.TENTATIVE
    feed.hit(4)
    assert feed.status(feed.only(4), 4) is TrackStatus.CONFIRMED


def test_a_tentative_track_that_can_no_longer_confirm_is_deleted() -> None:
    feed = Feed()
    feed.hit(0)
    feed.miss(1)
    feed.miss(2)
    assert len(feed.tracks(2)) == 1  # 1 hit, 2 misses: 3 of 5 still possible
    feed.miss(3)
    assert feed.tracks(3) == []


def test_coasting_on_a_miss_then_confirmed_again() -> None:
    feed = Feed()
    for frame in range(5):
        feed.hit(frame)
    before = feed.only(4)
    feed.miss(5)
    coasting = feed.only(5)
    assert feed.status(coasting, 5) is TrackStatus.COASTING
    assert coasting.state is before.state and coasting.time_ns == before.time_ns  # not moved
    feed.hit(6)
    assert feed.status(feed.only(6), 6) is TrackStatus.CONFIRMED


def test_hits_before_a_link_outage_do_not_confirm() -> None:
    feed = Feed()
    for frame in range(5):
        barrier = feed.hit(frame)  # the link goes down after this one arrived
    for i, frame in enumerate(range(5, 8)):
        feed.hit(frame)
        expected = TrackStatus.CONFIRMED if i == 2 else TrackStatus.COASTING
        assert feed.status(feed.only(frame), frame, barrier) is expected


def test_deleted_delete_after_ms_after_its_last_hit() -> None:
    feed = Feed(delete_after_ms=3000.0)
    for frame in range(5):
        feed.hit(frame)
    last = feed.capture(4)
    assert len(feed.tracker.tracks(last + 3000 * MS)) == 1
    assert feed.tracker.tracks(last + 3000 * MS + 1) == []


def test_the_same_number_across_a_one_second_occlusion() -> None:
    feed = Feed()
    for frame in range(60):
        feed.hit(frame)
    for frame in range(60, 90):  # one second of "not detected"
        feed.miss(frame)
    assert feed.status(feed.only(89), 89) is TrackStatus.COASTING
    for frame in range(90, 93):
        feed.hit(frame)
    track = feed.only(92)
    assert (track.track_id, feed.status(track, 92)) == (1, TrackStatus.CONFIRMED)
    assert feed.tracker.counts["tracks_started"] == 1


def test_at_most_max_tracks_and_a_forgotten_key_frees_its_places() -> None:
    """Over ``max_tracks`` a track is evicted (counted): a newcomer never displaces a tentative
    track as far along as itself (every tentative track has a hit), nor a confirmed one, so a
    full tracker keeps the tracks it holds until their lifecycle ends them (red team rt45:
    evicting the least recently hit, 96 keys in view churned 64 tracks for good). A key
    forgotten for having no live track no longer counts towards the limit, so a new key then
    evicts nothing."""
    tracker = Tracker(CAMERA, TrackingConfig(max_tracks=3, delete_after_ms=100.0,
                                             oosm_window_ms=50.0))  # fmt: skip
    arrivals = iter(range(1, 100))

    def hit(ms: int, key: int) -> None:
        point = (4.0 * key, 0.0, 0.0)
        tracker.add(placed(START + ms * MS, next(arrivals), point, key=(1, 5, 11 + key)))

    def keys(ms: int) -> list[str]:
        return sorted(t.key for t in tracker.tracks(START + ms * MS))

    hit(0, 0)
    hit(200, 1)
    hit(200, 2)
    assert keys(200) == ["1:5:12", "1:5:13"]  # key 0's track is dead; the key is forgotten
    hit(210, 3)
    assert tracker.counts["tracks_evicted"] == 0
    assert keys(210) == ["1:5:12", "1:5:13", "1:5:14"]
    hit(220, 4)  # a fourth live track, no further along than the three: it goes
    assert tracker.counts["tracks_evicted"] == 1
    assert keys(220) == ["1:5:12", "1:5:13", "1:5:14"]
    hit(280, 2)
    hit(280, 3)
    # key 1's track died 100 ms after its hit, and its key is forgotten 50 ms later (late
    # measurements may still come): its place is free
    assert keys(355) == ["1:5:13", "1:5:14"]
    hit(355, 5)
    assert tracker.counts["tracks_evicted"] == 1
    assert keys(355) == ["1:5:13", "1:5:14", "1:5:16"]


@given(
    angle=st.floats(0.0, 2 * math.pi),
    distance=st.floats(3.0, 10.0),
    at=st.integers(10, 60),
)
def test_a_detection_3_m_off_never_moves_a_confirmed_track(
    angle: float, distance: float, at: int
) -> None:
    feed = Feed()
    for frame in range(at):
        feed.hit(frame)
    confirmed = feed.only(at - 1)
    assert feed.status(confirmed, at - 1) is TrackStatus.CONFIRMED
    feed.hit(at, (distance * math.cos(angle), distance * math.sin(angle)))
    by_id = {t.track_id: t for t in feed.tracks(at)}
    kept = by_id.pop(confirmed.track_id)
    for u, v in zip(kept.state, confirmed.state, strict=True):
        assert np.array_equal(u, v)  # not moved at all
    assert kept.time_ns == confirmed.time_ns
    assert feed.status(kept, at) is TrackStatus.COASTING
    (glitch,) = by_id.values()  # the glitch starts its own tentative track
    assert feed.status(glitch, at) is TrackStatus.TENTATIVE
    for frame in range(at + 1, at + 4):
        feed.hit(frame)
    (after,) = feed.tracks(at + 3)  # the glitch's track ended; the target's goes on
    assert after.track_id == confirmed.track_id
    assert feed.status(after, at + 3) is TrackStatus.CONFIRMED
