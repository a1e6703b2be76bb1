"""The covariance is honest: over many seeded runs, straight and turning, the share of lines
whose position NEES is within χ²₂ at 0.95 (the horizontal block: the ground plane fixes d)
lies in 85-99.8 %, and the accuracy goals hold. The truth is the simulation's closed-form path
and ``hil_geometry``'s projection (tests.support.tracking_sim), never fusion's camera model."""

from __future__ import annotations

import pytest

import tests.support.tracking_sim as sim
from fusion import WorldConfig, WorldModel
from fusion.tracking import TrackingConfig
from tests.support.tracking_sim import (
    SCENARIOS,
    SPEEDING,
    Run,
    Tally,
    percentile,
)

BY_NAME = {s.name: s for s in SCENARIOS}
SPEEDING_BY_NAME = {s.name: s for s in SPEEDING}
SEEDS = range(100, 104)
SECONDS = 21.0  # a run of the bench's length: the share of a shorter one varies more


def _tally(name: str) -> tuple[Tally, list[float]]:
    """The runs' tallies merged, and each run's NEES share."""
    merged = Tally()
    shares: list[float] = []
    for seed in SEEDS:
        run = Run(BY_NAME[name], SECONDS, seed, keep_lines=False)
        run.run()
        tally = run.tallies["tracked"]
        shares.append(tally.nees_ok / tally.nees_n)
        merged.nees_ok += tally.nees_ok
        merged.nees_n += tally.nees_n
        merged.lines += tally.lines
        merged.proceed += tally.proceed
        merged.position += tally.position
        merged.velocity += tally.velocity
        merged.far_proceed += tally.far_proceed
        assert len(tally.track_ids) == 1, (seed, tally.track_ids)
    return merged, shares


@pytest.mark.parametrize(
    ("name", "position_p95_m", "velocity_p95_m_s"),
    [
        ("straight 3 m/s", 0.05, 0.10),
        ("straight 8 m/s", 0.10, 0.20),
        ("turn 0.3 g at 5 m/s", 0.20, 0.50),
    ],
)
def test_nees_and_accuracy_over_seeded_runs(
    name: str, position_p95_m: float, velocity_p95_m_s: float
) -> None:
    tally, shares = _tally(name)
    assert tally.nees_n > 0.8 * tally.lines > 1000
    assert all(0.85 <= share <= 0.998 for share in shares), shares  # every run, not the mean
    assert percentile(tally.position, 95) <= position_p95_m
    assert percentile(tally.velocity, 95) <= velocity_p95_m_s
    assert tally.far_proceed == 0


def _share_claiming(box_sigma_px: float) -> float:
    """The NEES share of one straight run whose filter claims ``box_sigma_px`` of box noise
    (there is 1.5)."""
    run = Run(BY_NAME["straight 3 m/s"], SECONDS, 100, keep_lines=False)
    config = WorldConfig(pose_required=True, ttl_ms=sim.TTL_MS)
    tracking = TrackingConfig(box_sigma_px=box_sigma_px)
    run.models["tracked"] = WorldModel(sim.CAMERA_CONFIG, config, tracking=tracking)
    run.run()
    tally = run.tallies["tracked"]
    assert tally.nees_n > 0
    return tally.nees_ok / tally.nees_n


def test_an_overconfident_filter_fails_the_nees_share() -> None:
    """The check can fail: claiming 0.5 px of box noise where there is 1.5 makes the
    covariance too small, and the share drops below 85 %."""
    assert _share_claiming(0.5) < 0.85


def test_an_overcautious_filter_fails_the_nees_share() -> None:
    """The upper bound can fail too: claiming 3 px of box noise where there is 1.5 makes the
    covariance too large, and (nearly) every line is within the bound."""
    assert _share_claiming(3.0) > 0.998


@pytest.mark.parametrize("name", ["speed 2 up 4 down m/s² to 8", "speed 1 up 1 down m/s² to 5"])
def test_nees_when_the_target_speeds_up_and_brakes(name: str) -> None:
    """Neither constant velocity nor a turn: the turn mode's change of speed
    (``ct_speed_accel_m_s2``, 1 m/s² by default) covers it. Without it (the default before,
    0): 43-72 % of lines within, velocity NEES 18-81, and up to four track ids a run."""
    for seed in SEEDS[:2]:
        run = Run(SPEEDING_BY_NAME[name], SECONDS, seed, keep_lines=False)
        run.run()
        tally = run.tallies["tracked"]
        assert tally.nees_n > 0.8 * tally.lines > 500
        assert 0.85 <= tally.nees_ok / tally.nees_n <= 0.998, tally.nees_ok / tally.nees_n
        velocity = tally.velocity_nees
        assert sum(x <= 5.991 for x in velocity) / len(velocity) >= 0.85
        assert len(tally.track_ids) == 1 and tally.far_proceed == 0, tally.track_ids


def test_the_onset_of_a_turn_stays_in_its_track() -> None:
    """The bench's seed 7 of the 0.3 g turn: the first frames of the turn back (14 s, the
    turn mode still at 1 % and its turn rate of the other sign) are the target's, and stay
    within the gate (0.999: 13.8). With the 0.99 gate (9.21) two of them fell outside it and
    started a track of their own; with the change of speed (1 m/s²) it was confirmed 32.6
    (χ²₃) from the coasting one, beyond the succession's 30.7: a second track id. Without the
    change of speed it took the number, at 28.2."""
    run = Run(BY_NAME["turn 0.3 g at 5 m/s"], SECONDS, 7, keep_lines=False)
    run.run()
    stats = run.models["tracked"].stats()
    assert run.tallies["tracked"].listed_ids == {1}
    assert stats["tracks_continued"] == 0 and stats["gated_out"] <= 2, stats
