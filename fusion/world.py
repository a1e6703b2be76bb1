"""The world model: inputs in with ``apply``, one trustworthy snapshot out with ``snapshot``.

Pure and single-threaded: inputs carry host ``time.monotonic_ns()`` stamps and ``snapshot``
takes ``now_ns``; nothing here reads a clock, sleeps or does I/O. The latest host time seen on
any input or snapshot is the model's clock, which expires waiting measurements.

A vision measurement is placed with the vehicle's pose at its capture time. One newer than the
newest pose waits up to ``max_wait_ms`` after its arrival for the bracketing pose; after that it
is placed by extrapolation only when it lies within ``max_extrapolation_ms`` of the newest pose,
otherwise rejected (``pose_stale``) and counted. While a measurement waits, its target keeps
showing its previous measurement, which is judged on its own capture time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from gizmo_core import Decision, HoldReason, LinkState, Selector
from gizmo_core.clock import ClockStatus

from . import estimates
from .camera import CameraConfig, CameraModel
from .config import WorldConfig
from .inputs import (
    GimbalLaserRange,
    GimbalSample,
    ImuSample,
    Input,
    LaserRange,
    LidarPoints,
    LinkStatus,
    PoseLinkStatus,
    PoseSample,
    SourceConflict,
    VisionObservation,
)
from .placement import Placer
from .snapshot import (
    SourceState,
    SourceStatus,
    TargetState,
    VehicleState,
    VerdictKey,
    WorldSnapshot,
)
from .sources import SourceBook
from .targets import Placement, TargetTable
from .timeline import Added
from .tracking import Track, Tracker, TrackingConfig
from .verdicts import LINK_REASONS, Conditions, global_reasons, ordered

_NEVER = -(2**63)
_RANGE_SOURCE_NAMES: Mapping[type, str] = MappingProxyType(
    {LaserRange: "laser", GimbalLaserRange: "gimbal_laser", LidarPoints: "lidar"}
)
_DOWN_STATES = frozenset({LinkState.DOWN, LinkState.CONNECTING, LinkState.SYNCING})
_LINK_SOURCE_STATES: Mapping[LinkState, SourceState] = MappingProxyType(
    {LinkState.UP: SourceState.OK, LinkState.SILENT: SourceState.STALE}
)


_DECISIONS = (Decision.HOLD, Decision.PROCEED)


_new_tuple = tuple.__new__  # builds a NamedTuple without its Python-level __new__


class Verdict(NamedTuple):
    """What a snapshot would decide (``WorldModel.verdict``), without the snapshot."""

    key: VerdictKey  # ``WorldSnapshot.verdict_key()`` of that snapshot
    proceed_until_ns: int | None  # a PROCEED's ``valid_until_ns``; None for a HOLD
    next_deadline_ns: int | None  # ``WorldModel.next_deadline_ns()`` after it


# Inputs that change no verdict by themselves (they change later placements; a measurement
# they let be placed counts through ``_place``): a verdict check after them may reuse the last.
_QUIET_INPUTS = frozenset({ImuSample, GimbalSample, LaserRange, GimbalLaserRange, LidarPoints})


class _Memo(NamedTuple):
    """The last full verdict check, reusable while nothing it read changed (``verdict``)."""

    changes: int  # ``WorldModel._changes`` when it was made
    now_ns: int
    conditions: tuple[object, ...]  # ``conditions(now_ns)`` without ``now_ns``
    times: list[int]  # ``_deadline_times`` then
    tracks: list[Track] | None  # the live tracks then
    valid_before_ns: int | None  # ``_memo_end``: _NEVER until worked out
    key: VerdictKey
    until_ns: int | None  # a PROCEED's measurement's TTL end (``_valid_until_ns``); None: HOLD
    deadline_ns: int | None  # the next deadline but the pose's


class _Ttls(dict[int, int]):
    """Each result type's TTL in ns, worked out once (``WorldConfig.ttl_ns``)."""

    __slots__ = ("_config",)

    def __init__(self, config: WorldConfig) -> None:
        super().__init__()
        self._config = config

    def __missing__(self, result_type: int) -> int:
        value = self[result_type] = self._config.ttl_ns(result_type)
        return value


