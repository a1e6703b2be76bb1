"""Late measurements are fused exactly: whatever order measurements arrive in, within the
replay window, the tracks end as the in-order run leaves them, to 1e-9 (they are in fact the
same floating-point operations). Older than the window, a measurement is counted and dropped."""

from __future__ import annotations

import math
import random

import numpy as np
from hypothesis import assume, example, given
from hypothesis import strategies as st

from fusion.targets import Placement
from fusion.tracking import Track, Tracker, TrackingConfig
from fusion.tracking.tracks import MISS
from tests.support.tracking_inputs import CAMERA, MS, placed

FRAME_NS = 33 * MS


def _measurements(frames: int, seed: int, turn_rad_s: float) -> list[Placement | int]:
    """A target driving at 4 m/s (turning at ``turn_rad_s``) with 5 cm of noise; some frames
    see nothing (an ``int``: the capture time of a "not detected" frame), one has two boxes."""
    rng = random.Random(seed)
    out: list[Placement | int] = []
    heading = rng.uniform(0, 2 * math.pi)
    n = e = 0.0
    for k in range(frames):
        capture = 1_000 * MS + k * FRAME_NS + rng.randint(-2, 2) * MS
        heading += turn_rad_s * FRAME_NS * 1e-9
        n += 4.0 * math.cos(heading) * FRAME_NS * 1e-9
        e += 4.0 * math.sin(heading) * FRAME_NS * 1e-9
        if rng.random() < 0.1:
            out.append(capture)
            continue
        point = (n + rng.gauss(0, 0.05), e + rng.gauss(0, 0.05), 0.0)
        out.append(placed(capture, len(out) + 1, point))
        if rng.random() < 0.05:  # a second box in the same image, 3 m away (a glitch)
            out.append(placed(capture, len(out) + 1, (n + 3.0, e, 0.0)))
    return out


def _run(items: list[Placement | int]) -> Tracker:
    tracker = Tracker(CAMERA, TrackingConfig())
    for item in items:
        if isinstance(item, int):
            tracker.saw_nothing(1, item)
        else:
            tracker.add(item)
    return tracker


def _delayed(items: list[Placement | int], delays: list[tuple[int, int]]) -> list[Placement | int]:
    """``items`` with each chosen one moved ``d`` places later in arrival order."""
    order = list(range(len(items)))
    for index, delay in delays:
        i = order.index(index % len(items))
        moved = order.pop(i)
        order.insert(min(len(order), i + delay), moved)
    return [items[i] for i in order]


def _capture(item: Placement | int) -> int:
    return item if isinstance(item, int) else item.obs.host_capture_ns


def _lateness_ns(items: list[Placement | int]) -> int:
    """How much older than the newest before it the latest-arriving measurement is."""
    newest, worst = -(2**63), 0
    for item in items:
        worst = max(worst, newest - _capture(item))
        newest = max(newest, _capture(item))
    return worst


def _same(a: list[Track], b: list[Track]) -> None:
    assert len(a) == len(b)
    ids: dict[int, int] = {}
    for x, y in zip(sorted(a, key=_first), sorted(b, key=_first), strict=True):
        assert ids.setdefault(x.track_id, y.track_id) == y.track_id
        for field in ("time_ns", "window", "confirmed", "key", "fused_arrival"):
            assert getattr(x, field) == getattr(y, field)
        for u, v in zip(x.state[:4], y.state[:4], strict=True):  # x, p, mu, a (pa: p, a)
            np.testing.assert_allclose(u, v, rtol=0, atol=1e-9)
    assert len(set(ids.values())) == len(ids)


def _first(track: Track) -> tuple[int, int]:
    return (track.time_ns, track.placement.arrival)


@given(
    frames=st.integers(8, 40),
    seed=st.integers(0, 2**32 - 1),
    turn=st.sampled_from([0.0, 0.6, -0.6]),
    delays=st.lists(st.tuples(st.integers(0, 1000), st.integers(1, 12)), min_size=1, max_size=4),
)
def test_a_late_measurement_gives_the_in_order_state(
    frames: int, seed: int, turn: float, delays: list[tuple[int, int]]
) -> None:
    items = _measurements(frames, seed, turn)
    arrived = _delayed(items, delays)
    assume(_lateness_ns(arrived) <= 450 * MS)  # within the 500 ms window
    in_order = _run(items)
    late = _run(arrived)
    assert late.counts["late_dropped"] == 0
    end = 10_000 * MS
    _same(in_order.tracks(end - 5_000 * MS), late.tracks(end - 5_000 * MS))
    assert in_order.counts["late_fused"] == 0


