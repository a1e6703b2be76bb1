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


def pitch_deg(attitude) -> float:
    return math.degrees(g.quat_to_euler_zyx(attitude.quaternion_wxyz)[1])


def test_gimbal_track_slerps_between_samples_and_bounds_the_nearest():
    track = GimbalTrack(max_age_ms=50.0)
    assert track.at(0) is None
    track.add(GimbalSample(0, (0.0, -30.0, 0.0), fx_px=300.0))
    track.add(GimbalSample(20 * MS, (0.0, -31.0, 0.0), fx_px=310.0))  # 50°/s, zooming 1.6/s
    assert pitch_deg(track.at(10 * MS)) == pytest.approx(-30.5)
    assert track.at(4 * MS).fx_px == 300.0 and track.at(16 * MS).fx_px == 310.0
    assert track.at(70 * MS) is None  # turning at 50°/s: 2.5° on by then (rt41)
    assert track.must_wait(70 * MS)  # the next status will bracket it
    assert track.at(-1) is None  # before the oldest status
    still = GimbalTrack(max_age_ms=50.0)
    for k in range(3):  # one run of 100 ms: settled, a still gimbal
        still.add(GimbalSample(k * 50 * MS, (0.0, -30.0, 0.0)))
    assert still.at(150 * MS) is not None and not still.must_wait(150 * MS)  # 50 ms on
    assert still.at(150 * MS + 1) is None and not still.must_wait(150 * MS + 1)  # too old


def test_a_status_applies_past_itself_only_while_the_gimbal_is_near_it():
    """Red team rt41: a gimbal turning at 55°/s, its status at 10 Hz: a capture after the
    newest status took its angles, up to 100 ms (5.5°) old; PROCEEDs 1.5 m off at a claimed
    σ of 0.08 m. The turn into a status, at its rate, decides how long it holds: 0.2° on."""
    track = GimbalTrack(max_age_ms=100.0, max_rate_deg_s=60.0)
    track.add(GimbalSample(0, (0.0, -45.0, 0.0)))
    assert track.at(1 * MS) is None and track.must_wait(1 * MS)  # one status: rate unknown
    track.add(GimbalSample(100 * MS, (0.0, -39.5, 0.0)))  # 55°/s
    assert track.at(100 * MS) is not None  # at a status itself
    assert track.at(103 * MS) is not None  # 0.165° on
    assert track.at(104 * MS) is None and track.must_wait(104 * MS)  # 0.22° on
    track.add(GimbalSample(200 * MS, (0.0, -39.5, 0.0)))  # a repeat: stopped, or stale?
    assert track.at(150 * MS) is None  # unknown until the run settles
    track.add(GimbalSample(300 * MS, (0.0, -39.5, 0.0)))  # 200 ms of the same: still
    assert pitch_deg(track.at(150 * MS)) == pytest.approx(-39.5)
    assert track.at(399 * MS) is not None and not track.must_wait(399 * MS)


def test_repeated_statuses_vouch_for_no_stillness():
    """Red team rt42: each status sent twice 1 ms apart, or at 30 Hz with angles new at
    10 Hz, made the rate between the repeats 0 and a 55°/s turn look still: PROCEEDs 2.2 m
    off again. The turn into a run is measured over the gap before it."""

    def pitch(t_s: float) -> float:
        return -45.0 + 55.0 * t_s  # 55°/s

    twice = GimbalTrack(max_age_ms=100.0)
    stale = GimbalTrack(max_age_ms=100.0)
    for k in range(5):  # statuses at 10 Hz with new angles
        angles = (0.0, pitch(k / 10), 0.0)
        twice.add(GimbalSample(k * 100 * MS, angles))
        twice.add(GimbalSample(k * 100 * MS + 1 * MS, angles))
        for r in range(3):  # at 30 Hz
            stale.add(GimbalSample((k * 100 + r * 33) * MS, angles))
    for track, after_ms in ((twice, 430), (stale, 480)):  # past the newest status
        assert track.at(after_ms * MS) is None and track.must_wait(after_ms * MS)
        between = track.at(350 * MS)  # between two runs: both readings...
        if track is twice:  # ... agree within 0.06°: slerped
            assert pitch_deg(between) == pytest.approx(pitch(0.35), abs=0.1)
        else:  # 33 or 66 ms of stale angles: 0.92° apart, unknown
            assert between is None
    assert stale.at(320 * MS) is None  # inside a run of stale angles: unknown


def test_a_still_gimbal_heard_seldom_is_placed():
    """Red team rt42: a still gimbal with its status at 4 Hz HOLDs `pose_gap` for good
    with the first version (a rate known only between statuses 200 ms apart at most)."""
    track = GimbalTrack(max_age_ms=100.0)
    for k in range(4):
        track.add(GimbalSample(k * 250 * MS, (0.0, -45.0, 0.0)))
    assert track.at(600 * MS) is not None  # within the run
    assert track.at(850 * MS) is not None and track.at(851 * MS) is None  # 100 ms past it


def test_a_gimbal_zooming_faster_than_a_lens_does_is_unknown_between_and_after():
    """Red team rt18: focal lengths alternating 320 and 640 px at 100 Hz put a third of the
    PROCEEDs 5 m off. A sample without focal lengths has the camera's own (``fx_px``)."""
    track = GimbalTrack(max_age_ms=50.0, fx_px=320.0)
    track.add(GimbalSample(0, (0.0, -90.0, 0.0), fx_px=320.0))
    track.add(GimbalSample(10 * MS, (0.0, -90.0, 0.0), fx_px=640.0))  # 2x in 10 ms
    assert track.at(5 * MS) is None and track.at(20 * MS) is None
    track.add(GimbalSample(20 * MS, (0.0, -90.0, 0.0)))  # the camera's own again: 2x back
    assert track.at(25 * MS) is None
    track.add(GimbalSample(40 * MS, (0.0, -90.0, 0.0)))  # steady?
    assert track.at(45 * MS) is None  # not yet: a repeat says nothing
    track.add(GimbalSample(120 * MS, (0.0, -90.0, 0.0)))  # 100 ms of it: settled
    assert track.at(125 * MS).fx_px is None
    # an optical zoom: 1.5 a second (ln), under the bound of 2
    for k in range(1, 6):
        track.add(
            GimbalSample((120 + 20 * k) * MS, (0.0, -90.0, 0.0), fx_px=320 * math.exp(0.03 * k))
        )
    assert track.at(220 * MS).fx_px == pytest.approx(320 * math.exp(0.15))
