"""Sim clock -> host clock: lower envelope, never fresher than the skew bound, epochs."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion import SimClockEstimator, SimClockStatus

MS = 1_000_000
OFFSET = 5_000 * MS  # host clock minus sim clock


def feed(clock, delays_ms, *, period_ms=10, start_ms=0, skew_ppm=0.0, offset=OFFSET):
    out = []
    for k, delay in enumerate(delays_ms):
        sim = (start_ms + k * period_ms) * MS
        true_host = offset + sim * (1 + skew_ppm * 1e-6)
        out.append((sim, true_host, clock.observe(sim, round(true_host + delay * MS))))
    return out


def test_the_mapping_follows_the_lowest_delay():
    rng = random.Random(3)
    clock = SimClockEstimator()
    delays = [2.0 + rng.random() * 8.0 for _ in range(300)]
    delays[50] = 2.0
    samples = feed(clock, delays)
    for i, (_, true_host, s) in enumerate(samples[60:], start=60):
        # Never below the true time plus the minimum delay (2 ms), never above the lowest
        # recent delay plus what the skew bound let it rise in that second.
        recent = min(delays[max(0, i - 100) : i + 1])
        assert 2.0 * MS <= s.host_ns - true_host <= (recent + 0.2) * MS
        assert s.status is SimClockStatus.LOCKED and s.epoch == 0


def test_a_late_packet_never_makes_later_data_look_fresher():
    clock = SimClockEstimator(max_skew_ppm=200.0)
    feed(clock, [1.0] * 10)
    late = clock.observe(100 * MS, OFFSET + 100 * MS + 15 * MS)  # 15 ms late
    assert late.host_ns - (OFFSET + 100 * MS) <= 1 * MS + 200e-6 * 10 * MS + 1
    assert late.reason is None


@given(
    st.lists(st.floats(0.0, 50.0), min_size=2, max_size=200),
    st.floats(-150.0, 150.0),
)
def test_offset_never_rises_faster_than_the_skew_bound_within_an_epoch(delays, skew_ppm):
    clock = SimClockEstimator(max_skew_ppm=200.0, jump_threshold_ms=1e6)
    previous = None
    for sim, _, s in feed(clock, delays, skew_ppm=skew_ppm):
        offset = s.host_ns - sim
        if previous is not None and s.epoch == previous[2]:
            assert offset - previous[1] <= 200e-6 * (sim - previous[0]) + 1
        previous = (sim, offset, s.epoch)


def test_skew_within_the_bound_is_tracked():
    clock = SimClockEstimator(max_skew_ppm=200.0)
    samples = feed(clock, [1.0] * 6000, skew_ppm=100.0)  # 60 s, +6 ms of drift
    _, true_host, last = samples[-1]
    assert last.epoch == 0 and abs(last.host_ns - true_host - 1 * MS) < 0.1 * MS


def test_a_late_stream_holds_until_the_simulation_restarts_and_never_looks_fresher():
    """Found by an attack through gizmo-host run: state datagrams turning 300 ms late were
    re-anchored as a new epoch after 100 ms, and the world then showed 300 ms old poses as
    current. A latency rise (or a pause with no datagrams) keeps the mapping and holds."""
    clock = SimClockEstimator(jump_threshold_ms=20.0, jump_confirm_ms=100.0, jump_hold_ms=500.0)
    feed(clock, [1.0] * 100)  # sim 0..990 ms
    after = feed(clock, [1.0] * 300, start_ms=1000, offset=OFFSET + 300 * MS)
    reasons = [(i, s.reason) for i, (_, _, s) in enumerate(after) if s.reason]
    assert len(reasons) == 1 and 9 <= reasons[0][0] <= 12
    assert "late +300" in reasons[0][1]
    jump = reasons[0][0]
    assert all(s.status is SimClockStatus.JUMPED for _, _, s in after[jump:])  # 2.9 s on
    assert {s.epoch for _, _, s in after} == {0}
    # Never fresher: every mapped time is at or before its true (delayed) time.
    assert all(s.host_ns <= t for _, t, s in after)
    assert clock.stats().jumps == 1
    # An odometry discontinuity is a pose epoch, not a new clock: still held.
    still = clock.observe(4_000 * MS, OFFSET + 300 * MS + 4_001 * MS, discontinuity=True)
    assert still.status is SimClockStatus.JUMPED
    # The simulation restarts: a new epoch, held for jump_hold_ms, then locked.
    restart_host = OFFSET + 10_000 * MS
    restarted = feed(clock, [1.0] * 100, start_ms=0, offset=restart_host)
    assert restarted[0][2].reason.startswith("sim clock reset")
    assert restarted[-1][2].status is SimClockStatus.LOCKED


def test_a_pause_with_sim_time_standing_still_resumes_in_a_new_epoch():
    """CopterSim paused but sending: the sim time repeats while datagrams keep coming. Those
    were fresh, so the resumed stream is re-anchored (JUMPED for jump_hold_ms only)."""
    clock = SimClockEstimator(jump_threshold_ms=20.0, jump_confirm_ms=100.0, jump_hold_ms=500.0)
    feed(clock, [1.0] * 100)  # sim 0..990 ms
    for k in range(1, 21):  # 200 ms of host time at sim 990 ms
        clock.observe(990 * MS, OFFSET + (991 + 10 * k) * MS)
    after = feed(clock, [1.0] * 100, start_ms=1000, offset=OFFSET + 200 * MS)
    jump = next(i for i, (_, _, s) in enumerate(after) if s.reason)
    assert 9 <= jump <= 12 and "resumed after a pause" in after[jump][2].reason
    assert after[jump][2].epoch == 1
    assert all(s.host_ns < t for _, t, s in after[:jump])  # looked older, never fresher
    _, true_host, s = after[jump + 1]
    assert s.status is SimClockStatus.JUMPED and abs(s.host_ns - true_host - 1 * MS) < 1000
    assert after[jump + 60][2].status is SimClockStatus.LOCKED  # 600 ms later


def test_a_single_late_burst_shorter_than_the_confirmation_is_not_a_jump():
    clock = SimClockEstimator(jump_threshold_ms=20.0, jump_confirm_ms=100.0)
    samples = feed(clock, [1.0] * 50 + [40.0] * 5 + [1.0] * 50)
    assert {s.epoch for _, _, s in samples} == {0}


def test_sim_time_falling_back_is_a_reset_and_a_new_epoch():
    clock = SimClockEstimator()
    feed(clock, [1.0] * 50)
    restarted = clock.observe(0, OFFSET + 10_000 * MS)
    assert restarted.epoch == 1 and restarted.status is SimClockStatus.JUMPED
    assert restarted.reason.startswith("sim clock reset")
    assert restarted.host_ns == OFFSET + 10_000 * MS
    assert clock.stats().resets == 1


def test_a_reordered_datagram_is_mapped_but_neither_a_reset_nor_learned():
    clock = SimClockEstimator()
    feed(clock, [1.0] * 50)  # sim 0..490 ms
    late = clock.observe(470 * MS, OFFSET + 500 * MS)  # 30 ms late, behind two newer ones
    assert (late.epoch, late.status, late.reason) == (0, SimClockStatus.LOCKED, None)
    assert late.host_ns == OFFSET + 471 * MS
    after = clock.observe(500 * MS, OFFSET + 501 * MS)
    assert after.epoch == 0 and after.host_ns == OFFSET + 501 * MS
    assert clock.stats().reordered == 1 and clock.stats().resets == 0


def test_a_restart_that_falls_back_a_little_is_confirmed_by_consecutive_samples():
    clock = SimClockEstimator(restart_samples=3)
    feed(clock, [1.0] * 10)  # sim 0..90 ms
    restarted = feed(clock, [1.0] * 3, start_ms=0, offset=OFFSET + 100 * MS)
    assert [s.epoch for _, _, s in restarted] == [0, 0, 1]
    assert restarted[2][2].reason.startswith("sim clock reset")
    assert restarted[2][2].host_ns == restarted[2][1] + 1 * MS


def test_discontinuity_starts_an_epoch_and_keeps_the_mapping():
    clock = SimClockEstimator()
    feed(clock, [1.0] * 10)
    s = clock.observe(100 * MS, OFFSET + 101 * MS, discontinuity=True)
    assert (s.epoch, s.status, s.reason) == (1, SimClockStatus.LOCKED, "discontinuity")
    assert s.host_ns == OFFSET + 101 * MS
    assert clock.to_host_ns(200 * MS) == OFFSET + 201 * MS


def test_no_mapping_before_the_first_sample_and_bad_settings_raise():
    assert SimClockEstimator().to_host_ns(0) is None
    with pytest.raises(ValueError, match="max_skew_ppm"):
        SimClockEstimator(max_skew_ppm=-1)
    with pytest.raises(ValueError, match="jump_threshold_ms"):
        SimClockEstimator(jump_threshold_ms=0)
