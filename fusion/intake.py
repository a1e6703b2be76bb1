"""The world model's state and its inputs: ``apply`` takes each input into the state.

A vision measurement is placed with the vehicle's pose at its capture time. One newer than the
newest pose waits up to ``max_wait_ms`` after its arrival for the bracketing pose; after that it
is placed by extrapolation only when it lies within ``max_extrapolation_ms`` of the newest pose,
otherwise rejected (``pose_stale``) and counted. While a measurement waits, its target keeps
showing its previous measurement, which is judged on its own capture time.

The handlers also keep what a verdict reads: the link's state and barriers, resets, the pose
clock and its holds, and ``_changes``, which the verdict check (:mod:`fusion.verdict_check`)
watches to reuse its last check. :class:`Intake` is the base of :class:`fusion.WorldModel`, so
the handlers stay plain method calls on the model.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from gizmo_core import HoldReason, LinkState, Selector
from gizmo_core.clock import ClockStatus

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
from .sources import SourceBook
from .targets import Placement, TargetTable
from .timeline import Added
from .tracking import Tracker, TrackingConfig

_NEVER: Final = -(2**63)
_LOST: Final = HoldReason.LOST
_RANGE_SOURCE_NAMES: Final[Mapping[type, str]] = MappingProxyType(
    {LaserRange: "laser", GimbalLaserRange: "gimbal_laser", LidarPoints: "lidar"}
)
_DOWN_STATES: Final = frozenset({LinkState.DOWN, LinkState.CONNECTING, LinkState.SYNCING})


# Inputs that change no verdict by themselves (they change later placements; a measurement
# they let be placed counts through ``_place``): a verdict check after them may reuse the last.
_QUIET_INPUTS: Final = frozenset(
    {ImuSample, GimbalSample, LaserRange, GimbalLaserRange, LidarPoints}
)


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


class Intake:
    """The model's state, the handler of each input, and the placement of measurements."""

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
        self._targets = TargetTable(max_targets=c.max_targets, keep=self._selector)
        self._tracker = (
            None if tracking is None else Tracker(self._camera, tracking, keep=self._selector)
        )
        self._pending: deque[_Pending] = deque()
        self._sources = SourceBook(c, expected=["vision", "link"])
        if c.pose_required:
            self._sources.expect("pose")
        # A measurement newer than the newest pose waits ``max_wait_ms`` for the next; on a
        # gimbal, up to ``gimbal_max_age_ms`` for the status after its capture (rt41).
        on_gimbal = self._camera.config.on_gimbal
        wait_ms = max(c.max_wait_ms, c.gimbal_max_age_ms) if on_gimbal else c.max_wait_ms
        self._max_wait_ns = round(wait_ms * 1e6)
        self._reset_hold_ns = round(c.reset_hold_ms * 1e6)
        self._pose_ttl_ns = round(c.pose_ttl_ms * 1e6)
        self._forget_ns = round(c.forget_after_ms * 1e6)
        self._link_state = LinkState.DOWN
        self._link_ns: int | None = None
        self._reset_ns: int | None = None
        # A reset no publisher has judged yet (``judged``): ``device_reset`` stands on the
        # check after the reset frame however late it runs (live: a moment after the read;
        # offline replay: at the read's time), until the board's next frame at the latest.
        self._reset_unjudged = False
        self._down_barrier = self._silent_barrier = self._reset_barrier = -1
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
        self._model_fault = False  # failed on an input, and no board result taken since
        self._conflict_ns: int | None = None  # the latest pose conflict
        self._clock_ns = _NEVER
        self._seq = 0
        # Counts the changes a verdict check must see (every input but a plain pose, quiet
        # inputs, and any placement); the verdict check's memo holds while none came since.
        self._changes = 0
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
                "gimbal_focal_implausible",
                "gimbal_laser_junk",
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
        if type(item) is VisionObservation:  # most inputs: the handlers' lookup, written out
            self._on_vision(item)
            self._changes += 1
            self._model_fault = False  # a board result taken whole: the model works again
            return
        kind = type(item)
        handler = self._handlers.get(kind)
        if handler is None:
            raise TypeError(f"apply: expected a fusion input value, got {kind.__name__}")
        handler(item)
        if kind is not PoseSample and kind not in _QUIET_INPUTS:
            self._changes += 1

    def stats(self) -> dict[str, int]:
        out = dict(self._counts)
        out["extrapolated"] = self._placer.extrapolated
        out["rejected_extrapolation"] = self._placer.rejected_extrapolation
        out["range_below_ground"] = self._placer.ranger.below_ground
        out["range_beam_wider"] = self._placer.ranger.beam_wider
        out["range_too_near"] = self._placer.ranger.too_near
        out["range_conflicts"] = self._placer.ranger.conflicts
        out["lidar_beyond_range"] = self._placer.ranger.lidar_beyond_range
        out["lidar_unplaced"] = self._placer.ranger.lidar_unplaced
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
        # Every result passes here (a board repeating one image at 921600, mostly): the
        # helpers on the way (``reports_nothing``, ``_witness``) are written out.
        self._counts["vision"] += 1
        self._arrivals = arrival = self._arrivals + 1
        rx_ns = obs.host_rx_ns
        self._sources.seen("vision", rx_ns)
        if self._reset_unjudged and self._reset_ns is not None and rx_ns > self._reset_ns:
            self._reset_unjudged = False  # a later frame: the reset is no longer the news
        self._vision_locked = obs.clock_locked
        # A new device clock epoch is a reset, unless the link went down since the last
        # observation: a reconnection starts a new epoch too, and its DOWN already bars
        # everything older (a board that restarted meanwhile says so: ``device_reset``).
        if obs.epoch != self._vision_epoch:
            if self._vision_epoch is not None and not self._down_since_vision:
                self._device_reset(rx_ns, barrier=arrival - 1)
            self._vision_epoch = obs.epoch
        self._down_since_vision = False
        if not obs.tracked or obs.lost or obs.result_type == 0:  # ``reports_nothing``
            self._targets.saw_nothing(obs.source_id, arrival, obs.withheld or _LOST)
            if self._tracker is not None:
                self._tracker.saw_nothing(obs.source_id, obs.host_capture_ns)
            if obs.has_box:
                self._targets.put(Placement(obs, arrival, None, None))
        elif obs.has_box:
            deadline = rx_ns + self._max_wait_ns
            if not self._place(obs, arrival, deadline <= self._clock_ns):
                self._pending.append(_Pending(obs, arrival, deadline))
                self._counts["waited"] += 1
                if len(self._pending) > self._config.max_pending:
                    # Dropped, never placed as if its wait were over: placed early, a capture
                    # past a gimbal's newest status took that status's angles while the gimbal
                    # turned (red team rt45: 2.7 m off with 40 boxes a frame).
                    self._counts["pending_overflow"] += 1
                    self._pending.popleft()
        if rx_ns > self._clock_ns:  # noqa: PLR1730 - ``_witness``, without a call
            self._clock_ns = rx_ns
        if self._pending:
            self._witness(rx_ns)

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
            self._retry_pending(newest.host_ns)
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
        # Nothing read before a DOWN or a silence counts again: the board may have rebooted,
        # moved or lost its target meanwhile. Each kept apart, to be named as what it was.
        if status.state in _DOWN_STATES:
            self._down_barrier = self._arrivals
            self._down_since_vision = True  # the host's next clock epoch is a reconnection
        elif status.state is LinkState.SILENT:
            self._silent_barrier = self._arrivals
        if status.device_reset:
            self._device_reset(status.host_ns, barrier=self._arrivals)
        self._witness(status.host_ns)

    def _on_imu(self, imu: ImuSample) -> None:
        self._sources.seen("imu", imu.host_ns)
        self._placer.add_imu(imu)
        self._witness(imu.host_ns)

    def _on_gimbal_sample(self, sample: GimbalSample) -> None:
        if not self._camera.plausible_focal(sample.fx_px, sample.fy_px):
            self._counts["gimbal_focal_implausible"] += 1  # the configured intrinsics apply
            sample = GimbalSample(sample.host_ns, sample.camera_rpy_deg)
        self._sources.seen("gimbal", sample.host_ns)
        self._placer.gimbal.add(sample)
        if self._pending:
            self._retry_pending(sample.host_ns)
        self._witness(sample.host_ns)

    def _retry_pending(self, ready_ns: int) -> None:
        """Place the waiting measurements captured by ``ready_ns`` (the newest pose's or gimbal
        status's time) that can be placed now; the others wait on: each needs both."""
        for p in [p for p in self._pending if p.obs.host_capture_ns <= ready_ns]:
            if self._place(p.obs, p.arrival, False):
                self._pending.remove(p)

    def _on_range(self, reading: LaserRange | GimbalLaserRange | LidarPoints) -> None:
        if type(reading) is GimbalLaserRange and (
            (reading.distance_m or 0.0) > self._config.gimbal_laser_max_range_m
        ):
            self._counts["gimbal_laser_junk"] += 1  # no laser reaches it (red team rt16)
            return
        self._sources.seen(_RANGE_SOURCE_NAMES[type(reading)], reading.host_ns)
        self._placer.ranger.add(reading)
        if type(reading) is not GimbalLaserRange:
            # A gimbal laser range comes just before its status's attitude, which witnesses the
            # time: a capture whose wait ends now is then placed with both (red team rt48:
            # placed here, it took the previous status's angles while the gimbal turned).
            self._witness(reading.host_ns)

    def fault(self, host_ns: int) -> None:
        """The model raised on an input (its caller caught it): what earlier inputs built may
        be half updated. The measurements, the waits and the tracks are dropped (their
        counters and the track numbering go on; poses, link and holds stay: each was whole
        when taken), and every verdict HOLDs with ``model_fault`` until a board result is
        taken again without failing."""
        self._model_fault = True
        self._pending.clear()
        dropped = self._targets
        self._targets = TargetTable(max_targets=self._config.max_targets, keep=self._selector)
        self._targets.evicted = dropped.evicted
        self._targets.superseded_on_arrival = dropped.superseded_on_arrival
        if self._tracker is not None:
            self._tracker = self._tracker.restarted(self._camera)
        self._changes += 1
        self._witness(host_ns)

    def judged(self) -> None:
        """A publisher has judged the model since its latest input (a snapshot does): a
        device reset's ``device_reset`` lasts its ``reset_hold_ms`` from here on."""
        self._reset_unjudged = False

    def _device_reset(self, host_ns: int, *, barrier: int) -> None:
        self._counts["device_resets"] += 1
        self._reset_ns = host_ns if self._reset_ns is None else max(self._reset_ns, host_ns)
        self._reset_unjudged = True
        self._reset_barrier = max(self._reset_barrier, barrier)

    def _witness(self, host_ns: int) -> None:
        """Advance the model's clock; place the waiting measurements whose wait is over."""
        self._clock_ns = max(self._clock_ns, host_ns)
        pending = self._pending
        while pending and pending[0].deadline_ns <= self._clock_ns:
            p = pending.popleft()
            self._place(p.obs, p.arrival, True)

    def _place(self, obs: VisionObservation, arrival: int, waited: bool) -> bool:
        """Place a positive measurement (``waited``: its wait is over); ``False`` when it must
        wait for its pose."""
        # No pose yet, but poses are heard while their clock locks: that is why (finding 9).
        # (``_locking`` and ``pose_required``, written out: every result passes here.)
        heard = self._clock_ns - self._locking_pose_ns <= self._pose_ttl_ns
        locking = heard and self._pose_clock.settling
        placement = self._placer.place(
            obs,
            arrival,
            waited,
            self._config.pose_required or self._pose_seen,
            HoldReason.CLOCK_NOT_LOCKED if locking else None,
        )
        if placement is None:
            return False
        self._changes += 1
        self._targets.put(placement)
        if self._tracker is not None:
            self._tracker.add(placement)
        self._counts["placed"] += 1
        return True

    def _locking(self, now_ns: int) -> bool:
        """Poses are heard (within the pose TTL), all while their clock is settling."""
        heard = now_ns - self._locking_pose_ns <= self._pose_ttl_ns
        return heard and self._pose_clock.settling