def test_older_than_the_window_is_counted_and_dropped() -> None:
    items = _measurements(30, 1, 0.0)
    first = items.pop(0)
    tracker = _run(items)
    assert isinstance(first, Placement)
    before = [t.state.x.copy() for t in tracker.tracks(0)]
    tracker.add(first)  # 29 frames (~960 ms) older than the newest: beyond the 500 ms window
    assert tracker.counts["late_dropped"] == 1
    after = [t.state.x for t in tracker.tracks(0)]
    assert all(np.array_equal(x, y) for x, y in zip(before, after, strict=True))


def test_a_late_measurement_is_fused_not_dropped() -> None:
    items = [i for i in _measurements(30, 2, 0.0) if isinstance(i, Placement)]
    late = items.pop(20)
    tracker = _run(items)
    without = {t.track_id: t.state.x.copy() for t in tracker.tracks(0)}
    tracker.add(late)  # ~300 ms older than the newest
    assert tracker.counts["late_fused"] == 1 and tracker.counts["late_dropped"] == 0
    changed = [t for t in tracker.tracks(0) if not np.array_equal(t.state.x, without[t.track_id])]
    assert changed  # it moved the estimate: it was used


def test_a_frame_that_saw_nothing_older_than_the_window_is_counted_and_dropped():
    """A late "nothing" is dropped as a late measurement is: older than the window before
    the key's newest frame, or at or before a frame already forgotten; the tracks stay."""
    tracker = Tracker(CAMERA, TrackingConfig(oosm_window_ms=500.0))
    for k in range(3):
        tracker.add(placed(1_000 * MS + k * FRAME_NS, k + 1, (0.0, 0.0, 0.0)))
    tracker.add(placed(1_600 * MS, 4, (0.0, 0.0, 0.0)))  # the first three leave the window
    before = list(tracker)
    tracker.saw_nothing(1, 1_600 * MS - 500 * MS - 1)  # a nanosecond older than the window
    tracker.saw_nothing(1, 1_000 * MS + FRAME_NS)  # at a forgotten frame
    assert tracker.counts["late_dropped"] == 2
    assert list(tracker) == before
    tracker.saw_nothing(1, 1_600 * MS - 500 * MS)  # at the window's edge: a late frame
    assert tracker.counts["late_dropped"] == 2
    assert tracker.counts["late_fused"] == 1
    assert [MISS in t.window for t in tracker] == [True]


def test_a_late_measurement_replays_at_most_64_frames_of_its_key() -> None:
    """Red team rt19: a board at 921600 baud fills a key's 500 ms window with 1,250 frames, and
    each measurement at the window's old edge replayed all of them (0.1 s of CPU each). One
    more than 64 frames older than the newest is counted and dropped; 64 are replayed."""
    frame_ns = 2_400_000  # images 2.4 ms apart: 200 in 480 ms
    items = [placed(1_000 * MS + k * frame_ns, k + 1, (k * 0.01, 0.0, 0.0)) for k in range(200)]
    tracker = _run(items[1:136] + items[137:])  # all but two, in order
    replayed = tracker.counts["replayed_frames"]
    tracker.add(items[136])  # 64 frames before the newest: fused
    assert tracker.counts["late_fused"] == 1 and tracker.counts["late_dropped"] == 0
    assert tracker.counts["replayed_frames"] - replayed == 64
    tracker.add(items[0])  # 199 frames before it, 478 ms: within the window, beyond the bound
    assert tracker.counts["late_dropped"] == 1 and tracker.counts["late_fused"] == 1


