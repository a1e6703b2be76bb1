"""The verdict check: every target judged at a time, its memo, and the deadlines.

``verdict`` is what a publisher calls after every input; ``snapshot`` (:mod:`fusion.world`)
builds on the same ``_judge``. A check after inputs that changed nothing it reads reuses the
last one (``_Memo``) until a TTL, hold, wait, forgetting or track end could change it; so does
a check whose targets to judge are the very ones the last one judged, in the same conditions
(a board repeating one image). ``next_deadline_ns`` is when a verdict can change with no new
input.

:class:`VerdictCheck` extends the model's state and inputs (:class:`fusion.intake.Intake`) and
is the base of :class:`fusion.WorldModel`: the check's calls stay plain method calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from gizmo_core import Decision, HoldReason, LinkState
from gizmo_core.clock import ClockStatus

from . import estimates
from .intake import Intake
from .snapshot import VerdictKey
from .targets import Placement
from .tracking import Track
from .verdicts import LINK_REASONS, Conditions, global_reasons, ordered

_UNWORKED: Final = -(2**63)  # ``_Memo.valid_before_ns`` not worked out yet
_DECISIONS: Final = (Decision.HOLD, Decision.PROCEED)
_NO_TRACKS: Final[Mapping[str, int]] = MappingProxyType({})  # ``_Memo.fused`` without tracking
_CONVERGING: Final = ClockStatus.CONVERGING
_RESYNC: Final = ClockStatus.RESYNC
_JUMPED: Final = ClockStatus.JUMPED
_UP: Final = LinkState.UP
_link_reason: Final = dict(LINK_REASONS).get  # a dict's own lookup: faster than a mapping proxy's


_new_tuple: Final = tuple.__new__  # builds a NamedTuple without its Python-level __new__


class Verdict(NamedTuple):
    """What a snapshot would decide (``WorldModel.verdict``), without the snapshot."""

    key: VerdictKey  # ``WorldSnapshot.verdict_key()`` of that snapshot
    proceed_until_ns: int | None  # a PROCEED's ``valid_until_ns``; None for a HOLD
    next_deadline_ns: int | None  # ``WorldModel.next_deadline_ns()`` after it


class _Memo(NamedTuple):
    """The last verdict check, reusable while nothing it read changed (``verdict``)."""

    changes: int  # ``WorldModel._changes`` when it was made
    now_ns: int
    conditions: tuple[object, ...]  # ``_holding(now_ns)``: ``conditions`` but ``now_ns``
    nothing_version: int  # ``TargetTable.nothing_version`` then: what supersedes
    tracks: list[Track] | None  # the live tracks then
    fused: Mapping[str, int]  # ``estimates.fused_arrivals(tracks)``
    alone: list[Placement]  # ``estimates.unfused``: the measurements listed apart
    entries: list[estimates.Entry]  # what was judged
    judged_until_ns: int | None  # ``_judged_until``: each entry judges as then until it
    times: list[int]  # ``_deadline_times`` then
    valid_before_ns: int | None  # ``_memo_end``: _UNWORKED until worked out
    key: VerdictKey
    until_ns: int | None  # a PROCEED's measurement's TTL end (``_valid_until_ns``); None: HOLD
    deadline_ns: int | None  # the next deadline but the pose's


_MEMO: Final = _Memo  # compiled, a final is a C static: no dictionary lookup at each use


def _first_after(times: list[int], after_ns: int) -> int | None:
    """The earliest of ``times`` later than ``after_ns`` (``None``: none is); a loop, as
    the lists are short (a comprehension and ``min`` cost four times as much)."""
    first = None
    for t in times:
        if t > after_ns and (first is None or t < first):
            first = t
    return first


def _same_items(now: list[Any] | None, then: list[Any] | None) -> bool:
    """The very same values, item for item (``is``: a track's filter state has no ``==``).
    Compiled, ``all`` of a generator is a loop; ``all(map(is_, ...))`` was 2 % of a saturated
    line's world replay (the builtins looked up by name, ``is_`` called through Python)."""
    if now is None or then is None:
        return now is then
    return len(now) == len(then) and all(now[i] is then[i] for i in range(len(now)))


class VerdictCheck(Intake):
    """Judges the targets at a time, reuses the last check while it holds, and says when the
    verdict can next change."""

    _memo: _Memo | None = None  # the last check's, while no change came since (``_changes``)
    # ``global_reasons`` of the last ``_holding`` judged, with it: a pure function of it
    _common: tuple[tuple[object, ...], frozenset[HoldReason]] | None = None

    def conditions(self, now_ns: int) -> Conditions:
        """What holds for every target at ``now_ns``."""
        return _new_tuple(Conditions, (now_ns, *self._holding(now_ns)))

    def _holding(self, now_ns: int) -> tuple[object, ...]:
        """``conditions(now_ns)`` but ``now_ns``: what a reused check compares."""
        newest = self._history.newest
        pose_now = None
        if newest is None:
            # Poses arriving while their clock locks are not "no pose": clock_not_locked says it.
            if not self._locking(now_ns):
                pose_now = HoldReason.NO_POSE
        elif now_ns - newest.host_ns > self._pose_ttl_ns:
            pose_now = HoldReason.POSE_STALE
        reset, jump, conflict = self._reset_ns, self._jump_ns, self._conflict_ns
        pose_clock, link = self._pose_clock, self._link_state
        # Enum members compared by identity: an enum's hash runs in Python (UP has no reason).
        return (
            None if link is _UP else _link_reason(link),
            reset is not None and (self._reset_unjudged or now_ns - reset <= self._reset_hold_ns),
            pose_clock is _JUMPED,
            pose_clock is _CONVERGING or pose_clock is _RESYNC,  # ``settling``
            conflict is not None and now_ns - conflict <= self._conflict_hold_ns,
            jump is not None and now_ns - jump <= self._jump_hold_ns,
            self._pose_seen or self._config.pose_required,  # ``pose_required``
            pose_now,
            not self._pose_link_up,
            self._down_barrier,
            self._silent_barrier,
            self._reset_barrier,
            self._model_fault,
        )

    def verdict(self, now_ns: int) -> Verdict:
        """What ``snapshot(now_ns)`` decides, without building it: its verdict key, a
        PROCEED's ``valid_until_ns`` and the next deadline, for a publisher that checks after
        every input and publishes only a change. It advances the clock and forgets as
        ``snapshot`` does.

        A check after inputs that changed nothing it reads (plain poses, IMU, gimbal and
        ranges; no placement) before any TTL, hold, wait, forgetting or track end, with the
        same conditions (link, barriers, pose freshness and clock, holds), decides what the
        last one did: it is reused, with a PROCEED's ``valid_until_ns`` and the pose's
        deadline worked out afresh (a newer pose moves both).

        Otherwise the targets are listed as ``snapshot`` lists them. When the live tracks and
        the measurements listed apart from them are the very values the last check listed
        (a placement the tracker took as a repeat of an image a track holds lists none),
        with the same conditions and supersession, and none of their TTLs has ended since
        (``_judged_until``), each judges as it did: ``estimates.judge`` reads nothing else.
        The last verdict is reused, with the deadlines worked out afresh."""
        memo = self._memo
        if memo is not None and memo.changes == self._changes and now_ns >= memo.now_ns:
            clock = self._clock_ns = max(self._clock_ns, now_ns)
            valid_before = memo.valid_before_ns
            if valid_before == _UNWORKED:  # worked out at its first reuse
                valid_before = self._memo_end(memo)
                memo = self._memo = memo._replace(valid_before_ns=valid_before)
            if (valid_before is None or clock < valid_before) and memo.conditions == (
                self._holding(now_ns)
            ):
                if self._tracker is not None:
                    self._tracker.tracks(now_ns)  # what a full check forgets on its way
                return self._memo_verdict(memo, clock)
        self._memo = None
        # ``_listing``, written out: most checks come here (a board repeating one image).
        if now_ns > self._clock_ns or self._pending:
            self._witness(now_ns)
        targets = self._targets
        targets.forget(now_ns - self._forget_ns)
        conditions = self._holding(now_ns)
        tracker = self._tracker
        tracks = None if tracker is None else tracker.tracks(now_ns)
        nothing_version = targets.nothing_version
        if memo is not None and _same_items(tracks, memo.tracks):
            fused = memo.fused  # the same tracks: the same arrivals fused
        else:
            memo = None  # nothing to reuse
            fused = _NO_TRACKS if tracks is None else estimates.fused_arrivals(tracks)
        alone = estimates.unfused(targets, tracks, fused)
        until_ns: int | None = None
        if (
            memo is not None
            and now_ns >= memo.now_ns
            and memo.conditions == conditions
            and memo.nothing_version == nothing_version
            and _same_items(alone, memo.alone)
            and (memo.judged_until_ns is None or now_ns <= memo.judged_until_ns)
        ):
            entries, judged_until = memo.entries, memo.judged_until_ns
            key, until_ns = memo.key, memo.until_ns
        else:
            entries = estimates.listed(alone, tracks)
            context, judged, selected = self._judged(now_ns, conditions, entries)
            shown = frozenset(
                [(j.entry.placement.obs.key, _DECISIONS[j.proceed], j.reasons) for j in judged]
            )
            if selected is None:
                reasons = ordered({*context.common, HoldReason.NO_DATA})
                key = (Decision.HOLD, reasons, None, shown)
            else:
                chosen = judged[selected]
                obs = chosen.entry.placement.obs
                key = (_DECISIONS[chosen.proceed], chosen.reasons, obs.key, shown)
                if chosen.proceed:
                    until_ns = obs.host_capture_ns + self._ttl_ns(obs.result_type)
            judged_until = self._judged_until(entries, now_ns)
        clock = self._clock_ns  # at or after now_ns: inputs may be stamped later
        times = self._deadline_times(now_ns, tracks)
        deadline = _first_after(times, clock)
        memo = self._memo = _new_tuple(
            _MEMO,
            (
                self._changes, now_ns, conditions, nothing_version, tracks, fused, alone,
                entries, judged_until, times, _UNWORKED, key, until_ns, deadline,
            ),
        )  # fmt: skip
        return self._memo_verdict(memo, clock)

    def _judged_until(self, entries: list[estimates.Entry], now_ns: int) -> int | None:
        """Until when each of ``entries`` judges as at ``now_ns`` as far as time goes: the
        next end of a TTL of theirs (a measurement is stale, and a track coasts for want of
        updates, once more than its TTL past the capture). ``None``: no TTL ends ahead."""
        ttl_ns = self._ttl_ns
        until: int | None = None
        for placement, track, _ in entries:  # a ``newer`` is an entry of its own too
            ttl = ttl_ns(placement.obs.result_type)
            end = placement.obs.host_capture_ns + ttl
            if end >= now_ns and (until is None or end < until):
                until = end
            if track is not None:
                end = track.time_ns + ttl
                if end >= now_ns and (until is None or end < until):
                    until = end
        return until

    def _memo_end(self, memo: _Memo) -> int | None:
        """When ``memo`` is void whatever comes in: a TTL, hold or wait ending, a target
        forgotten, a track ended (``None``: never)."""
        now = memo.now_ns
        ends = [t for t in memo.times if t > now]
        forget_ns = self._forget_ns
        ends.extend(p.obs.host_capture_ns + forget_ns + 1 for p in self._targets.held)
        if self._tracker is not None and memo.tracks:
            delete_ns = self._tracker.lifecycle.delete_after_ns
            ends.extend(t.time_ns + delete_ns + 1 for t in memo.tracks)
        return min(ends, default=None)

    def _memo_verdict(self, memo: _Memo, clock_ns: int) -> Verdict:
        """``memo``'s verdict with the newest pose's part of its times (``_valid_until_ns``,
        ``_next_deadline``)."""
        until, deadline = memo.until_ns, memo.deadline_ns
        newest = self._history.newest
        if newest is not None and (self._pose_seen or self._config.pose_required):
            stale_ns = newest.host_ns + self._pose_ttl_ns
            if until is not None and stale_ns < until:
                until = stale_ns
            if stale_ns + 1 > clock_ns and (deadline is None or stale_ns + 1 < deadline):
                deadline = stale_ns + 1
        return _new_tuple(Verdict, (memo.key, until, deadline))

    def _judge(
        self, now_ns: int
    ) -> tuple[estimates.Context, list[estimates.Judged], int | None, list[Track] | None]:
        """Every target's verdict at ``now_ns``, the index of the one the verdict is about
        (PROCEED first, then the newest capture; ``None``: none matches), and the live
        tracks (``None`` without tracking)."""
        self._memo = None
        holding, tracks = self._listing(now_ns)
        entries = estimates.entries(self._targets, tracks)
        context, judged, selected = self._judged(now_ns, holding, entries)
        return context, judged, selected, tracks

    def _listing(self, now_ns: int) -> tuple[tuple[object, ...], list[Track] | None]:
        """What judging at ``now_ns`` starts from: the clock advanced (the waiting
        measurements due placed) and the forgetting done, ``_holding(now_ns)`` and the live
        tracks (``None`` without tracking)."""
        self._witness(now_ns)
        self._targets.forget(now_ns - self._forget_ns)
        holding = self._holding(now_ns)
        tracker = self._tracker
        return holding, None if tracker is None else tracker.tracks(now_ns)

    def _judged(
        self, now_ns: int, holding: tuple[object, ...], entries: list[estimates.Entry]
    ) -> tuple[estimates.Context, list[estimates.Judged], int | None]:
        """Each of ``entries`` judged at ``now_ns`` (``holding``: ``_holding(now_ns)``), and
        the index of the one the verdict is about (PROCEED first, then the newest capture;
        ``None``: none matches)."""
        c: Conditions = _new_tuple(Conditions, (now_ns, *holding))
        common = self._common
        if common is None or common[0] != holding:  # the same conditions: the same reasons
            common = self._common = (holding, frozenset(global_reasons(c)))
        context = _new_tuple(
            estimates.Context,
            (c, common[1], self._targets, self._ttl_ns, self._tracker, self._placer.edges),
        )
        judged: list[estimates.Judged] = []
        selected: int | None = None
        best: estimates.Judged | None = None
        judge, matches = estimates.judge, self._selector.matches
        for entry in entries:
            j = judge(entry, context)
            obs = entry.placement.obs
            if matches(obs.source_id, obs.result_type, obs.id) and (
                best is None
                or (j.proceed != best.proceed and j.proceed)
                or (j.proceed == best.proceed and j.capture_ns > best.capture_ns)
            ):
                best, selected = j, len(judged)
            judged.append(j)
        return context, judged, selected

    def _valid_until_ns(
        self, selected: estimates.Judged, now_ns: int, tracks: list[Track] | None
    ) -> int | None:
        """When a snapshot's verdict is void with no newer one (``WorldSnapshot``): a
        PROCEED's; a HOLD's next deadline (``None``: none)."""
        if not selected.proceed:
            return self._next_deadline(now_ns, tracks)
        obs = selected.entry.placement.obs
        until = obs.host_capture_ns + self._ttl_ns(obs.result_type)
        newest = self._history.newest
        if newest is not None and self.pose_required:
            until = min(until, newest.host_ns + self._pose_ttl_ns)
        return until

    def next_deadline_ns(self) -> int | None:
        """The earliest future time at which a verdict can change with no new input (a TTL
        or hold running out, a wait ending): when a publisher should take a snapshot."""
        return self._next_deadline(None, None)

    def _next_deadline(self, judged_ns: int | None, tracks: list[Track] | None) -> int | None:
        """``next_deadline_ns``, with the tracks live at ``judged_ns`` (those of the model's
        clock when it is that time: a judging pass has just listed them)."""
        now = self._clock_ns
        times = self._deadline_times(judged_ns, tracks)
        newest = self._history.newest
        if newest is not None and self.pose_required:
            times.append(newest.host_ns + self._pose_ttl_ns + 1)
        return _first_after(times, now)

    def _deadline_times(self, judged_ns: int | None, tracks: list[Track] | None) -> list[int]:
        """The times of ``_next_deadline`` but the newest pose's, past or future."""
        now = self._clock_ns
        ttl_ns = self._ttl_ns
        pending = self._pending
        times = [p.deadline_ns for p in pending] if pending else []
        for placement in self._targets.held:
            obs = placement.obs
            times.append(obs.host_capture_ns + ttl_ns(obs.result_type) + 1)
        tracker = self._tracker
        if tracker is not None:
            if tracks is None or judged_ns != now:
                tracks = tracker.tracks(now)
            for t in tracks:  # a track's verdict changes when its measurement's TTL ends
                obs = t.placement.obs
                times.append(obs.host_capture_ns + ttl_ns(obs.result_type) + 1)
        if self._reset_ns is not None:
            times.append(self._reset_ns + self._reset_hold_ns + 1)
        if self._jump_ns is not None:
            times.append(self._jump_ns + self._jump_hold_ns + 1)
        if self._conflict_ns is not None:
            times.append(self._conflict_ns + self._conflict_hold_ns + 1)
        return times
