"""``Tracker.tracks``: a verdict check lists the live tracks after every input, and the tracker
reuses its last listing while nothing changed. Whatever the order of inputs and listings, each
listing holds the very tracks, in order, that the tracker holds and the lifecycle keeps alive
at that time, and a key is forgotten at the listing where its window has passed, as without
the reuse."""

from __future__ import annotations

import operator

from hypothesis import given, settings
from hypothesis import strategies as st

from fusion.tracking import Track, Tracker, TrackingConfig
from tests.support.tracking_inputs import CAMERA, MS, placed

START = 1_000 * MS
DELETE_MS = 100  # shorter than the late window: a key outlives its tracks there
WINDOW_MS = 500
KEYS = ((1, 5, 11), (1, 5, 12), (2, 5, 11))


def _tracker() -> Tracker:
    return Tracker(CAMERA, TrackingConfig(delete_after_ms=DELETE_MS, oosm_window_ms=WINDOW_MS))


def _expected(tracker: Tracker, now_ns: int) -> list[Track]:
    """The held tracks (the tracker's iteration) a track ``DELETE_MS`` keeps: alive."""
    return [t for t in tracker if now_ns - t.time_ns <= DELETE_MS * MS]


def _same(listed: list[Track], expected: list[Track]) -> bool:
    return len(listed) == len(expected) and all(map(operator.is_, listed, expected))


def _hit(tracker: Tracker, at_ms: int, arrival: int, key: int = 0) -> None:
    north = 2.0 * at_ms * 1e-3
    tracker.add(placed(START + at_ms * MS, arrival, (north, 0.0, 0.0), key=KEYS[key]))


def test_a_listing_after_a_hit_holds_the_new_track_value() -> None:
    tracker = _tracker()
    _hit(tracker, 0, 1)
    before = tracker.tracks(START)
    assert len(before) == 1
    _hit(tracker, 33, 2)  # the track moves on: a new value, same number
    after = tracker.tracks(START + 33 * MS)
    assert len(after) == 1 and after[0] is not before[0]
    assert after[0].track_id == before[0].track_id and after[0].time_ns == START + 33 * MS


def test_a_listing_after_clear_is_empty() -> None:
    tracker = _tracker()
    _hit(tracker, 0, 1)
    assert len(tracker.tracks(START)) == 1
    tracker.clear()
    assert tracker.tracks(START) == []


def test_a_listing_ends_with_its_first_track_to_end() -> None:
    tracker = _tracker()
    _hit(tracker, 0, 1, key=0)
    _hit(tracker, 50, 2, key=1)
    assert len(tracker.tracks(START + 50 * MS)) == 2
    assert len(tracker.tracks(START + DELETE_MS * MS)) == 2  # the first at its last instant
    (left,) = tracker.tracks(START + DELETE_MS * MS + 1)
    assert left.key == "1:5:12"


def test_a_key_without_tracks_is_forgotten_once_past_its_window() -> None:
    """Listings at 200, 400 and 650 ms (each reusable up to a track's end or a key's window
    end, 300 and 500 ms) forget key 0 at 650 ms, as one listing at 700 ms does."""
    tracker, control = _tracker(), _tracker()
    for t in (tracker, control):
        _hit(t, 0, 1)
        _hit(t, 200, 2, key=1)
    for at_ms in (200, 400, 650, 700):  # key 0: no track from 100 ms, window over past 500
        tracker.tracks(START + at_ms * MS)
    control.tracks(START + 700 * MS)  # the same forgetting, in one listing
    assert [*tracker._keys] == [*control._keys] == ["1:5:12"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(("hit", "miss", "list", "list", "list", "clear")),
            st.integers(0, 1_500),  # ms after START
            st.integers(0, len(KEYS) - 1),
        ),
        max_size=40,
    )
)
def test_every_listing_is_the_live_tracks_and_forgets_as_without_reuse(
    steps: list[tuple[str, int, int]],
) -> None:
    """Twin trackers take the same inputs; ``fresh`` lists without reuse (its last listing
    dropped before each), and forgets the keys the one under test must forget too."""
    tracker, fresh = _tracker(), _tracker()
    arrival = 0
    for op, at_ms, key in steps:
        now = START + at_ms * MS
        if op == "hit":
            arrival += 1
            _hit(tracker, at_ms, arrival, key)
            _hit(fresh, at_ms, arrival, key)
        elif op == "miss":
            tracker.saw_nothing(KEYS[key][0], now)
            fresh.saw_nothing(KEYS[key][0], now)
        elif op == "clear":
            tracker.clear()
            fresh.clear()
        else:
            expected = _expected(tracker, now)
            assert _same(tracker.tracks(now), expected)
            fresh._listed = None
            assert _same(fresh.tracks(now), _expected(fresh, now))  # the oracle's own check
            assert [*tracker._keys] == [*fresh._keys]
        assert [t.time_ns for t in tracker] == [t.time_ns for t in fresh]


def test_a_key_whose_first_detection_came_too_late_is_forgotten_in_its_time() -> None:
    """A detection older than the window before its source's last empty frame starts no
    track, but leaves its key held: a listing made before it must not hide its forgetting.
    The key holds only its source's empty frame, which a key started afresh holds too, so
    the next listing forgets it, inside the window (``Tracker._only_misses``)."""
    tracker = _tracker()
    tracker.saw_nothing(KEYS[0][0], START + 1_000 * MS)
    assert tracker.tracks(START) == []  # nothing held: this listing would hold for ever
    _hit(tracker, 100, 1)  # 900 ms before the empty frame: dropped as late
    assert tracker.counts["late_dropped"] == 1 and [*tracker._keys] == ["1:5:11"]
    assert tracker.tracks(START + 1_100 * MS) == []
    assert [*tracker._keys] == []


def test_a_source_that_keeps_seeing_nothing_keeps_no_key_whose_tracks_have_ended() -> None:
    """A board that renumbers its targets and reports lost frames: each empty frame is a
    frame of every key of its source, which kept every key it ever named (red team rt57:
    3,498 keys after 18 s at 200 new ids a second, each lost frame 13 ms). A key whose
    tracks ended a window before and that holds no detection goes; one that may still take
    a late measurement stays."""
    tracker = _tracker()
    for n in range(40):  # a new id every 50 ms; an empty frame of the source every 50 ms
        tracker.add(placed(START + n * 50 * MS, 2 * n + 1, (1.0, 0.0, 0.0), key=(1, 5, 100 + n)))
        tracker.saw_nothing(1, START + (n * 50 + 25) * MS)
        tracker.tracks(START + (n * 50 + 26) * MS)
    # The newest empty frame is at 1975 ms, so the window takes a late detection from 1475
    # ms on: kept are the keys whose track was hit at 1375 ms or later (it lives DELETE_MS
    # after its hit), n = 28 to 39
    assert set(tracker._keys) == {f"1:5:{100 + n}" for n in range(28, 40)}
