"""A ranged fix whose range's σ for the target's motion a track replaces by its own velocity
(``fusion.tracking.history.Carried``): a lone reading's range moved back to the capture, two
unconfirmed readings' disagreement judged by what the velocity explains. The truths here are
this file's arithmetic and its own scene geometry (tests/support/gimbal_scenes.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fusion import RangeSource
from fusion.tracking import motion
from fusion.tracking.association import _measured
from fusion.tracking.history import Carried, Detection
from tests.support.gimbal_scenes import Scene, Target, proceed_errors, run

NORTH = (1.0, 0.0, 0.0)
OWN_RAY_VAR = 0.0025  # the fix's noise along its ray without the motion's term: 0.05 m σ
FIX = [30.0, 0.0, 0.0]


def _prediction(speed_north_m_s: float, speed_sigma_m_s: float) -> motion.Prediction:
    """A track at ``FIX`` moving north, its velocity's σ on each axis as given, predicted a
    millisecond on (the process noise adds about nothing in that time)."""
    imm = motion.Imm(motion.MotionParams())
    state = imm.initial_state(np.array(FIX), np.eye(3) * 0.01)
    x, p = state.x.copy(), state.p.copy()
    x[:, 3] = speed_north_m_s
    for axis in (3, 4, 5):
        p[:, axis, axis] = speed_sigma_m_s**2
    return imm.predict(state._replace(x=x, p=p, a=p.copy()), 0.001)


def _detection(carried_s: float, rise_m: float = 0.0, span_s: float = 0.0) -> Detection:
    own = [[OWN_RAY_VAR, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.01]]
    moved = [[1.0, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.01]]  # what a fix alone claims
    carried = Carried(NORTH, carried_s, rise_m, span_s, own, None)
    z = list(FIX)
    return Detection(None, np.array(z), np.array(moved), 11.3, z, moved, (0, 0, 10, 10), None,
                     False, carried)  # fmt: skip


@pytest.mark.parametrize("carried_s", [0.05, -0.08])
def test_a_lone_readings_range_is_moved_back_by_the_tracks_velocity(carried_s):
    """A reading ``carried_s`` after the capture, a track at 8 m/s along the ray: the fix is
    8 m/s × that nearer the camera than the reading put it, and claims the velocity's 0.5 m/s
    σ times that more along the ray, none across it."""
    z, r = _measured(_prediction(8.0, 0.5), _detection(carried_s))
    assert z == pytest.approx([30.0 - 8.0 * carried_s, 0.0, 0.0], abs=1e-3)
    assert r[0][0] == pytest.approx(OWN_RAY_VAR + (0.5 * carried_s) ** 2, rel=0.02)
    assert r[1][1] == r[2][2] == 0.01  # across the ray: the fix's own


def test_a_still_track_keeps_a_lone_readings_range():
    z, r = _measured(_prediction(0.0, 0.2), _detection(0.05))
    assert z == pytest.approx(FIX, abs=1e-9)
    assert r[0][0] == pytest.approx(OWN_RAY_VAR + (0.2 * 0.05) ** 2, rel=0.02)


@pytest.mark.parametrize(
    ("rise_m", "speed_sigma_m_s", "doubt_m"),
    [
        (0.8, 0.5, 0.0),  # 8 m/s over 0.1 s: the track's own motion, no reading off
        (2.0, 0.5, 1.0),  # 1.2 m more than it explains, and 2σ of it (0.1 m), less 0.3
        (0.8, 10.0, 0.5),  # a new track explains nothing: the whole disagreement, less 0.3
        (-0.8, 0.5, 0.5),  # nearer where the track recedes: no more than they disagree
    ],
)
def test_two_readings_disagreement_is_judged_by_the_tracks_velocity(
    rise_m, speed_sigma_m_s, doubt_m
):
    """Two readings 0.1 s apart no third confirms, between which the capture lies: what of
    their disagreement the track's velocity (8 m/s away) does not explain, with twice its σ,
    may be a reading off, less the 0.3 m a second difference is allowed, and never more than
    they disagree less that (a fix alone claims that)."""
    z, r = _measured(_prediction(8.0, speed_sigma_m_s), _detection(0.0, rise_m, 0.1))
    assert z == pytest.approx(FIX, abs=1e-9)  # not carried: between the two
    assert r[0][0] == pytest.approx(OWN_RAY_VAR + doubt_m**2, rel=0.02, abs=1e-6)


def _weave(amplitude_m: float, status_hz: float) -> list[tuple[float, float]]:
    """A target on the ground weaving ``amplitude_m`` along the gimbal laser's line, 35 m
    north of a camera 20 m up, a 3 s period (1.5 g at 3.4 m, 1.8 g at 4 m), the gimbal on it,
    statuses (and laser ranges) at ``status_hz``; its box 2 m across, too narrow for the beam
    to stay on it from one reading to the next, so most captures have a lone reading."""

    def at(t: float) -> np.ndarray:
        return np.array([35.0 + amplitude_m * math.sin(2.0 * math.pi * t / 3.0), 0.0, 0.0])

    def following(t: float) -> tuple[float, float, float]:
        return (0.0, -math.degrees(math.atan2(20.0, float(at(t)[0]))), 0.0)

    target = Target(7, at, radius_m=0.05, box_radius_m=1.0)
    scene = Scene([target], duration_s=6.0, gimbal_rpy=following, status_hz=status_hz)
    _, lines = run(scene)
    sources = {line.range_source for _, line in lines if line.verdict.value == "PROCEED"}
    assert sources == {RangeSource.GIMBAL_LASER}
    return proceed_errors(scene, lines)


@pytest.mark.parametrize(
    ("amplitude_m", "status_hz", "bound_m", "proceeds"),
    [(4.0, 10.0, 0.25, 200), (3.4, 5.0, 0.35, 60)],
)
def test_a_target_weaving_along_the_laser_line_is_followed(
    amplitude_m, status_hz, bound_m, proceeds
):
    """rt54: a lone reading's range claimed 15 m/s times its age for the motion (0.44 m at
    30 ms), and two readings that differ by the target's own motion claimed that they
    disagree: the filter, whose model has no 1.8 g manoeuvre, was left to its prediction and
    PROCEEDed up to 0.42 m off at 10 Hz, 0.87 m at 5 Hz. With the track's velocity, the fixes
    keep the laser's precision and the track follows (0.18 m, 0.27 m); the PROCEEDs beyond
    4σ left are the laser meeting the target's near side as the filter converges."""
    errors = _weave(amplitude_m, status_hz)
    assert len(errors) > proceeds
    assert max(e for e, _ in errors) < bound_m
