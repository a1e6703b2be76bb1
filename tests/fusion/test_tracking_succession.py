"""Succession when two tentative tracks are confirmed by the same frame (a fuzzer's finding:
the first one's succession removed a coasting track before the second, whose place in the
list it still held by index: an IndexError, or the wrong track renamed)."""

from __future__ import annotations

import numpy as np

from fusion.tracking import TrackingConfig
from fusion.tracking.association import Associator
from fusion.tracking.history import Detection, Frame
from fusion.tracking.motion import ImmState
from fusion.tracking.tracks import MISS, Lifecycle, Track
from tests.support.tracking_inputs import MS, placed

T0 = 1_000_000_000
R = 0.01  # m², each axis: the detections' covariance
GATE = 11.345  # χ²₃ at 0.99 (the default is 0.999: the succession's χ²₃ 44.8)
CONFIG = TrackingConfig(confirm_hits=2, confirm_window=3)
LIFE = Lifecycle(2, 3, round(CONFIG.delete_after_ms * 1e6))


def _still(point: tuple[float, float, float], variance: float) -> ImmState:
    """Both modes at ``point``, still, every variance ``variance`` (velocity and turn rate
    included), even odds."""
    x = np.zeros((2, 7))
    x[:, :3] = point
    p = np.stack([np.eye(7) * variance] * 2)
    return ImmState(x, p, np.array([0.5, 0.5]), p.copy())


def _detection(arrival: int, point: tuple[float, float, float]) -> Detection:
    p = placed(T0 + 200 * MS, arrival, point)
    r = np.eye(3) * R
    o = p.obs
    box = (o.center_x, o.center_y, o.width, o.height)
    return Detection(p, np.array(point), r, GATE, list(point), r.tolist(), box)


def test_two_tracks_confirmed_by_one_frame_where_the_first_succeeds_a_coasting_one():
    """A coasting track (1) at the origin; tentative 2 at 0.65 m from it (out of 1's gate,
    d² about 21 > 11.3, within the succession's, about 21 < 44.8) and tentative 3 far away.
    One frame hits 2 and 3 (both confirmed): 2 takes number 1, 1 ends, 3 stays 3."""
    coasting = Track(1, "1:5:11", _still((0.0, 0.0, 0.0), 0.01), T0, placed(T0, 2, (0.0, 0.0, 0.0)),
                     (1, 2, MISS), True, 2)  # fmt: skip
    near = Track(2, "1:5:11", _still((0.65, 0.0, 0.0), 0.01), T0 + 100 * MS,
                 placed(T0 + 100 * MS, 3, (0.65, 0.0, 0.0)), (3,), False, 3)  # fmt: skip
    far = Track(3, "1:5:11", _still((30.0, 30.0, 0.0), 0.01), T0 + 100 * MS,
                placed(T0 + 100 * MS, 4, (30.0, 30.0, 0.0)), (4,), False, 4)  # fmt: skip
    frame = Frame(
        T0 + 200 * MS, (_detection(5, (0.65, 0.0, 0.0)), _detection(6, (30.0, 30.0, 0.0)))
    )
    counts = {"gated_out": 0, "tracks_started": 0, "tracks_continued": 0}
    out = Associator(CONFIG, LIFE, counts).process((coasting, near, far), frame, counted=True)
    assert sorted(t.track_id for t in out) == [1, 3]
    renamed = next(t for t in out if t.track_id == 1)
    assert renamed.window == (3, 5) and renamed.confirmed  # 2's hits, under 1's number
    assert next(t for t in out if t.track_id == 3).window == (4, 6)
    assert counts == {"gated_out": 2, "tracks_started": 0, "tracks_continued": 1}


def _frames_with(second: list[bool]) -> list[Track]:
    """A target at the origin in every frame (0.1 s apart), its track (99) confirmed from the
    start; a second detection of its key 30 m away in the frames ``second`` marks. The
    tracks after the last frame."""
    life = Lifecycle(3, 5, round(CONFIG.delete_after_ms * 1e6))
    config = TrackingConfig(confirm_hits=3, confirm_window=5)
    held = Track(99, "1:5:11", _still((0.0, 0.0, 0.0), 0.01), T0, placed(T0, 1, (0.0, 0.0, 0.0)),
                 (1, 1, 1), True, 1)  # fmt: skip
    associator = Associator(config, life, {"gated_out": 0, "tracks_started": 0,
                                           "tracks_continued": 0})  # fmt: skip
    tracks: tuple[Track, ...] = (held,)
    arrival = 10
    for k, seen in enumerate(second, start=1):
        t = T0 + k * 100 * MS
        detections = [_detection_at(t, arrival, (0.0, 0.0, 0.0))]
        if seen:
            detections.append(_detection_at(t, arrival + 1, (30.0, 0.0, 0.0)))
        arrival += 2
        tracks = associator.process(tracks, Frame(t, tuple(detections)), counted=True)
    return list(tracks)


def _detection_at(t: int, arrival: int, point: tuple[float, float, float]) -> Detection:
    p = placed(t, arrival, point)
    r = np.eye(3) * R
    o = p.obs
    return Detection(p, np.array(point), r, GATE, list(point), r.tolist(),
                     (o.center_x, o.center_y, o.width, o.height))  # fmt: skip


def test_a_second_target_of_a_key_is_confirmed_by_an_unbroken_window():
    """Beside a confirmed track of its key, a new one is confirmed only when every frame of
    its window hit it (red team rt37: a ghost in every other frame, or three glitched frames,
    reached 3 of 5 and PROCEEDed 3 m off as a second target); a real one, seen in every
    frame, is confirmed in 5."""
    far = [t for t in _frames_with([True] * 5) if t.track_id != 99]
    assert len(far) == 1 and far[0].confirmed
    far = [t for t in _frames_with([True] * 4) if t.track_id != 99]
    assert len(far) == 1 and not far[0].confirmed  # 4 hits: 3 of 5 would have confirmed it
    ghost = [True, False] * 6 + [True]  # in every other frame
    far = [t for t in _frames_with(ghost) if t.track_id != 99]
    assert len(far) == 1 and not far[0].confirmed
    assert [t.confirmed for t in _frames_with(ghost) if t.track_id == 99] == [True]
