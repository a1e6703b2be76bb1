"""A world model that failed on an input: what it held is dropped, its verdicts HOLD with
``model_fault``, and the reason ends once it takes a board result again.

``WorldService.apply`` calls ``fault`` when ``apply`` raises (tests/gizmo_host/bridge); here
the model is faulted directly, after a PROCEED, and fed on.
"""

from __future__ import annotations

from collections.abc import Iterator

from fusion import LinkStatus, PoseSample, WorldModel, WorldSnapshot
from gizmo_core import Decision, HoldReason, LinkState
from tests.support.fusion_inputs import MS, not_detected, observation, up, world
from tests.support.tracking_sim import SCENARIOS, Board, make_events, model


def test_a_fault_drops_the_measurements_and_holds_until_a_board_result_is_taken_again():
    w = world()
    w.apply(up(0))
    w.apply(observation(900 * MS))
    assert w.snapshot(950 * MS).verdict is Decision.PROCEED  # what the fault must end
    w.fault(950 * MS)
    held = w.snapshot(960 * MS)
    assert held.verdict is Decision.HOLD and held.targets == ()
    assert {HoldReason.MODEL_FAULT, HoldReason.NO_DATA} <= set(held.reasons)
    key, until_ns, _ = w.verdict(960 * MS)  # the publisher's check says the same
    assert key[0] is Decision.HOLD and HoldReason.MODEL_FAULT in key[1] and until_ns is None
    assert w.snapshot(5_000 * MS).verdict is Decision.HOLD  # no time ends it: data does
    w.apply(observation(5_000 * MS))
    again = w.snapshot(5_010 * MS)
    assert again.verdict is Decision.PROCEED and HoldReason.MODEL_FAULT not in again.reasons


def _tracked_flight() -> Iterator[tuple[WorldModel, int, WorldSnapshot]]:
    """A simulated tracked flight (the target straight at 3 m/s, 6 s): the model, and its time
    and snapshot after each board frame (the caller may fault it in between)."""
    w = model(tracking=True)
    board = Board()
    events = make_events([SCENARIOS[2].path], SCENARIOS[2], 6.0, seed=3)
    w.apply(LinkStatus(events[0].arrival_ns - 10 * MS, LinkState.UP))
    for event in events:
        item = event.item
        if isinstance(item, PoseSample):
            w.apply(item)
            continue
        w.apply(board.observation(event.arrival_ns, item))
        yield w, event.arrival_ns, w.snapshot(event.arrival_ns)


def test_a_fault_drops_the_tracks_keeps_their_counters_and_a_new_track_confirms_in_time():
    """Tracked: after the fault the target is a new track, tentative until it confirms again
    (three of five frames at 30/s), never the old track's PROCEED carried over."""
    start_ns = fault_ns = None
    first_after: list[tuple[int, Decision, tuple[HoldReason, ...]]] = []
    for w, t_ns, snapshot in _tracked_flight():
        start_ns = t_ns if start_ns is None else start_ns
        if fault_ns is None:
            if snapshot.verdict is Decision.PROCEED and t_ns > start_ns + 2_000 * MS:
                started = w.stats()["tracks_started"]
                assert started >= 1
                fault_ns = t_ns
                w.fault(fault_ns)
                after = w.snapshot(fault_ns)
                assert after.verdict is Decision.HOLD and after.targets == ()
                assert HoldReason.MODEL_FAULT in after.reasons
                assert w.stats()["tracks_started"] == started  # the counters go on
        else:
            first_after.append((t_ns, snapshot.verdict, snapshot.reasons))
    assert fault_ns is not None, "the scenario never reached a PROCEED to fault"
    verdicts = [v for _, v, _ in first_after]
    assert Decision.PROCEED in verdicts  # the HOLD ends
    back = verdicts.index(Decision.PROCEED)
    assert back >= 2  # a new track: tentative for its first frames
    assert all(HoldReason.MODEL_FAULT not in r for _, _, r in first_after[1:])
    assert first_after[back][0] - fault_ns < 500 * MS


def test_a_not_detected_frame_ends_the_fault_reason_and_the_hold_says_lost():
    """A board that sees nothing after the fault: the model took its frames, so the HOLD's
    reason is the board's, not ``model_fault`` for as long as nothing is seen."""
    w = world()
    w.apply(up(0))
    w.apply(observation(900 * MS))
    w.fault(950 * MS)
    assert HoldReason.MODEL_FAULT in w.snapshot(960 * MS).reasons
    w.apply(not_detected(1_000 * MS))
    after = w.snapshot(1_010 * MS)
    assert after.verdict is Decision.HOLD and HoldReason.MODEL_FAULT not in after.reasons


def test_a_track_started_after_a_fault_never_takes_a_number_issued_before_it():
    """The target is a new track after a fault: a consumer keying its own state on
    ``track_id`` (zenoh's ``<key>/<track_id>``, MAVLink's ``target_num``) must not take it for
    the old one (review 7)."""
    before: set[int] = set()
    after: set[int] = set()
    faulted = False
    for w, t_ns, snapshot in _tracked_flight():
        (after if faulted else before).update(
            t.track_id for t in snapshot.targets if t.track_id is not None
        )
        if not faulted and snapshot.verdict is Decision.PROCEED:
            w.fault(t_ns)
            faulted = True
    assert faulted and before and after
    assert min(after) > max(before)
