"""End to end (issue 14 item 7): stand-in -> UDP -> emulator -> pty -> ``gizmo-host run`` ->
fusion -> ``world`` lines, judged against the stand-in's ground truth and the emulator's counts.

Two chains run at once (:func:`tests.hil.chain.run_chains`), each with a fault timeline whose
faults are far enough apart to be judged one by one:

- ``frames``: the TypeID 30 box path, issue 12's accuracy case (orbit at 10 m with 90°/s yaw
  swings, 30 Hz vision, 15-40 ms latency, 100 ppm device skew, 100 Hz pose), a sequence that
  starts near 65535, then garbage, bit errors, dropped bytes, truncated and duplicated frames,
  a sequence jump and wrap, a skew change and a device clock step forward;
- ``link``: the pose path (``gizmo-host emulate --ego --targets --port-offset`` beside ``gizmo-host
  run``, the stand-in mirroring the states), with silence, a hang-up behind the same symlink, a
  device clock step back and a device reset.

Times are emulation seconds. Deadlines are the design's, judged on the host's own timestamps:
after a fault that must cause HOLD, no PROCEED is published later than one vision period plus
the TTL after its onset (``HOLD_AFTER_S``), until the fault has cleared.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest

from gizmo_host.rigs.board.faults import Fault
from gizmo_host.rigs.board.faults import FaultKind as K
from rfly_link import ports
from tests.hil.budgets import (
    BEARING_BUDGET_DEG,
    BOARD,
    HOLD_AFTER_S,
    HOST_TOML,
    PERIOD_S,
    POSITION_BUDGET_M,
    RECOVER_S,
    RELOCK_S,
    RESET_HOLD_S,
    TTL_S,
)
from tests.hil.chain import Chain, Plan, host_counters, run_chains, selected
from tests.hil.judge import (
    accuracy,
    emulator_delta,
    fault_end_s,
    first_world,
    holding,
    host_delta,
    links_between,
    measurements,
    percentile,
    proceeding,
    truth_errors,
    verdicts_between,
)
from tests.hil.scene import swinging_orbit
from tests.support.schemas import validate_message

# dev.py runs the HIL tests after the others, two at a time; with ``pytest -n N --dist
# loadgroup`` one worker runs this group (each module's chains are one fixture: two workers
# would run it twice).
pytestmark = [
    pytest.mark.hil,
    pytest.mark.subprocess,
    pytest.mark.realtime,
    pytest.mark.xdist_group("hil"),
]

GAP_S = 0.15  # half the quiet time between two faults: where the counts are compared
# A check of every PROCEED first checks there were some: a second of them in a run (30 world
# lines a second), and most of the lines around a frame fault, which passes valid frames.
MIN_PROCEEDS = 30
MIN_WINDOW_LINES = 8

FRAME_FAULTS = {
    "garbage": Fault(K.GARBAGE, 1.2, 0.3, bytes=40, probability=0.5),
    "bit_errors": Fault(K.BIT_ERRORS, 1.8, 0.3, ber=2e-3),
    "drop_bytes": Fault(K.DROP_BYTES, 2.4, 0.3, bytes=3, probability=0.4),
    "truncate": Fault(K.TRUNCATE, 3.0, 0.3, probability=0.4),
    "duplicate": Fault(K.DUPLICATE, 3.6, 0.3, probability=0.5),
}
WRAP = Fault(K.WRAP, 4.2, sequence=65530)
SKEW = Fault(K.CLOCK_SKEW, 4.4, ppm=-100.0)
STEP_FORWARD = Fault(K.CLOCK_JUMP, 4.8, delta_ms=300)
FRAMES = Plan(
    "frames",
    swinging_orbit,
    6.3,
    faults=(*FRAME_FAULTS.values(), WRAP, SKEW, STEP_FORWARD),
    seed=14,
    emulate_flags=(*BOARD, "--start-sequence", "65470"),  # wraps at 2.2 s
    host_toml=HOST_TOML,
    boundaries_s=(
        *(f.at_s - GAP_S for f in FRAME_FAULTS.values()),
        *(fault_end_s(f) + GAP_S for f in FRAME_FAULTS.values()),
        WRAP.at_s + 0.1,
    ),
)

SILENCE = Fault(K.SILENCE, 1.3, 0.5)
HANGUP = Fault(K.HANGUP, 2.2, 0.3)
STEP_BACK = Fault(K.CLOCK_JUMP, 4.2, delta_ms=-150)
RESET = Fault(K.RESET, 6.4, down_s=0.2)
LINK = Plan(
    "link",
    swinging_orbit,
    8.0,
    faults=(SILENCE, HANGUP, STEP_BACK, RESET),
    seed=15,
    emulate_flags=BOARD,
    emulate_toml="[emulate.poses]\nhalf_extent_m = [0.25, 0.25, 0.01]\n",
    host_toml=HOST_TOML,
    boundaries_s=(1.2, 2.1, 4.1, 6.3),
    poses=True,
)
CLEAN = {  # no fault acting, nor the clock re-locking after one
    "frames": [
        (1.0, 1.2),
        *((fault_end_s(a) + 0.05, b.at_s) for a, b in pairwise([*FRAME_FAULTS.values(), WRAP])),
    ],
    "link": [(1.0, SILENCE.at_s), (1.9, HANGUP.at_s), (3.9, STEP_BACK.at_s), (7.7, 8.0)],
}


@pytest.fixture(scope="module")
def chains(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Chain]:
    return asyncio.run(run_chains([FRAMES, LINK], tmp_path_factory.mktemp("hil")))


@pytest.fixture(params=["frames", "link"])
def chain(request: pytest.FixtureRequest, chains: dict[str, Chain]) -> Chain:
    return chains[request.param]


def test_the_host_runs_clean_and_every_line_has_its_schema(chain: Chain) -> None:
    assert chain.returncode == 0, chain.stderr
    assert "Traceback" not in chain.stderr
    for line in chain.lines:
        validate_message(line)
    world = chain.world
    assert [w["seq"] for w in world] == list(range(1, len(world) + 1))
    assert chain.emulator["cycles_skipped"] == 0
    assert chain.emulator["port"]["bytes_refused"] == 0  # the pty took every byte


def test_no_valid_frame_is_lost_and_every_count_matches_the_emulators(chain: Chain) -> None:
    announced = chain.emulator["host"]
    assert host_counters(chain.of_type("stats")[-1]) == announced
    faults = chain.emulator["faults"]
    destroyed = sum(faults[k]["frames"] for k in ("bit_errors", "drop_bytes", "truncate"))
    # Lost frames are exactly those the faults destroyed or a hang-up left unsent.
    assert announced["lost"] == destroyed + faults["hangup"]["frames_unsent"]


def test_accuracy_without_faults_meets_the_fusion_targets(
    chain: Chain, record_property: Callable[[str, object], None]
) -> None:
    """Against the stand-in's truth (the line of sight to the target's centre and that centre,
    from its own camera): the bearing and position budgets, with the box-centre bias (a flat
    marker: small) reported beside them."""
    located = measurements(chain, CLEAN[chain.plan.name])
    assert len(located) >= 20
    errors = [truth_errors(chain, world) for world in located]
    bearings = [e[0] for e in errors if e is not None]
    positions = [e[1] for e in errors if e is not None and e[1] is not None]
    assert all(selected(w)["range_source"] == "ground_plane" for w in located)  # type: ignore[index]
    assert len(positions) == len(bearings) == len(located)
    figures = accuracy(chain, located)
    print(figures.text(chain.plan.name))
    record_property("accuracy", figures._asdict())
    assert figures.box_bias_p95_deg < 0.2  # the marker is 2 cm thick
    assert percentile(bearings, 95) <= BEARING_BUDGET_DEG, figures.text(chain.plan.name)
    assert percentile(positions, 95) <= POSITION_BUDGET_M, figures.text(chain.plan.name)


def test_every_proceed_is_fresh_and_located(chain: Chain) -> None:
    """Outside the clock step back (see the xfail below): never PROCEED on stale or misplaced
    data, whatever the fault."""
    known = (STEP_BACK.at_s, RESET.at_s) if chain.plan is LINK else (0.0, 0.0)
    proceeds = [
        world
        for world in chain.world
        if world["verdict"] == "PROCEED" and not known[0] <= chain.at_s(world["host_ns"]) < known[1]
    ]
    # Not vacuous: the chain PROCEEDs for seconds between its faults (30 world lines a second).
    assert len(proceeds) >= MIN_PROCEEDS, len(proceeds)
    for world in proceeds:
        target = selected(world)
        assert target is not None and target["tracked"]
        assert 0 <= world["host_ns"] - target["capture_ns"] <= TTL_S * 1e9
        errors = truth_errors(chain, world)
        assert errors is not None and errors[0] <= 1.0, (chain.at_s(world["host_ns"]), errors)


# -- frame faults: counted, never a HOLD but for frames they delay ------------------------


@pytest.mark.parametrize("name", sorted(FRAME_FAULTS))
def test_a_frame_fault_is_counted_by_the_host_as_injected(
    chains: dict[str, Chain], name: str
) -> None:
    chain = chains["frames"]
    fault = FRAME_FAULTS[name]
    before, after = fault.at_s - GAP_S, fault_end_s(fault) + GAP_S
    host = host_delta(chain, before, after)
    emulated = emulator_delta(chain, before, after)
    announced, injected = emulated["host"], emulated["faults"][name]
    assert {k: host[k] for k in announced if k != "frames_ok"} == {
        k: v for k, v in announced.items() if k != "frames_ok"
    }
    if name == "garbage":
        assert host["bytes_discarded"] == injected["bytes"] > 0 and host["lost"] == 0
    elif name == "duplicate":
        assert host["duplicates"] == injected["frames"] > 0 and host["lost"] == 0
    else:
        assert host["lost"] == injected["frames"] > 0
        assert 0 < host["parse_errors"] <= injected["frames"]
    # Valid frames pass: the target stays PROCEED, but a truncated frame holds the next one
    # back until more bytes come (a frame's length is all the parser knows), so it may go stale.
    allowed = {"stale"} if name == "truncate" else set()
    window = chain.world_between(fault.at_s, fault_end_s(fault) + GAP_S)
    proceeds = [world for world in window if world["verdict"] == "PROCEED"]
    assert len(window) >= MIN_WINDOW_LINES and len(proceeds) >= len(window) // 2, len(proceeds)
    for world in window:
        assert world["verdict"] == "PROCEED" or set(world["reasons"]) <= allowed, world["reasons"]


def test_a_sequence_near_65535_wraps_and_a_jump_counts_one_discontinuity(
    chains: dict[str, Chain],
) -> None:
    chain = chains["frames"]
    assert chain.emulator["faults"]["wrap"] == {"events": 1, "wraps": 2}
    host = host_delta(chain, WRAP.at_s - GAP_S, WRAP.at_s + 0.1)
    assert host["discontinuities"] == 1 and host["lost"] == host["resets"] == 0
    # From 65470 the sequence wraps at 2.2 s, among the frame faults: nothing more is counted.
    start = FRAME_FAULTS["garbage"].at_s - GAP_S
    natural = host_delta(chain, start, WRAP.at_s - GAP_S)
    emulated = emulator_delta(chain, start, WRAP.at_s - GAP_S)
    assert emulated["faults"]["wrap"]["wraps"] == 1
    assert natural["discontinuities"] == natural["resets"] == 0
    assert natural["lost"] == emulated["host"]["lost"]
    assert all(proceeding(w) for w in chain.world_between(WRAP.at_s, SKEW.at_s))


def test_a_skew_change_within_bounds_changes_no_clock_count(chains: dict[str, Chain]) -> None:
    chain = chains["frames"]
    host = host_delta(chain, SKEW.at_s - 0.1, STEP_FORWARD.at_s - 0.1)
    assert chain.emulator["faults"]["clock_skew"] == {"events": 1, "ppm": -100.0}
    assert host["clock_phase_errors"] == host["clock_jumps"] == host["clock_resets"] == 0
    assert all(proceeding(w) for w in chain.world_between(SKEW.at_s, STEP_FORWARD.at_s))


# -- faults that must HOLD -----------------------------------------------------------------


def assert_holds(chain: Chain, start_s: float, end_s: float, reason: str) -> None:
    """HOLD for ``reason`` published in the window, and no PROCEED in it."""
    window = chain.world_between(start_s, end_s)
    assert window and not any(proceeding(w) for w in window), [
        (chain.at_s(w["host_ns"]), w["reasons"]) for w in window if proceeding(w)
    ]
    assert any(reason in w["reasons"] for w in window), {tuple(w["reasons"]) for w in window}


def test_a_clock_step_forward_holds_until_a_run_of_frames_confirms_it(
    chains: dict[str, Chain],
) -> None:
    """Frames stamped ahead of their arrival are outliers (the world: clock_not_locked) until
    five over 100 ms confirm the step: an epoch at the new level, PROCEED again (issue 29)."""
    chain = chains["frames"]
    onset = STEP_FORWARD.at_s
    hold = first_world(chain, onset, holding("clock_not_locked"))
    assert hold is not None
    since = chain.at_s(hold["host_ns"])
    assert since <= onset + HOLD_AFTER_S
    assert_holds(chain, since, since + RELOCK_S - 0.05, "clock_not_locked")
    back = first_world(chain, since, proceeding)
    assert back is not None and chain.at_s(back["host_ns"]) <= since + RECOVER_S
    host = host_delta(chain, onset - 0.2, chain.plan.duration_s - 0.1)
    # One phase error for the step; on a loaded machine a re-fit may follow (delivery jitter).
    assert host["clock_phase_errors"] >= 1 and host["clock_steps"] >= 1
    assert host["clock_jumps"] == host["resets"] == 0


def test_silence_holds_stale_then_link_silent_and_clears_with_the_frames(
    chains: dict[str, Chain],
) -> None:
    chain = chains["link"]
    onset, end = SILENCE.at_s, fault_end_s(SILENCE)
    assert_holds(chain, onset + HOLD_AFTER_S, end, "stale")
    silent = first_world(chain, onset, holding("link_silent"), end + PERIOD_S)
    assert silent is not None  # silent_after_s after the last frame
    states = [link["state"] for link in links_between(chain, onset, HANGUP.at_s)]
    assert states == ["SILENT", "UP"]
    assert first_world(chain, end, proceeding, HANGUP.at_s) is not None
    host = host_delta(chain, 1.2, 2.1)
    assert host["lost"] == host["disconnects"] == host["resets"] == 0
    assert chain.emulator["faults"]["silence"] == {"events": 1, "seconds": 0.5}


def test_a_hangup_holds_link_down_and_the_host_reopens_the_same_link(
    chains: dict[str, Chain],
) -> None:
    chain = chains["link"]
    onset = HANGUP.at_s
    links = links_between(chain, onset, STEP_BACK.at_s)
    states = [link["state"] for link in links]
    # Down, tries while the link dangles, then the same path opens on the new pty.
    assert states[0] == "DOWN" and states[-3:] == ["CONNECTING", "SYNCING", "UP"], states
    assert {link["path"] for link in links} == {chain.link}
    up_s = chain.at_s(links[-1]["host_ns"])
    assert_holds(chain, onset + HOLD_AFTER_S, up_s, "link_down")
    # Nothing from before the hang-up counts, and the new epoch locks first (three frames).
    assert_holds(chain, up_s, up_s + RELOCK_S - 0.05, "clock_not_locked")
    back = first_world(chain, up_s, proceeding, STEP_BACK.at_s)
    assert back is not None and chain.at_s(back["host_ns"]) <= up_s + RECOVER_S
    host = host_delta(chain, 2.1, 4.1)
    unsent = emulator_delta(chain, 2.1, 4.1)["faults"]["hangup"]["frames_unsent"]
    assert host["disconnects"] == 1 and host["lost"] == unsent > 0
    assert chain.emulator["port"]["plugs"] == 2  # the symlink was re-pointed once


def test_a_clock_step_back_holds_clock_jump_until_a_run_of_frames_opens_an_epoch(
    chains: dict[str, Chain],
) -> None:
    """Issue 29: the step back no longer holds until the next reset. Three frames at the new
    level open an epoch there, and PROCEED comes back."""
    chain = chains["link"]
    onset = STEP_BACK.at_s
    jumped = [v for v in verdicts_between(chain, onset, RESET.at_s) if "clock_jump" in v["reasons"]]
    assert jumped, "the host never flagged the step back"
    since = chain.at_s(jumped[0]["host_ns"])
    # The world names the device clock's state clock_not_locked (fusion's reason).
    assert_holds(chain, since, since + RELOCK_S - 0.05, "clock_not_locked")
    back = first_world(chain, since, proceeding, RESET.at_s)
    assert back is not None and chain.at_s(back["host_ns"]) <= since + RECOVER_S
    host = host_delta(chain, 4.1, 6.3)
    assert host["clock_jumps"] == host["clock_steps"] == 1
    assert host["resets"] == host["clock_resets"] == 0


def test_a_clock_step_back_holds_within_a_vision_period_plus_the_ttl(
    chains: dict[str, Chain],
) -> None:
    chain = chains["link"]
    held = first_world(chain, STEP_BACK.at_s, lambda w: not proceeding(w))
    assert held is not None and chain.at_s(held["host_ns"]) <= STEP_BACK.at_s + HOLD_AFTER_S


def test_a_device_reset_holds_device_reset_then_relocks(chains: dict[str, Chain]) -> None:
    chain = chains["link"]
    onset, end = RESET.at_s, fault_end_s(RESET)
    reset = first_world(chain, onset, holding("device_reset"))
    assert reset is not None
    since = chain.at_s(reset["host_ns"])
    assert since <= end + PERIOD_S + HOLD_AFTER_S
    hold_end_s = since + max(RESET_HOLD_S, RELOCK_S) - 0.05
    assert_holds(chain, onset + HOLD_AFTER_S, hold_end_s, "clock_not_locked")
    back = first_world(chain, since, proceeding)
    assert back is not None and chain.at_s(back["host_ns"]) <= since + RESET_HOLD_S + RECOVER_S
    host = host_delta(chain, 6.3, chain.plan.duration_s - 0.1)
    assert host["resets"] == host["clock_resets"] == host["clock_epoch"] == 1
    assert host["lost"] == 0


def test_the_pose_source_listens_beside_gizmo_host_run(chains: dict[str, Chain]) -> None:
    chain = chains["link"]
    source: dict[str, Any] = chain.emulator["source"]
    assert source["kind"] == "poses" and source["states"] > 0
    ego = chain.target_id - 1
    wanted = {ports.coptersim_state_port(c) + chain.port_offset for c in (ego, ego + 1)}
    assert {r["port"] for r in source["receivers"]} == wanted
    assert all(r["datagrams"] > 0 for r in source["receivers"])
    sent = chain.stand_in.stand_in.sent
    assert sent["state_mirror"] == sent["state"] + sent["other_state"]
    stats = chain.of_type("stats")[-1]["world"]["rflysim"]
    assert stats["poses"] > 0  # gizmo-host run heard the same states on the ego's own port
