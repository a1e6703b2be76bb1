"""The autopilot's pose as a fusion source: MAVLink messages -> :class:`fusion.PoseSample`.

ATTITUDE_QUATERNION and LOCAL_POSITION_NED are paired by their boot times (their
``time_boot_ms`` as the session unwrapped it: ``AutopilotSession.boot_ns``), the attitude
slerped to the position's time when two bracket it, else the nearest within ``max_pair_ms``.
ODOMETRY is a pose by itself. The two streams never mix: one places poses, the other's are
counted ``mixed`` (:mod:`.pose_choice` chooses: the first to deliver, replaced only when it
fails the world); where both place the vehicle at one time they must agree, or it is a conflict
(``on_conflict``; counted ``disagree``). An ODOMETRY whose ``quality`` says it failed (-1), or
whose position variance is beyond ``MAX_POSITION_VARIANCE_M2``, locates nothing: a counted
``failed`` (rt14: a failed estimate drifting 8 m was PROCEEDed on). A position that no attitude
ever paired, or that a full buffer pushed out, is a counted ``unpaired``. Each pose is placed at
its boot time mapped to the host clock by the session's estimator, with the estimator's epoch
and status (LOCKING until locked: the world holds ``clock_not_locked``), and carries its
velocity in NED, which the world's jump rule uses. A pose that arrives before the clock has any
mapping is still told to the world, as LOCKING at its arrival time (never placed, never kept):
the autopilot is heard and its clock is what is missing, not its pose. Every number is checked
before use: a non-finite or out-of-range position, velocity or quaternion is a counted
``invalid``.

A pose older than the newest one emitted (reordered on the wire, or a second stream from the
autopilot's own address, whose poses interleave with the real ones) is counted (``older``) and
still emitted: the world's history puts it in its place when it fits its neighbours (honest
reordering) and holds ``pose_conflict`` when it contradicts them, as a different pose for a
time already held is on the RflySim path. Dropping it unseen made the stream stamped ahead
win silently.

A :class:`~fusion.timeline.PoseHistory` of the poses is kept here too, so the LANDING_TARGET
sender can take the body attitude at a capture time from the autopilot's own poses.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

from fusion.geometry import Quat, Vec3, quat_rotate, slerp
from fusion.inputs import MAX_POSITION_M, MAX_SPEED_M_S, PoseSample
from fusion.timeline import JumpBounds, PoseHistory
from gizmo_core.clock import ClockStatus

from . import codec as mc
from .pose_choice import MAX_DISAGREEMENT_M, PoseStream, StreamChoice
from .session import CONFLICT_TELL_NS, AutopilotSession, ConflictCallback

PoseCallback = Callable[[PoseSample], None]
_BUFFER = 8  # messages of each kind kept for pairing
MAX_POSITION_VARIANCE_M2 = 25.0  # an ODOMETRY position less certain than 5 m σ locates nothing
_ODOMETRY_FAILED = -1  # ODOMETRY.quality: "odometry has failed"
_POSITION_VARIANCES = (0, 6, 11)  # x, y, z in the upper triangle of pose_covariance
_ODOMETRY, _PAIRS = PoseStream.ODOMETRY, PoseStream.PAIRS


class MavlinkPoseSource:
    """Listens to a session and emits a :class:`PoseSample` per pose it can place."""

    def __init__(
        self,
        session: AutopilotSession,
        on_pose: PoseCallback | None = None,
        *,
        copter_id: int = 1,
        max_pair_ms: float = 15.0,
        history_samples: int = 256,
        on_conflict: ConflictCallback | None = None,
    ) -> None:
        """``on_conflict(host_ns, detail)``: the two pose streams disagree (rate-capped)."""
        self._session = session
        self._on_pose = on_pose
        self._on_conflict = on_conflict
        self._conflict_told_ns: int | None = None
        self._copter_id = copter_id
        self._max_pair_ns = round(max_pair_ms * 1e6)
        self._attitudes: deque[tuple[int, Quat]] = deque(maxlen=_BUFFER)
        self._positions: deque[tuple[int, Vec3, Vec3 | None]] = deque(maxlen=_BUFFER)
        self._last_ns: int | None = None  # the newest boot time emitted
        self._rx_ns = 0  # the host receive time of the message being handled
        self._choice = StreamChoice()
        self._epoch = session.estimator.epoch
        self.history = PoseHistory(max_samples=history_samples, bounds=JumpBounds())
        self.counts: dict[str, int] = dict.fromkeys(
            ("poses", "unmapped", "invalid", "failed", "unpaired", "mixed", "older", "disagree"),
            0,
        )
        session.add_listener(self._message)

    def _message(self, msg: Any, host_ns: int) -> None:
        self._rx_ns = host_ns
        msg_id = msg.get_msgId()
        epoch = self._session.estimator.epoch
        if epoch != self._epoch:  # a reboot: boot times start again, and the choice of source
            self._epoch = epoch
            self.reset()
        if msg_id == mc.MSG_ODOMETRY:
            self._odometry(msg)
            return
        if msg_id == mc.MSG_ATTITUDE_QUATERNION:
            q = _quat((msg.q1, msg.q2, msg.q3, msg.q4))
            if q is None:
                self.counts["invalid"] += 1
                return
            self._attitudes.append((self._boot_ns(), q))
            self._pair()
        elif msg_id == mc.MSG_LOCAL_POSITION_NED:
            p = _vec((msg.x, msg.y, msg.z), MAX_POSITION_M)
            v = _vec((msg.vx, msg.vy, msg.vz), MAX_SPEED_M_S)
            if p is None or (v is None and _given((msg.vx, msg.vy, msg.vz))):
                self.counts["invalid"] += 1
                return
            if len(self._positions) == _BUFFER:
                self.counts["unpaired"] += 1  # the oldest goes: no attitude came for it
            self._positions.append((self._boot_ns(), p, v))
            self._pair()

    def _boot_ns(self) -> int:
        """The message's boot time, as the session unwrapped it (every message this source
        takes carries one)."""
        boot_ns = self._session.boot_ns
        assert boot_ns is not None
        return boot_ns

    def _pair(self) -> None:
        attitudes = self._attitudes
        if not attitudes:
            return
        positions = self._positions
        for item in list(positions):
            boot_ns, position, velocity = item
            q = _attitude_at(attitudes, boot_ns, self._max_pair_ns)
            if q is None:
                if attitudes[-1][0] > boot_ns:
                    self.counts["unpaired"] += 1  # no attitude will come for it any more
                    positions.remove(item)
                continue
            positions.remove(item)
            self._offer(_PAIRS, boot_ns, position, q, velocity)

    def _odometry(self, msg: Any) -> None:
        boot_ns = self._boot_ns()
        q = _quat(msg.q)
        p = _vec((msg.x, msg.y, msg.z), MAX_POSITION_M)
        v = _vec((msg.vx, msg.vy, msg.vz), MAX_SPEED_M_S)
        invalid_v = v is None and _given((msg.vx, msg.vy, msg.vz))
        if q is None or p is None or invalid_v or msg.frame_id != mc.FRAME_LOCAL_NED:
            self.counts["invalid"] += 1
            return
        if _failed(msg):
            self.counts["failed"] += 1
            return
        if v is not None and msg.child_frame_id == mc.FRAME_BODY_FRD:
            v = quat_rotate(q, v)
        elif msg.child_frame_id != mc.FRAME_LOCAL_NED:
            v = None
        self._offer(_ODOMETRY, boot_ns, p, q, v)

    def _offer(
        self, stream: PoseStream, boot_ns: int, position: Vec3, q: Quat, velocity: Vec3 | None
    ) -> None:
        """A pose of ``stream``: placed when its stream is the chosen one, else counted."""
        host_ns = self._session.estimator.to_host_ns(boot_ns)
        latency = None if host_ns is None else self._rx_ns - host_ns
        apart_m = self._choice.disagreement_m(stream, boot_ns, position, velocity, self._rx_ns)
        if apart_m is not None and apart_m > MAX_DISAGREEMENT_M:
            self.counts["disagree"] += 1
            self._tell_conflict(f"ODOMETRY and LOCAL_POSITION_NED {apart_m:.1f} m apart")
        if self._choice.offer(stream, boot_ns, self._rx_ns, latency):
            self._emit(boot_ns, position, q, velocity)
        else:
            self.counts["mixed"] += 1  # the other stream's serve the world

    def _tell_conflict(self, detail: str) -> None:
        """Tell ``on_conflict``, at most once each ``CONFLICT_TELL_NS`` (the world holds for
        longer after each)."""
        told, now = self._conflict_told_ns, self._rx_ns
        if self._on_conflict is None or (told is not None and now - told < CONFLICT_TELL_NS):
            return
        self._conflict_told_ns = now
        self._on_conflict(now, detail)

    def _emit(self, boot_ns: int, position: Vec3, q: Quat, velocity: Vec3 | None) -> None:
        estimator = self._session.estimator
        if self._last_ns is not None and boot_ns <= self._last_ns:
            self.counts["older"] += 1  # the history puts it in place, or refuses it
        else:
            self._last_ns = boot_ns
        host_ns = estimator.to_host_ns(boot_ns)
        status = estimator.status_at(self._rx_ns)
        if host_ns is None:
            self.counts["unmapped"] += 1
            host_ns = self._rx_ns  # heard, not placeable: the mapping is settling
            status = status if status.settling else ClockStatus.RESYNC
        pose = PoseSample(
            host_ns=host_ns,
            sim_time_ns=boot_ns,
            epoch=estimator.epoch,
            position_ned_m=position,
            quaternion_wxyz=q,
            velocity_ned_m_s=velocity,
            copter_id=self._copter_id,
            clock_status=status,
        )
        self.counts["poses"] += 1
        if status is ClockStatus.LOCKED:  # not settling, not an outlier awaiting its step
            self.history.add(pose)
        if self._on_pose is not None:
            self._on_pose(pose)

    def reset(self) -> None:
        """Forget the boot times seen (the autopilot rebooted: its clock starts again)."""
        self._last_ns = None
        self._choice.reset()
        self._attitudes.clear()
        self._positions.clear()

    def attitude_at(self, host_ns: int) -> Quat | None:
        """The body attitude at ``host_ns``, interpolated between the poses around it."""
        at = self.history.interpolate(host_ns)
        return None if at is None else at.quaternion_wxyz

    def stats(self) -> dict[str, Any]:
        chosen = self._choice.chosen
        return {**self.counts, "source": "none" if chosen is None else chosen.value}


def _attitude_at(
    attitudes: deque[tuple[int, Quat]], boot_ns: int, tolerance_ns: int
) -> Quat | None:
    """The attitude at boot time ``boot_ns``: exact, slerped between close neighbours, or the
    nearest within the tolerance; ``None`` while none is newer (the pair may still come)."""
    before = after = None
    for item in attitudes:  # in arrival order, which a reordered datagram breaks
        if item[0] <= boot_ns:
            if before is None or item[0] > before[0]:
                before = item
        elif after is None or item[0] < after[0]:
            after = item
    if before is not None and before[0] == boot_ns:
        return before[1]
    if after is None:
        return None
    if before is not None and after[0] - before[0] <= 2 * tolerance_ns:
        return slerp(before[1], after[1], (boot_ns - before[0]) / (after[0] - before[0]))
    near = after if before is None or after[0] - boot_ns < boot_ns - before[0] else before
    return near[1] if abs(near[0] - boot_ns) <= tolerance_ns else None


def _vec(values: Any, limit: float) -> Vec3 | None:
    x, y, z = (float(v) for v in values)
    ok = math.isfinite(x + y + z) and max(abs(x), abs(y), abs(z)) <= limit
    return (x, y, z) if ok else None


def _given(values: Any) -> bool:
    """Some of ``values`` is a number (MAVLink's "unknown" is NaN in every field)."""
    return not all(math.isnan(float(v)) for v in values)


def _quat(values: Any) -> Quat | None:
    w, x, y, z = (float(v) for v in values)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if not math.isfinite(n) or abs(n - 1.0) > 1e-3:
        return None
    return (w / n, x / n, y / n, z / n)


def _failed(msg: Any) -> bool:
    """An ODOMETRY that says its estimate failed, or is less certain than a pose can be."""
    if getattr(msg, "quality", 0) == _ODOMETRY_FAILED:
        return True
    covariance = getattr(msg, "pose_covariance", None) or ()
    for index in _POSITION_VARIANCES:
        if index < len(covariance):
            variance = covariance[index]  # NaN: unknown (MAVLink's "not given")
            if not math.isnan(variance) and not 0.0 <= variance <= MAX_POSITION_VARIANCE_M2:
                return True  # infinite, negative or too large (red team rt15: +-inf, -1)
    return False
