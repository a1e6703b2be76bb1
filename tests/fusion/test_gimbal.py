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
    assert track.must_wait(70 * MS) and track.at(70 * MS) is None  # not heard still yet
    track.add(GimbalSample(80 * MS, (0.0, -60.6, 0.0)))
    assert track.at(70 * MS) is not None  # between two statuses


def pitch_deg(attitude) -> float:
    return math.degrees(g.quat_to_euler_zyx(attitude.quaternion_wxyz)[1])


def test_gimbal_track_slerps_between_samples_and_bounds_the_nearest():
    track = GimbalTrack(max_age_ms=50.0)
    assert track.at(0) is None
    track.add(GimbalSample(0, (0.0, -30.0, 0.0), fx_px=300.0))
    track.add(GimbalSample(20 * MS, (0.0, -31.0, 0.0), fx_px=310.0))  # 50°/s, zooming 1.6/s
    assert pitch_deg(track.at(10 * MS)) == pytest.approx(-30.5)
    assert track.at(4 * MS).fx_px == 300.0 and track.at(16 * MS).fx_px == 310.0
    assert not track.must_wait(20 * MS)  # at the newest status itself
    assert track.must_wait(70 * MS)  # past the newest status: the next will bracket it
    assert track.at(70 * MS) is None  # and without it: turning, 2.5° on by then (rt41)
    assert track.at(-1) is None  # before the oldest status
    still = GimbalTrack(max_age_ms=50.0)
    for k in range(3):  # the same attitude for 100 ms: heard still
        still.add(GimbalSample(k * 50 * MS, (0.0, -30.0, 0.0)))
    assert still.must_wait(150 * MS) and still.at(150 * MS) is not None  # 50 ms on
    assert still.must_wait(150 * MS + 1) and still.at(150 * MS + 1) is None  # too old


def test_a_status_applies_alone_only_to_a_gimbal_heard_still():
    """Red team rt41: a gimbal turning at 55°/s, its status at 10 Hz: a capture after the
    newest status took its angles, up to 100 ms (5.5°) old; PROCEEDs 1.5 m off at a claimed
    σ of 0.08 m. Such a capture waits for the next status; without one, a turning gimbal's
    attitude there is unknown."""
    track = GimbalTrack(max_age_ms=100.0, max_rate_deg_s=60.0)
    track.add(GimbalSample(0, (0.0, -45.0, 0.0)))
    assert track.must_wait(1 * MS) and track.at(1 * MS) is None  # one status: still?
    track.add(GimbalSample(100 * MS, (0.0, -39.5, 0.0)))  # 55°/s
    assert pitch_deg(track.at(50 * MS)) == pytest.approx(-42.25)
    assert track.must_wait(103 * MS) and track.at(103 * MS) is None
    track.add(GimbalSample(200 * MS, (0.0, -39.5, 0.0)))  # stopped
    assert pitch_deg(track.at(150 * MS)) == pytest.approx(-39.5)
    assert track.at(260 * MS) is not None  # heard still for 100 ms, 60 ms on
    assert track.at(301 * MS) is None  # too old


def test_a_status_sent_twice_is_no_stillness():
    """Red team rt42: each status of a 55°/s turn sent twice, 1 ms apart: the rate between
    the two was 0, and PROCEEDs were 2.2 m off again with the first fix."""

    def pitch(t_s: float) -> float:
        return -45.0 + 55.0 * t_s

    track = GimbalTrack(max_age_ms=100.0)
    for k in range(5):
        for dt_ms in (0, 1):
            track.add(GimbalSample((k * 100 + dt_ms) * MS, (0.0, pitch(k / 10), 0.0)))
    assert track.must_wait(430 * MS) and track.at(430 * MS) is None
    assert pitch_deg(track.at(350 * MS)) == pytest.approx(pitch(0.35), abs=0.05)


def test_a_still_gimbal_heard_seldom_is_placed():
    """Red team rt42: a still gimbal with its status at 4 Hz HOLDs `pose_gap` for good
    with the first fix (a rate known only between statuses 200 ms apart at most)."""
    track = GimbalTrack(max_age_ms=100.0)
    for k in range(4):
        track.add(GimbalSample(k * 250 * MS, (0.0, -45.0, 0.0)))
    assert track.at(600 * MS) is not None  # between two that agree, 250 ms apart
    assert track.at(850 * MS) is not None and track.at(851 * MS) is None  # 100 ms past
    gap = GimbalTrack(max_age_ms=100.0)
    gap.add(GimbalSample(0, (0.0, -45.0, 0.0)))
    gap.add(GimbalSample(300 * MS, (0.0, -40.0, 0.0)))  # a turn over a long silence
    assert gap.at(20 * MS) is None and gap.at(280 * MS) is None


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
    assert track.at(45 * MS) is None  # for 20 ms only
    track.add(GimbalSample(60 * MS, (0.0, -90.0, 0.0)))
    assert track.at(65 * MS).fx_px is None  # for 40 ms: heard still
    # an optical zoom: 1.5 a second (ln), under the bound of 2
    for k in range(1, 6):
        track.add(
            GimbalSample((60 + 20 * k) * MS, (0.0, -90.0, 0.0), fx_px=320 * math.exp(0.03 * k))
        )
    assert track.at(140 * MS).fx_px == pytest.approx(320 * math.exp(0.12))
