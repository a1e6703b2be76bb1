"""Many targets at once (red team rt45): a full queue of captures waiting for the gimbal drops
the oldest, never places it early; with more keys in view than tracks, the first ones confirm
and the others say why not. Truth from tests/support/gimbal_scenes.py's own geometry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gizmo_core import Selector
from tests.support.gimbal_scenes import (
    T0,
    Scene,
    Target,
    proceed_errors,
    run,
    scene_model,
    snapshots,
)


def grid(count: int) -> list[Target]:
    """``count`` objects on the ground 14-35 m ahead, each a key of its own."""
    spots = [np.array([14.0 + (k % 8) * 3.0, -8.0 + (k // 8) * 1.5, 0.0]) for k in range(count)]
    return [Target(100 + k, lambda t, p=p: p, box_radius_m=0.3) for k, p in enumerate(spots)]


def _in_window(lines, start_s: float, end_s: float):
    return [line for now, line in lines if start_s < (now - T0) / 1e9 < end_s]


def test_a_capture_dropped_from_a_full_queue_is_never_placed_early():
    """rt45: a still gimbal heard at 10 Hz turns at 55°/s from 1 ms after its 2.0 s status.
    Captures past that status wait for the next; with 40 boxes a frame the queue overflowed
    and its oldest was placed at once, by the 2.0 s status alone: PROCEEDs 2.7 m off."""
    turn_s = 2.001

    def attitude(t: float) -> tuple[float, float, float]:
        return (0.0, -45.0 + 55.0 * min(max(t - turn_s, 0.0), 0.2), 0.0)

    scene = Scene(
        grid(40), duration_s=2.6, gimbal_rpy=attitude, laser=False, tracking=False,
        snapshot_hz=500, world={"max_targets": 128, "max_pending": 32},
    )  # fmt: skip
    model, lines = run(scene)
    assert model.stats()["pending_overflow"] > 0
    late = [line for line in _in_window(lines, 1.95, 2.6) if line.verdict.value == "PROCEED"]
    assert len(late) > 1000
    errors = proceed_errors(scene, [(0, line) for line in late])
    assert max(e for e, _ in errors) < 0.3, max(errors)


def test_many_boxes_on_a_panning_gimbal_proceed_with_the_default_queue():
    """rt45: 64 boxes a frame on a slowly panning gimbal (10°/s peak, statuses at 10 Hz)
    PROCEEDed 12 % of the time with a queue of 64, every line good data."""
    scene = Scene(
        grid(64), duration_s=3.0, laser=False,
        gimbal_rpy=lambda t: (0.0, -45.0 + 10.0 * math.sin(t), 0.0),
        world={"max_targets": 128},
    )  # fmt: skip
    model, lines = run(scene)
    window = _in_window(lines, 1.0, 2.8)
    assert len(window) > 64 * 80
    assert all(line.verdict.value == "PROCEED" for line in window), {
        reason.value for line in window for reason in line.reasons
    }
    assert max(e for e, _ in proceed_errors(scene, lines)) < 0.3
    assert model.stats()["pending_overflow"] == 0


def test_more_keys_than_tracks_the_first_ones_confirm_and_the_others_say_tentative():
    """rt45: 96 keys in view with 64 tracks: evicting the least recently hit evicted every
    track before its next hit, and all 96 HOLD ``tentative`` for good."""
    scene = Scene(grid(96), duration_s=2.0, laser=False, world={"max_targets": 128})
    model, lines = run(scene)
    window = _in_window(lines, 1.0, 1.8)
    proceeding = {line.id for line in window if line.verdict.value == "PROCEED"}
    assert len(proceeding) == 64, len(proceeding)  # tracking.max_tracks
    others = [line for line in window if line.id not in proceeding]
    assert others and all([r.value for r in line.reasons] == ["tentative"] for line in others)
    assert model.stats()["tracks_evicted"] > 0
    assert max(e for e, _ in proceed_errors(scene, lines)) < 0.3


@pytest.mark.parametrize(
    ("tracking", "first", "clutter"),
    [(True, False, 64), (False, True, 64), (True, True, 90)],
    ids=["the tracker", "the table", "both"],
)
def test_clutter_of_more_keys_than_the_model_holds_never_keeps_the_selected_target_out(
    tracking, first, clutter
):
    """A car park or a crowd: ``clutter`` objects of other keys stay in view, and the verdict
    selects id 7, which comes into view at 1 s (``first`` in each image, or last). Before, the
    table evicted its key when the clutter's came after it (``no_data``) and, tracked, the
    confirmed clutter outlasted its tentative track (``tentative``): a HOLD for as long as the
    clutter stayed. Now it PROCEEDs as it would alone, where it is (truth: its own spot)."""
    spot = np.array([31.5, 1.75, 0.0])  # between the grid's rows and columns
    selected = Target(7, lambda t: spot, appear_s=1.0)
    targets = [selected, *grid(clutter)] if first else [*grid(clutter), selected]
    scene = Scene(targets, duration_s=2.2, laser=False, tracking=tracking, selector=Selector(id=7))
    model = scene_model(scene)
    verdicts = []
    for now, snapshot in snapshots(scene, model):
        if 1.0 < (now - T0) / 1e9 <= scene.duration_s:  # the scene's captures end there
            chosen = [t for t in snapshot.targets if t.key == snapshot.selected]
            verdicts.append((now, snapshot.verdict.value, chosen))
    stats = model.stats()
    assert stats["targets_evicted"] > 0  # the clutter overflowed the table
    if tracking:
        assert stats["tracks_evicted"] > 0
    proceeding = [(now, chosen) for now, verdict, chosen in verdicts if verdict == "PROCEED"]
    assert proceeding, {verdict for _, verdict, _ in verdicts}
    assert (proceeding[0][0] - T0) / 1e9 < 1.3
    late = [verdict for now, verdict, _ in verdicts if (now - T0) / 1e9 > 1.3]
    assert late and set(late) == {"PROCEED"}
    for _, chosen in proceeding:
        assert [t.id for t in chosen] == [7]
        assert np.linalg.norm(np.array(chosen[0].position_ned_m) - spot) < 0.3