class _Pending(NamedTuple):
    obs: VisionObservation
    arrival: int
    deadline_ns: int


class WorldModel:
    """Joins vision results, link state, poses, gimbal and ranges into per-target verdicts."""

    def __init__(
        self,
        camera: CameraModel | CameraConfig,
        config: WorldConfig | None = None,
        *,
        selector: Selector | None = None,
        tracking: TrackingConfig | None = None,
    ) -> None:
        """``tracking``: targets become tracks (:mod:`fusion.tracking`); ``None``: each
        measurement stands on its own (the per-frame path)."""
        self._camera = camera if isinstance(camera, CameraModel) else CameraModel(camera)
        self._config = c = config or WorldConfig()
        self._ttl_ns = _Ttls(c).__getitem__
        self._selector = selector or Selector()
        self._placer = Placer(self._camera, c, rates=tracking is not None)
        self._history = self._placer.history
        self._targets = TargetTable(max_targets=c.max_targets)
        self._tracker = None if tracking is None else Tracker(self._camera, tracking)
        self._pending: deque[_Pending] = deque()
        self._sources = SourceBook(c, expected=["vision", "link"])
        if c.pose_required:
            self._sources.expect("pose")
        self._max_wait_ns = round(c.max_wait_ms * 1e6)
        self._reset_hold_ns = round(c.reset_hold_ms * 1e6)
        self._pose_ttl_ns = round(c.pose_ttl_ms * 1e6)
        self._forget_ns = round(c.forget_after_ms * 1e6)
        self._link_state = LinkState.DOWN
        self._link_ns: int | None = None
        self._reset_ns: int | None = None
        self._down_barrier = self._reset_barrier = -1
        self._arrivals = 0
        self._vision_epoch: int | None = None
        self._down_since_vision = False  # a link outage since the last vision observation
        self._vision_locked = False
        self._pose_clock = ClockStatus.LOCKED
        self._pose_seen = False
        self._locking_pose_ns = _NEVER  # the latest pose that came while its clock was locking
        self._pose_link_up = True  # a pose source without a link of its own is never down
        self._jump_hold_ns = round(c.jump_hold_ms * 1e6)
        self._conflict_hold_ns = round(c.conflict_hold_ms * 1e6)
        self._jump_ns: int | None = None  # the latest pose jump
        self._conflict_ns: int | None = None  # the latest pose conflict
        self._clock_ns = _NEVER
        self._seq = 0
        # Counts the changes a verdict check must see (every input but a plain pose, quiet
        # inputs, and any placement); ``_memo`` is the last check's, while none came since.
        self._changes = 0
        self._memo: _Memo | None = None
        self._counts: dict[str, int] = dict.fromkeys(
            (
                "vision",
                "placed",
                "waited",
                "pending_overflow",
                "poses",
                "pose_epochs",
                "pose_duplicates",
                "pose_conflicts",
                "pose_jumps",
                "pose_old_epoch",
                "poses_locking",
                "pose_outliers",
                "device_resets",
            ),
            0,
        )
        self._handlers: dict[type, Callable[[Any], None]] = {
            VisionObservation: self._on_vision,
            PoseSample: self._on_pose,
            LinkStatus: self._on_link,
            ImuSample: self._on_imu,
            GimbalSample: self._on_gimbal_sample,
            LaserRange: self._on_range,
            GimbalLaserRange: self._on_range,
            LidarPoints: self._on_range,
            SourceConflict: self._on_conflict,
            PoseLinkStatus: self._on_pose_link,
        }

    @property
    def config(self) -> WorldConfig:
        return self._config

    @property
    def pose_required(self) -> bool:
        """A pose source is configured, or poses have arrived: PROCEED then needs one."""
        return self._config.pose_required or self._pose_seen

    def apply(self, item: Input) -> None:
        """Take one input. Raises TypeError only for something that is not an input value."""
        handler = self._handlers.get(type(item))
        if handler is None:
            raise TypeError(f"apply: expected a fusion input value, got {type(item).__name__}")
        handler(item)
        if type(item) is not PoseSample and type(item) not in _QUIET_INPUTS:
            self._changes += 1

    def stats(self) -> dict[str, int]:
        out = dict(self._counts)
        out["extrapolated"] = self._placer.extrapolated
        out["rejected_extrapolation"] = self._placer.rejected_extrapolation
        out["pending"] = len(self._pending)
        out["targets"] = len(self._targets)
        out["targets_evicted"] = self._targets.evicted
        out["superseded_on_arrival"] = self._targets.superseded_on_arrival
        for name, count in self._sources.faults.items():
            out[f"faults_{name}"] = count
        if self._tracker is not None:
            out.update(self._tracker.counts)
        return out

    # -- inputs ----------------------------------------------------------------------------

    def _on_vision(self, obs: VisionObservation) -> None:
        self._counts["vision"] += 1
        self._arrivals = arrival = self._arrivals + 1
        self._sources.seen("vision", obs.host_rx_ns)
        self._vision_locked = obs.clock_locked
        # A new device clock epoch is a reset, unless the link went down since the last
        # observation: a reconnection starts a new epoch too, and its DOWN already bars
        # everything older (a board that restarted meanwhile says so: ``device_reset``).
        new_epoch = self._vision_epoch is not None and obs.epoch != self._vision_epoch
        if new_epoch and not self._down_since_vision:
            self._device_reset(obs.host_rx_ns, barrier=arrival - 1)
        self._vision_epoch = obs.epoch
        self._down_since_vision = False
        if obs.reports_nothing:
            self._targets.saw_nothing(obs.source_id, arrival)
            if self._tracker is not None:
                self._tracker.saw_nothing(obs.source_id, obs.host_capture_ns)
            if obs.has_box:
                self._targets.put(Placement(obs, arrival, None, None))
        elif obs.has_box:
            deadline = obs.host_rx_ns + self._max_wait_ns
            if not self._place(obs, arrival, waited=deadline <= self._clock_ns):
                self._pending.append(_Pending(obs, arrival, deadline))
                self._counts["waited"] += 1
                if len(self._pending) > self._config.max_pending:
                    self._counts["pending_overflow"] += 1
                    oldest = self._pending.popleft()
                    self._place(oldest.obs, oldest.arrival, waited=True)
        self._witness(obs.host_rx_ns)

    def _on_pose(self, pose: PoseSample) -> None:
        counts = self._counts
        counts["poses"] += 1
        if not self._pose_seen:
            self._pose_seen = True
            self._changes += 1
            self._sources.expect("pose")
        status = pose.clock_status
        if status is ClockStatus.OUTLIER:  # its stamp disagrees with its stream
            counts["pose_outliers"] += 1
            return
        if status is not self._pose_clock:
            self._changes += 1
        self._pose_clock = status
        self._sources.seen("pose", pose.host_ns)
        if status.settling:  # mapped by a mapping still settling
            self._changes += 1
            counts["poses_locking"] += 1
            self._locking_pose_ns = pose.host_ns
            self._witness(pose.host_ns)
            return
        added = self._history.add(pose)
        if added is Added.DUPLICATE:
            counts["pose_duplicates"] += 1
            return
        if added is Added.OLD_EPOCH:
            counts["pose_old_epoch"] += 1
            return
        now = max(self._clock_ns, pose.host_ns)
        if added is not Added.APPENDED and added is not Added.INSERTED:
            self._changes += 1  # a jump, a conflict or a new epoch: holds and deadlines
        if added is Added.CONFLICT:
            counts["pose_conflicts"] += 1
            self._hold_conflict(now)
            return
        if added is Added.JUMP:
            counts["pose_jumps"] += 1
            self._jump_ns = now if self._jump_ns is None else max(self._jump_ns, now)
            self._sources.fault("pose", now, self._jump_hold_ns)
        elif added is Added.NEW_EPOCH:
            counts["pose_epochs"] += 1
        if self._pending:
            newest = self._history.newest
            assert newest is not None
            for p in [p for p in self._pending if p.obs.host_capture_ns <= newest.host_ns]:
                self._pending.remove(p)
                self._place(p.obs, p.arrival, waited=False)
        self._witness(pose.host_ns)

    def _on_conflict(self, conflict: SourceConflict) -> None:
        """A second sender for a stream: a pose conflict holds the world."""
        if conflict.source == "pose":
            self._counts["pose_conflicts"] += 1
            self._hold_conflict(max(self._clock_ns, conflict.host_ns))
        else:
            self._sources.fault(conflict.source, conflict.host_ns)
        self._witness(conflict.host_ns)

    def _on_pose_link(self, status: PoseLinkStatus) -> None:
        self._pose_link_up = status.up
        self._witness(status.host_ns)

    def _hold_conflict(self, now_ns: int) -> None:
        self._conflict_ns = now_ns if self._conflict_ns is None else max(self._conflict_ns, now_ns)
        self._sources.fault("pose", now_ns, self._conflict_hold_ns)

    def _on_link(self, status: LinkStatus) -> None:
        self._sources.seen("link", status.host_ns)
        self._link_ns = status.host_ns
        self._link_state = status.state
        if status.state in _DOWN_STATES or status.state is LinkState.SILENT:
            # Nothing read before a DOWN or a silence counts again: the board may have
            # rebooted, moved or lost its target meanwhile.
            self._down_barrier = self._arrivals
        if status.state in _DOWN_STATES:
            self._down_since_vision = True  # the host's next clock epoch is a reconnection
        if status.device_reset:
            self._device_reset(status.host_ns, barrier=self._arrivals)
        self._witness(status.host_ns)

    def _on_imu(self, imu: ImuSample) -> None:
        self._sources.seen("imu", imu.host_ns)
        self._placer.add_imu(imu)
        self._witness(imu.host_ns)

    def _on_gimbal_sample(self, sample: GimbalSample) -> None:
        self._sources.seen("gimbal", sample.host_ns)
        self._placer.gimbal.add(sample)
        self._witness(sample.host_ns)

    def _on_range(self, reading: LaserRange | GimbalLaserRange | LidarPoints) -> None:
        self._sources.seen(_RANGE_SOURCE_NAMES[type(reading)], reading.host_ns)
        self._placer.ranger.add(reading)
        self._witness(reading.host_ns)

    def _device_reset(self, host_ns: int, *, barrier: int) -> None:
        self._counts["device_resets"] += 1
        self._reset_ns = host_ns if self._reset_ns is None else max(self._reset_ns, host_ns)
        self._reset_barrier = max(self._reset_barrier, barrier)

    def _witness(self, host_ns: int) -> None:
        """Advance the model's clock; place the waiting measurements whose wait is over."""
        self._clock_ns = max(self._clock_ns, host_ns)
        pending = self._pending
        while pending and pending[0].deadline_ns <= self._clock_ns:
            p = pending.popleft()
            self._place(p.obs, p.arrival, waited=True)

    def _place(self, obs: VisionObservation, arrival: int, *, waited: bool) -> bool:
        """Place a positive measurement; ``False`` when it must wait for its pose."""
        # No pose yet, but poses are heard while their clock locks: that is why (finding 9).
        empty = HoldReason.CLOCK_NOT_LOCKED if self._locking(self._clock_ns) else None
        placement = self._placer.place(
            obs, arrival, waited=waited, required=self.pose_required, empty=empty
        )
        if placement is None:
            return False
        self._changes += 1
        self._targets.put(placement)
        if self._tracker is not None:
            self._tracker.add(placement)
        self._counts["placed"] += 1
        return True

    # -- output ----------------------------------------------------------------------------

    def _locking(self, now_ns: int) -> bool:
        """Poses are heard (within the pose TTL), all while their clock is settling."""
        heard = now_ns - self._locking_pose_ns <= self._pose_ttl_ns
        return heard and self._pose_clock.settling

    def conditions(self, now_ns: int) -> Conditions:
        """What holds for every target at ``now_ns``."""
        newest = self._history.newest
        pose_now = None
        if newest is None:
            # Poses arriving while their clock locks are not "no pose": clock_not_locked says it.
            if not self._locking(now_ns):
                pose_now = HoldReason.NO_POSE
        elif now_ns - newest.host_ns > self._pose_ttl_ns:
            pose_now = HoldReason.POSE_STALE
        reset, jump, conflict = self._reset_ns, self._jump_ns, self._conflict_ns
        pose_clock = self._pose_clock
        return _new_tuple(
            Conditions,
            (
                now_ns,
                LINK_REASONS.get(self._link_state),
                reset is not None and now_ns - reset <= self._reset_hold_ns,
                pose_clock is ClockStatus.JUMPED,
                pose_clock.settling,
                conflict is not None and now_ns - conflict <= self._conflict_hold_ns,
                jump is not None and now_ns - jump <= self._jump_hold_ns,
                self._pose_seen or self._config.pose_required,  # ``pose_required``
                pose_now,
                not self._pose_link_up,
                self._down_barrier,
                self._reset_barrier,
            ),
        )

    def snapshot(self, now_ns: int) -> WorldSnapshot:
        """The world at ``now_ns``: verdicts, targets, vehicle and sources.

        Also advances the model's clock (waiting measurements whose wait is over are placed)
        and forgets targets unseen for ``forget_after_ms``.
        """
        context, judged, selected, tracks = self._judge(now_ns)
        tracker = self._tracker
        states = [estimates.target_state(j, now_ns, tracker) for j in judged]
        chosen: TargetState | None = None
        if selected is None:
            verdict, reasons = Decision.HOLD, ordered({*context.common, HoldReason.NO_DATA})
            until = self._next_deadline(now_ns, tracks)
        else:
            chosen = states[selected]
            verdict, reasons = chosen.verdict, chosen.reasons
            until = self._valid_until_ns(judged[selected], now_ns, tracks)
        states.sort(key=lambda s: s.capture_ns, reverse=True)
        if tracker is not None and chosen is not None:  # a key may have several tracks:
            states.remove(chosen)  # the one the verdict is about comes first
            states.insert(0, chosen)
        self._seq += 1
        return WorldSnapshot(
            self._seq,
            now_ns,
            now_ns if until is None else until,
            verdict,
            reasons,
            None if chosen is None else chosen.key,
            self._vehicle(now_ns),
            self._source_states(now_ns, context.c),
            tuple(states),
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
        deadline worked out afresh (a newer pose moves both)."""
        memo = self._memo
        if memo is not None and memo.changes == self._changes and now_ns >= memo.now_ns:
            clock = self._clock_ns = max(self._clock_ns, now_ns)
            valid_before = memo.valid_before_ns
            if valid_before == _NEVER:  # worked out at its first reuse
                valid_before = self._memo_end(memo)
                memo = self._memo = memo._replace(valid_before_ns=valid_before)
            if (valid_before is None or clock < valid_before) and memo.conditions == (
                self.conditions(now_ns)[1:]
            ):
                if self._tracker is not None:
                    self._tracker.tracks(now_ns)  # what a full check forgets on its way
                return self._memo_verdict(memo, clock)
        context, judged, selected, tracks = self._judge(now_ns)
        targets = frozenset(
            (j.entry.placement.obs.key, _DECISIONS[j.proceed], j.reasons) for j in judged
        )
        until_ns: int | None = None
        if selected is None:
            reasons = ordered({*context.common, HoldReason.NO_DATA})
            key: VerdictKey = (Decision.HOLD, reasons, None, targets)
        else:
            chosen = judged[selected]
            obs = chosen.entry.placement.obs
            key = (_DECISIONS[chosen.proceed], chosen.reasons, obs.key, targets)
            if chosen.proceed:
                until_ns = obs.host_capture_ns + self._ttl_ns(obs.result_type)
        clock = self._clock_ns  # at or after now_ns: inputs may be stamped later
        times = self._deadline_times(now_ns, tracks)
        deadline = min([t for t in times if t > clock], default=None)
        memo = self._memo = _Memo(
            self._changes, now_ns, context.c[1:], times, tracks, _NEVER, key, until_ns, deadline
        )
        return self._memo_verdict(memo, clock)

    def _memo_end(self, memo: _Memo) -> int | None:
        """When ``memo`` is void whatever comes in: a TTL, hold or wait ending, a target
        forgotten, a track ended (``None``: never)."""
        now = memo.now_ns
        ends = [t for t in memo.times if t > now]
        forget_ns = self._forget_ns
        ends.extend(p.obs.host_capture_ns + forget_ns + 1 for p in self._targets)
        if self._tracker is not None and memo.tracks:
            delete_ns = self._tracker.lifecycle.delete_after_ns
            ends.extend(t.time_ns + delete_ns + 1 for t in memo.tracks)
        return min(ends, default=None)

    def _memo_verdict(self, memo: _Memo, clock_ns: int) -> Verdict:
        """``memo``'s verdict with the newest pose's part of its times (``_valid_until_ns``,
        ``_next_deadline``)."""
        until, deadline = memo.until_ns, memo.deadline_ns
        newest = self._history.newest
        if newest is not None and self.pose_required:
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
        self._witness(now_ns)
        self._targets.forget(now_ns - self._forget_ns)
        c = self.conditions(now_ns)
        selector, targets, tracker = self._selector, self._targets, self._tracker
        tracks = None if tracker is None else tracker.tracks(now_ns)
        context = _new_tuple(
            estimates.Context, (c, frozenset(global_reasons(c)), targets, self._ttl_ns, tracker)
        )
        judged: list[estimates.Judged] = []
        selected: int | None = None
        best: estimates.Judged | None = None
        judge, matches = estimates.judge, selector.matches
        for entry in estimates.entries(targets, tracks):
            j = judge(entry, context)
            obs = entry.placement.obs
            if matches(obs.source_id, obs.result_type, obs.id) and (
                best is None
                or (j.proceed != best.proceed and j.proceed)
                or (j.proceed == best.proceed and j.capture_ns > best.capture_ns)
            ):
                best, selected = j, len(judged)
            judged.append(j)
        return context, judged, selected, tracks

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
        return min([t for t in times if t > now], default=None)

    def _deadline_times(self, judged_ns: int | None, tracks: list[Track] | None) -> list[int]:
        """The times of ``_next_deadline`` but the newest pose's, past or future."""
        now = self._clock_ns
        ttl_ns = self._ttl_ns
        times = [p.deadline_ns for p in self._pending]
        for placement in self._targets:
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

    def _vehicle(self, now_ns: int) -> VehicleState | None:
        newest = self._history.newest
        if newest is None:
            return None
        return VehicleState(
            newest.copter_id,
            newest.host_ns,
            (now_ns - newest.host_ns) / 1e6,
            newest.epoch,
            newest.position_ned_m,
            newest.quaternion_wxyz,
            newest.velocity_ned_m_s,
        )

    def _source_states(self, now_ns: int, c: Conditions) -> dict[str, SourceStatus]:
        book = self._sources
        out: dict[str, SourceStatus] = {}
        for name in book.names():
            if name == "link":
                if self._link_ns is None:
                    out[name] = SourceStatus(SourceState.DEAD, None)
                    continue
                state = _LINK_SOURCE_STATES.get(self._link_state, SourceState.DEAD)
                if c.reset_held and state is SourceState.OK:
                    state = SourceState.RESYNC
                out[name] = SourceStatus(state, (now_ns - self._link_ns) / 1e6)
            elif name == "vision":
                resync = not self._vision_locked or c.reset_held
                out[name] = book.status(name, now_ns, resync=resync)
            elif name == "pose":
                resync = c.clock_jump or c.pose_clock_locking
                out[name] = book.status(name, now_ns, resync=resync)
            else:
                out[name] = book.status(name, now_ns)
        return out
