"""An attacker against the verdict check's reuse of its last verdict.

``WorldModel.verdict`` reuses the last check's verdict when nothing it read changed, and also
when the targets to judge are the very ones it judged (the board repeating one image, which
the tracker counts as a duplicate). A wrong reuse is a wrong PROCEED, so these tests drive a
model through what could make a reuse wrong (repeats that are not quite repeats, repeats
with other flags, frames that see nothing, link outages, device resets, pose gaps, jumps and
conflicts, TTL ends to the nanosecond, forgetting, track ends, waits, evictions, checks at
odd times) and after every move compare its verdict with the truth: the snapshot of a twin
model, fed the same inputs, whose every check is a full one (``snapshot`` never reuses).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import (
    LinkStatus,
    PoseLinkStatus,
    SourceConflict,
    VisionObservation,
    WorldConfig,
    WorldModel,
    verdict_check,
)
from fusion.inputs import MAX_CAPTURE_AFTER_RX_NS
from gizmo_core import LinkState
from gizmo_core.clock import ClockStatus
from tests.support.fusion_inputs import MS, not_detected, observation, pose
from tests.support.native import interpreted_only
from tests.support.tracking_sim import CAMERA_CONFIG, tracking_config

TTL_MS = 250
CONFIG = WorldConfig(
    pose_required=True,
    ttl_ms=TTL_MS,
    pose_ttl_ms=150.0,
    forget_after_ms=700.0,
    reset_hold_ms=100.0,
    jump_hold_ms=200.0,
    conflict_hold_ms=300.0,
    max_targets=3,  # evictions
    max_pending=2,  # overflows
)
BOXES = ((0, 0), (40, -30), (-300, 200))  # few: the same box comes back often
START = 1_000 * MS


class Rig:
    """Two models fed the same inputs: ``checked`` only ever answers ``verdict``; the
    truth, ``full``, answers ``snapshot`` (a full check each time, no memo)."""

    def __init__(self, tracking: bool) -> None:
        tracks = tracking_config(delete_after_ms=900.0) if tracking else None
        self.checked = WorldModel(CAMERA_CONFIG, CONFIG, tracking=tracks)
        self.full = WorldModel(CAMERA_CONFIG, CONFIG, tracking=tracks)
        self.now = START
        self.posed_ns = START - 10 * MS
        self.gap_until = 0  # a pose every 10 ms while time passes, but in a gap
        self.status_until = 0  # the poses' clock is ``status`` until then, then locked
        self.status = ClockStatus.LOCKED
        self.ups: list[tuple[int, Any]] = []  # a link's UP due after its outage, by time
        self.epoch = 0
        self.last: VisionObservation | None = None
        self.checks = self.proceeds = 0

    def give(self, item: Any) -> None:
        for model in (self.checked, self.full):
            model.apply(item)

    def check(self, t: int) -> None:
        verdict = self.checked.verdict(t)
        self.checked.judged()  # as the world service does after each check; a snapshot judges
        snapshot = self.full.snapshot(t)
        assert verdict.key == snapshot.verdict_key(), t
        assert verdict.proceed_until_ns == (
            snapshot.valid_until_ns if snapshot.proceed else None
        ), t
        assert verdict.next_deadline_ns == self.full.next_deadline_ns(), t
        self.checks += 1
        self.proceeds += snapshot.proceed

    def advance(self, dt_ns: int) -> None:
        """Time passes by ``dt_ns``, with the poses, if they come."""
        end = self.now + dt_ns
        while self.posed_ns + 10 * MS <= end:
            self.posed_ns += 10 * MS
            t = self.posed_ns
            while self.ups and self.ups[0][0] <= t:
                self.give(self.ups.pop(0)[1])
            if t >= self.gap_until:
                status = self.status if t < self.status_until else ClockStatus.LOCKED
                self.give(pose(t, clock_status=status))
        self.now = end

    def outage(self, down: Any, up: Any) -> None:
        """``down`` now, ``up`` 150 ms later."""
        self.give(down)
        self.ups.append((up.host_ns, up))
        self.ups.sort(key=lambda pair: pair[0])

    def see(self, ident: int, box: int, age_ms: int = 25, *, source: int = 1) -> None:
        obs = observation(
            self.now - age_ms * MS, rx_ns=self.now, source_id=source, result_type=5,
            ident=ident, center=BOXES[box], epoch=self.epoch,
        )  # fmt: skip
        self.last = obs
        self.give(obs)


def _repeat(rig: Rig, jitter_ms: float, variant: str) -> None:
    """The last measurement again, read now: its capture ``jitter_ms`` away (the tracker's
    repeat is within 2 ms), and the same or with one field changed."""
    if rig.last is None:
        return
    capture_ns = rig.last.host_capture_ns + round(jitter_ms * MS)
    if capture_ns - rig.now > MAX_CAPTURE_AFTER_RX_NS:
        return  # repeats of repeats: a capture after its reading is refused (not an input)
    changes: dict[str, Any] = {"host_capture_ns": capture_ns, "host_rx_ns": rig.now}
    changes.update(
        {
            "same": {},
            "confidence": {"confidence": 10},
            "label": {"label": "other"},
            "unlocked": {"clock_locked": False},
            "converging": {"clock_locked": False, "clock_converging": True},
            "epoch": {"epoch": rig.last.epoch + 1},
            "untracked": {"tracked": False},
            "lost": {"lost": True},
            "size": {"width": rig.last.width + 1},
            "source": {"source_id": 2},
            "ident": {"id": 2},
        }[variant]
    )
    obs = dataclasses.replace(rig.last, **changes)
    if variant not in ("untracked", "lost"):
        rig.last = obs
    rig.give(obs)


def _see(rig: Rig, ident: int, box: int, age_ms: int, source: int) -> None:
    rig.see(ident, box, age_ms, source=source)


def _nothing(rig: Rig, source: int) -> None:
    """A frame of ``source`` that saw nothing."""
    rig.give(not_detected(rig.now - 5 * MS, rx_ns=rig.now, source_id=source, epoch=rig.epoch))


def _link(rig: Rig, kind: str) -> None:
    """The board's link: UP with a device reset, or DOWN or SILENT for 150 ms."""
    if kind == "reset":
        rig.give(LinkStatus(rig.now, LinkState.UP, device_reset=True))
    else:
        up = LinkStatus(rig.now + 150 * MS, LinkState.UP)
        rig.outage(LinkStatus(rig.now, LinkState[kind]), up)


