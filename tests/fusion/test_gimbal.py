"""The gimbal track: the camera's attitude at a capture time from arrival-stamped statuses."""

import math

import pytest

from fusion import GimbalSample
from fusion import geometry as g
from fusion.gimbal import GimbalTrack
from tests.support.fusion_inputs import MS


def test_a_gimbal_turning_faster_than_the_limit_is_unknown_between_and_after():
    """Found by an attack: statuses are stamped at arrival, and a gimbal stepping -90°/-60°
    every 30 ms was blended into angles no status reported (PROCEED up to 5.2 m off)."""
    track = GimbalTrack(max_age_ms=50.0, max_rate_deg_s=60.0)
    track.add(GimbalSample(0, (0.0, -90.0, 0.0)))
    track.add(GimbalSample(30 * MS, (0.0, -60.0, 0.0)))  # 1000°/s
    assert track.at(15 * MS) is None  # between them
    assert track.at(40 * MS) is None  # last heard turning fast
    track.add(GimbalSample(60 * MS, (0.0, -60.5, 0.0)))  # settled: ~17°/s
    assert track.at(70 * MS) is not None


def test_gimbal_track_slerps_between_samples_and_bounds_the_nearest():
    track = GimbalTrack(max_age_ms=50.0)
    assert track.at(0) is None
    track.add(GimbalSample(0, (0.0, -30.0, 0.0), fx_px=300.0))
    track.add(GimbalSample(20 * MS, (0.0, -31.0, 0.0), fx_px=310.0))  # 50°/s, zooming 1.6/s
    mid = track.at(10 * MS)
    assert math.degrees(g.quat_to_euler_zyx(mid.quaternion_wxyz)[1]) == pytest.approx(-30.5)
    assert track.at(4 * MS).fx_px == 300.0 and track.at(16 * MS).fx_px == 310.0
    assert track.at(70 * MS) is None  # turning at 50°/s: 2.5° on by then (rt41)
    assert track.must_wait(70 * MS)  # the next status will bracket it
    still = GimbalTrack(max_age_ms=50.0)
    still.add(GimbalSample(0, (0.0, -30.0, 0.0)))
    still.add(GimbalSample(20 * MS, (0.0, -30.0, 0.0)))
    assert still.at(70 * MS) is not None and not still.must_wait(70 * MS)  # 50 ms on
    assert still.at(70 * MS + 1) is None and not still.must_wait(70 * MS + 1)  # too old
    assert still.at(-50 * MS) is not None and still.at(-50 * MS - 1) is None


def test_a_status_applies_past_itself_only_while_the_gimbal_is_near_it():
    """Red team rt41: a gimbal turning at 55°/s, its status at 10 Hz: a capture after the
    newest status took its angles, up to 100 ms (5.5°) old; PROCEEDs 1.5 m off at a claimed
    σ of 0.08 m. The rate it was heard turning decides how long a status holds: 0.2° on."""
    track = GimbalTrack(max_age_ms=100.0, max_rate_deg_s=60.0)
    track.add(GimbalSample(0, (0.0, -45.0, 0.0)))
    assert track.at(1 * MS) is None and track.must_wait(1 * MS)  # one status: rate unknown
    track.add(GimbalSample(100 * MS, (0.0, -39.5, 0.0)))  # 55°/s
    assert track.at(100 * MS) is not None  # at a status itself
    assert track.at(103 * MS) is not None  # 0.165° on
    assert track.at(104 * MS) is None and track.must_wait(104 * MS)  # 0.22° on
    assert track.at(-3 * MS) is not None and track.at(-4 * MS) is None  # before the oldest
    track.add(GimbalSample(200 * MS, (0.0, -39.5, 0.0)))  # still now
    at_150 = track.at(150 * MS)  # bracketed: between the two
    assert math.degrees(g.quat_to_euler_zyx(at_150.quaternion_wxyz)[1]) == pytest.approx(-39.5)
    assert track.at(299 * MS) is not None and not track.must_wait(299 * MS)  # still: it holds


def test_a_gimbal_zooming_faster_than_a_lens_does_is_unknown_between_and_after():
    """Red team rt18: focal lengths alternating 320 and 640 px at 100 Hz put a third of the
    PROCEEDs 5 m off. A sample without focal lengths has the camera's own (``fx_px``)."""
    track = GimbalTrack(max_age_ms=50.0, fx_px=320.0)
    track.add(GimbalSample(0, (0.0, -90.0, 0.0), fx_px=320.0))
    track.add(GimbalSample(10 * MS, (0.0, -90.0, 0.0), fx_px=640.0))  # 2x in 10 ms
    assert track.at(5 * MS) is None and track.at(20 * MS) is None
    track.add(GimbalSample(20 * MS, (0.0, -90.0, 0.0)))  # the camera's own again: 2x back
    assert track.at(25 * MS) is None
    track.add(GimbalSample(40 * MS, (0.0, -90.0, 0.0)))  # steady
    assert track.at(45 * MS).fx_px is None
    # an optical zoom: 1.5 a second (ln), under the bound of 2
    for k in range(1, 6):
        track.add(
            GimbalSample((40 + 20 * k) * MS, (0.0, -90.0, 0.0), fx_px=320 * math.exp(0.03 * k))
        )
    assert track.at(140 * MS).fx_px == pytest.approx(320 * math.exp(0.15))
