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
    track.add(GimbalSample(20 * MS, (0.0, -31.0, 0.0), fx_px=400.0))  # 50°/s
    mid = track.at(10 * MS)
    assert math.degrees(g.quat_to_euler_zyx(mid.quaternion_wxyz)[1]) == pytest.approx(-30.5)
    assert track.at(4 * MS).fx_px == 300.0 and track.at(16 * MS).fx_px == 400.0
    assert track.at(70 * MS) is not None  # 50 ms from the newest
    assert track.at(70 * MS + 1) is None
    assert track.at(-50 * MS - 1) is None