def _pose_trouble(rig: Rig, kind: str) -> None:
    """A trouble of the poses: a gap of 100-300 ms (past the pose TTL or not), a jump, a
    conflict, their link down for 150 ms, or their clock not locked for 50 ms."""
    if kind == "gap":
        rig.gap_until = rig.now + (rig.now // MS % 3 + 1) * 100 * MS
    elif kind == "jump":
        rig.posed_ns += 5 * MS
        rig.give(pose(rig.posed_ns, position=(40.0, 0.0, -10.0)))
    elif kind == "conflict":
        rig.give(SourceConflict(rig.now, "pose", "a second sender"))
    elif kind == "down":
        rig.outage(PoseLinkStatus(rig.now, up=False), PoseLinkStatus(rig.now + 150 * MS, up=True))
    else:
        rig.status, rig.status_until = ClockStatus[kind], rig.now + 50 * MS


def _new_epoch(rig: Rig) -> None:
    """The board's next frames come from a new clock epoch (it reset)."""
    rig.epoch += 1


def _wait(rig: Rig, ms: float) -> None:
    rig.advance(round(ms * MS))


def _to_ttl_end(rig: Rig, offset_ns: int) -> None:
    """To the nanosecond around the end of the last measurement's TTL."""
    if rig.last is not None:
        t = rig.last.host_capture_ns + TTL_MS * MS + offset_ns
        if t > rig.now:
            rig.advance(t - rig.now)


def _check_at(rig: Rig, dt_ns: int) -> None:
    """A check at another time than the inputs' (later, or earlier than the last)."""
    rig.check(rig.now + dt_ns)


Move = tuple[Callable[..., None], tuple[Any, ...]]
_TROUBLES = ("gap", "jump", "conflict", "down", "JUMPED", "CONVERGING", "OUTLIER")
_VARIANTS = ("same", "same", "same", "confidence", "label", "unlocked", "converging", "epoch",
             "untracked", "lost", "size", "source", "ident")  # fmt: skip


def _move(fn: Callable[..., None], *args: st.SearchStrategy[Any]) -> st.SearchStrategy[Move]:
    return st.tuples(st.just(fn), st.tuples(*args))


MOVES = st.one_of(
    _move(_see, st.sampled_from((1, 2, 3)), st.integers(0, 2), st.sampled_from((0, 5, 25, 25)),
          st.sampled_from((1, 1, 2))),
    _move(_repeat, st.sampled_from((0.0, 0.0, 0.5, -1.0, 2.0, -2.0, 2.000001, 3.0, -30.0)),
          st.sampled_from(_VARIANTS)),
    _move(_nothing, st.sampled_from((1, 2))),
    _move(_link, st.sampled_from(("DOWN", "SILENT", "reset"))),
    _move(_pose_trouble, st.sampled_from(_TROUBLES)),
    _move(_new_epoch),
    _move(_wait, st.sampled_from((0.001, 1, 2, 5, 20, 20, 33, 100, 160, 260, 450, 950))),
    _move(_to_ttl_end, st.sampled_from((-1, 0, 1, 2))),
    _move(_check_at, st.sampled_from((1, MS, -MS, TTL_MS * MS))),
)  # fmt: skip


def _warm_up(rig: Rig) -> None:
    """The link up, poses, and one target seen every 33 ms, each image reported three
    times: a confirmed track, PROCEEDing."""
    rig.give(LinkStatus(rig.now - 30 * MS, LinkState.UP))
    rig.advance(40 * MS)
    for _ in range(6):
        rig.see(1, 0)
        rig.check(rig.now)
        for _ in range(2):
            rig.advance(MS // 3)
            _repeat(rig, 0.0, "same")
            rig.check(rig.now)
        rig.advance(33 * MS)
        rig.check(rig.now)


def _run(rig: Rig, moves: Iterable[Move]) -> None:
    _warm_up(rig)
    for move, args in moves:
        move(rig, *args)
        rig.check(rig.now)
    assert rig.checked.stats() == rig.full.stats()


@pytest.mark.parametrize("tracking", [True, False], ids=["tracked", "per-frame"])
@settings(max_examples=150)
@given(moves=st.lists(MOVES, max_size=60))
def test_every_check_is_a_full_checks_verdict(tracking, moves):
    _run(Rig(tracking), moves)


def _drawn(rng: random.Random) -> Move:
    """One move: mostly a repeat of the image, or a new one, with time passing, as a
    saturated line gives; the rest any trouble."""
    r, pick = rng.random(), rng.choice
    if r < 0.45:
        variant = pick(("same",) * 20 + ("confidence", "unlocked", "epoch", "lost", "size"))
        return _repeat, (pick((0.0, 0.0, 0.0, 0.4, -1.0, 2.0, 2.5, -30.0)), variant)
    if r < 0.65:
        return _wait, (pick((0.4, 1, 3, 33)),)
    if r < 0.85:
        return _see, (pick((1,) * 6 + (2, 3)), pick((0,) * 6 + (1, 2)), pick((25, 25, 25, 5, 0)),
                      pick((1,) * 6 + (2,)))  # fmt: skip
    if r < 0.89:
        return _to_ttl_end, (pick((-1, 0, 1)),)
    if r < 0.91:
        return _wait, (pick((160, 260, 450, 950)),)
    if r < 0.94:
        return _link, (pick(("DOWN", "SILENT", "reset")),)
    if r < 0.98:
        return _pose_trouble, (pick(_TROUBLES),)
    return _nothing, (pick((1, 2)),)


@pytest.mark.parametrize("seed", range(4))
@interpreted_only(verdict_check, "patches WorldModel's methods to count the full checks")
def test_reuse_is_exercised_and_always_the_full_verdict(seed, monkeypatch):
    """Long runs: the reuse of a check whose targets are the last one's happens often (it is
    what is tested), both verdicts are seen, and every check is the full check's."""
    judged = listed = 0
    # A check that lists the targets again works its deadlines out afresh: counted there.
    judge, listing = WorldModel._judged, WorldModel._deadline_times

    def counted_judged(self, *args):  # type: ignore[no-untyped-def]
        nonlocal judged
        judged += self is rig.checked
        return judge(self, *args)

    def counted_listing(self, *args):  # type: ignore[no-untyped-def]
        nonlocal listed
        listed += self is rig.checked
        return listing(self, *args)

    monkeypatch.setattr(WorldModel, "_judged", counted_judged)
    monkeypatch.setattr(WorldModel, "_deadline_times", counted_listing)
    rig = Rig(tracking=True)
    rng = random.Random(seed)
    _run(rig, (_drawn(rng) for _ in range(1500)))
    assert rig.proceeds > rig.checks / 50 and rig.proceeds < rig.checks  # both verdicts
    assert listed - judged > rig.checks / 5  # reused with the targets listed again
    assert judged > rig.checks / 5  # and judged again when they changed
