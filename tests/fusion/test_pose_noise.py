"""Issue 28, red team round 3: an honest autopilot whose estimate jitters is no attacker.

The autopilot's pose (LOCAL_POSITION_NED with its velocity, 50 Hz) carries white noise on the
position and velocity, and small steps where the estimator takes a GNSS fix (every 200 ms).
At fusion's own 0.02 m allowance (made for RflySim's exact state) the red team measured the
world holding ``pose_jump`` 81-100 % of the time; the host's allowance for an autopilot's
pose (``AUTOPILOT_POSE_JUMP_M``, 0.1 m) must let such a stream PROCEED, while a glitch
beyond the noise still never moves a target further than the allowance.

Truth is the test's own (``test_pose_glitches``'s flight: north at 2 m/s, 10 m up, the target
at the image centre lies 0.1 + 9.95 m north of the vehicle at the capture).
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gizmo_core import Decision, HoldReason
from gizmo_host.app.host_config import StoreConfig
from gizmo_host.app.settings import AUTOPILOT_POSE_JUMP_M
from gizmo_host.app.world_config import world_config
from tests.fusion.test_pose_glitches import (
    POSE_PERIOD_MS,
    SPEED_M_S,
    Glitch,
    fly,
    true_north_m,
    true_target_north_m,
    world_after_captures,
)
from tests.support.fusion_inputs import MS, pose

DURATION_S = 10


def noisy_flight(*, white_m: float, step_m: float, velocity_m_s: float, seed: int, **config):
    """The honest noisy stream and captures; returns (PROCEED share after the first second,
    the jump HOLDs, the largest PROCEED error in m)."""
    rng = random.Random(seed)
    events: list[tuple[int, int, object]] = []
    bias = [0.0, 0.0, 0.0]
    end_ns = DURATION_S * 1000 * MS
    for t in range(0, end_ns, POSE_PERIOD_MS * MS):
        if t % (200 * MS) == 0:  # a GNSS fix moves the estimate a little
            bias = [rng.gauss(0.0, step_m) for _ in range(3)]
        truth = (true_north_m(t), 0.0, -10.0)
        position = tuple(p + b + rng.gauss(0.0, white_m) for p, b in zip(truth, bias, strict=True))
        velocity = tuple(v + rng.gauss(0.0, velocity_m_s) for v in (SPEED_M_S, 0.0, 0.0))
        events.append((t + MS, 0, pose(t, position=position, velocity=velocity)))
    w = world_after_captures(events, end_ns, **config)
    judged = proceeds = jump_holds = 0
    worst_m = 0.0
    for arrival, _, item in events:
        w.apply(item)
        s = w.snapshot(arrival)
        if HoldReason.POSE_JUMP in s.reasons:
            jump_holds += 1
        if arrival < 1000 * MS:
            continue
        judged += 1
        if s.verdict is not Decision.PROCEED:
            continue
        proceeds += 1
        target = s.target(s.selected)
        assert target.position_ned_m is not None
        truth = (true_target_north_m(target.capture_ns), 0.0, 0.0)
        worst_m = max(worst_m, math.dist(target.position_ned_m, truth))
    return proceeds / judged, jump_holds, worst_m


def autopilot_allowance() -> float:
    """What the host configures for an autopilot's pose when ``[world]`` says nothing."""
    return world_config({}, StoreConfig(), pose_required=True, pose_source="mavlink").pose_jump_m


def test_the_host_gives_an_autopilots_pose_its_own_allowance_and_a_setting_wins():
    assert autopilot_allowance() == AUTOPILOT_POSE_JUMP_M == 0.1
    rflysim = world_config({}, StoreConfig(), pose_required=True, pose_source="rflysim")
    assert rflysim.pose_jump_m == 0.02  # the simulator's exact state
    table = {"pose_jump_m": 0.05}
    chosen = world_config(table, StoreConfig(), pose_required=True, pose_source="mavlink")
    assert chosen.pose_jump_m == 0.05