def test_one_keys_detections_in_one_image_are_bounded_and_the_rest_counted() -> None:
    """rt19: 80 boxes of one key in one image cost 1.5 s of CPU (each merges into the image
    and replays it, and the assignment grows as their cube); 16 are taken, the rest counted."""
    tracker = Tracker(CAMERA, TrackingConfig())
    capture = 1_000 * MS
    for i in range(20):
        tracker.add(placed(capture, i + 1, (3.0 * (i % 5), 3.0 * (i // 5), 0.0)))
    assert tracker.counts["crowded"] == 4
    assert tracker.counts["tracks_started"] == 16


def test_a_late_measurement_replays_at_most_128_detections() -> None:
    """Red team rt20: with 16 boxes of one key an image (the bound), each up to 63 frames
    late, a late box replayed up to 1,008 detections: 0.5-1.1 s of CPU an image. A late one
    whose replay holds more than 128 is counted and dropped."""
    tracker = Tracker(CAMERA, TrackingConfig())
    arrival = 0
    for k in range(10):
        for i in range(16):
            arrival += 1
            point = (3.0 * (i % 4) + 0.1 * k, 3.0 * (i // 4), 0.0)
            tracker.add(placed(1_000 * MS + k * FRAME_NS, arrival, point))
    assert tracker.counts["crowded"] == 0
    far = (20.0, 20.0, 0.0)  # no box of the images around it
    tracker.add(placed(1_000 * MS + FRAME_NS + MS, arrival + 1, far))  # 8 x 16 after it
    assert tracker.counts["late_fused"] == 1 and tracker.counts["late_dropped"] == 0
    tracker.add(placed(1_000 * MS + MS, arrival + 2, far))  # 9 x 16 after it
    assert tracker.counts["late_dropped"] == 1 and tracker.counts["late_fused"] == 1


# A key whose tracks ended is forgotten at a listing (``Tracker._only_misses``), then started
# afresh by its next detection. Red team rt58 made a late detection after that confirm a track
# the in-order run never confirmed: the key's own positives without a position were forgotten
# with it, and several lost results of one image filled the source's memory of empty frames.
_SEGMENT = st.tuples(st.sampled_from(["hit", "blind", "nothing"]), st.integers(1, 30))


def _segments(segments: list[tuple[str, int]], repeats: int) -> list[Placement | int]:
    """A still target, frame after frame: seen and placed (``hit``), seen without a position
    (``blind``: a pose gap), or not seen (``nothing``: ``repeats`` lost results an image)."""
    out: list[Placement | int] = []
    k = 0
    for kind, count in segments:
        for _ in range(count):
            capture = 1_000 * MS + k * FRAME_NS
            k += 1
            if kind == "nothing":
                out += [capture] * repeats
                continue
            p = placed(capture, len(out) + 1, (1.0, 0.0, 0.0))
            out.append(p if kind == "hit" else Placement(p.obs, p.arrival, None, None))
    return out


_RT58 = [("hit", 1), ("blind", 20), ("hit", 1), ("blind", 9), ("hit", 2), ("blind", 3)]


@example(segments=_RT58, repeats=1, delays=[(21, 9)])  # the key's own positives, forgotten
@example(  # 70 lost results an image filled the source's memory of 64 empty frames
    segments=[(kind if kind == "hit" else "nothing", n) for kind, n in _RT58],
    repeats=70,
    delays=[(1 + 20 * 70, 9 * 70)],
)
@given(
    segments=st.lists(_SEGMENT, min_size=2, max_size=8),
    repeats=st.sampled_from([1, 3, 70]),
    delays=st.lists(st.tuples(st.integers(0, 1000), st.integers(1, 12)), min_size=1, max_size=4),
)
def test_a_late_measurement_after_its_key_was_forgotten_gives_the_in_order_tracks(
    segments: list[tuple[str, int]], repeats: int, delays: list[tuple[int, int]]
) -> None:
    """With tracks that end 400 ms after their last hit and a listing after every input (as a
    verdict check lists them), keys are forgotten between bursts; arrival order still ends
    with the in-order run's tracks, numbers, windows and confirmations."""
    items = _segments(segments, repeats)
    arrived = _delayed(items, delays)
    assume(_lateness_ns(arrived) <= 450 * MS)

    def run(order: list[Placement | int]) -> Tracker:
        tracker = Tracker(CAMERA, TrackingConfig(delete_after_ms=400.0))
        newest = 0
        for item in order:
            if isinstance(item, int):
                tracker.saw_nothing(1, item)
            else:
                tracker.add(item)
            newest = max(newest, _capture(item))
            tracker.tracks(newest + 20 * MS)
        return tracker

    in_order, late = run(items), run(arrived)
    assert late.counts["late_dropped"] == 0
    _same(list(in_order), list(late))