@pytest.mark.parametrize("seed", range(4))
def test_an_honest_jittering_autopilot_proceeds_at_its_allowance(seed):
    """1.5 cm of white noise, GNSS steps of 1 cm per axis, 0.05 m/s on the velocity: at
    0.02 m it holds (the finding, measured in the same run), at the autopilot's allowance it
    proceeds, on the truth to within the noise."""
    noise = dict(white_m=0.015, step_m=0.01, velocity_m_s=0.05, seed=seed)
    strict_share, strict_jumps, _ = noisy_flight(**noise, pose_jump_m=0.02)
    share, jumps, worst_m = noisy_flight(**noise, pose_jump_m=autopilot_allowance())
    print(f"seed {seed}: 0.02 m {strict_share:.3f} ({strict_jumps} jump holds); "
          f"{AUTOPILOT_POSE_JUMP_M} m {share:.3f} ({jumps}), worst {worst_m:.3f} m")  # fmt: skip
    assert strict_share < 0.5 and strict_jumps > 0
    assert share > 0.99 and jumps == 0
    assert worst_m < 0.1  # the pose's own error (1.5 cm + 1 cm, 3-4 sigma), not a glitch's


@settings(max_examples=40, deadline=None)
@given(
    after_ms=st.floats(1.0, float(POSE_PERIOD_MS)),
    dv=st.floats(-200.0, 200.0),
    dp=st.floats(-1.0, 1.0),
)
def test_at_the_autopilots_allowance_a_glitch_in_the_stream_moves_a_target_that_far(
    after_ms, dv, dp
):
    """The attacker's search at 0.1 m (an autopilot's pose always reports its velocity), a
    glitch within the stream's own period: what passes moves a target by the allowance, plus
    a little for the stamps and the velocities' error (measured worst 0.134 m)."""
    flown = fly_with(Glitch(after_ms, dv, dp), autopilot_allowance())
    assert flown.proceeds > 150
    assert max((error for _, error in flown.wrong), default=0.0) <= AUTOPILOT_POSE_JUMP_M + 0.05
    assert all(flown.back_after_glitch)


@settings(max_examples=40, deadline=None)
@example(after_ms=90.0, dv=-3.75, dp=-0.375)
@given(
    after_ms=st.floats(float(POSE_PERIOD_MS), 150.0),
    dv=st.floats(-5.0, 5.0),
    dp=st.floats(-0.5, 0.5),
)
def test_after_a_silence_a_glitch_moves_a_target_by_what_the_acceleration_allows_too(
    after_ms, dv, dp
):
    """After a silence the vehicle could have accelerated (``max_accel_m_s2``, 30): a
    position lie with a velocity lie to match passes by that much more, as the rule the
    docs state allows (``silence_lie_m``, worked out here from docs/world-safety.md), plus
    a little for the stamps and the interpolation (hypothesis found 0.394 m: a 0.375 m lie
    with 3.75 m/s, 90 ms after the last pose, where the rule allows 0.385 m)."""
    flown = fly_with(Glitch(after_ms, dv, dp), autopilot_allowance())
    assert flown.proceeds > 150
    worst = max((error for _, error in flown.wrong), default=0.0)
    assert worst <= silence_lie_m(after_ms * 1e-3) + 0.05
    assert all(flown.back_after_glitch)


def silence_lie_m(span_s: float, flight_m_s: float = 2.0) -> float:
    """The largest position lie the documented jump rule lets through ``span_s`` after the
    last pose, at an autopilot's allowance: a velocity lie of 1 m/s plus 30 m/s² over the
    span (and two 1 ms stamps) shifts the trapezoid by half of it times the span; the step
    may then differ from the trapezoid by the allowance, the stamps at the speed claimed, half
    the velocity noise over the span and a quarter of 30 m/s² times the span squared."""
    stamps_s = 0.002
    velocity_lie = 1.0 + 30.0 * (span_s + stamps_s)
    return (
        velocity_lie * span_s / 2
        + AUTOPILOT_POSE_JUMP_M
        + (flight_m_s + velocity_lie) * stamps_s
        + 0.5 * 1.0 * span_s
        + 0.25 * 30.0 * span_s * span_s
    )


def fly_with(glitch: Glitch, pose_jump_m: float):
    """``fly`` with the world at ``pose_jump_m`` and every PROCEED's error listed."""
    return fly(glitch, cycles=2, tolerance_m=0.0, pose_jump_m=pose_jump_m)
