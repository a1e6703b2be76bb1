"""The autopilot's boot clock on the host clock, from two-way TIMESYNC exchanges.

The host sends ``TIMESYNC(tc1=0, ts1=t1)`` at host time ``t1``; the autopilot answers with
``tc1`` = its own clock when it handled the request and ``ts1`` echoed; the host reads the
answer at ``t4``. The autopilot's clock at the midpoint of the round trip is ``tc1``, wrong by
at most half the round trip (its asymmetry). Each answer is a sample of the clock core
(:class:`gizmo_core.clock.EpochClock`: remote ``tc1``, host ``(t1 + t4) / 2``), whose rules
are those of every clock here (docs/world-safety.md): autopilot time ``A`` maps to host
``A + offset``, and the offset never moves towards "fresher" (a later host time) faster than
``max_skew_ppm`` within an epoch, while it may move towards "older" at once. What TIMESYNC adds:

- **the one round-trip gate**: only low round trips teach anything. A sample is kept when its
  round trip is at most the least of the last ``rtt_window`` answers (10 s at 10 Hz) plus
  ``rtt_slack_ms``
  (or ``rtt_spread`` of that least, on a slow link), never above ``rtt_ceiling_ms``: a loaded
  host or link delays one direction more than the other. ``stats().rtt_gate_ns`` is the gate;
- **outliers**: a sample more than ``jump_threshold_ms`` older-looking than the mapping is an
  outlier until ``confirm_samples`` in a row agree with it; then it starts a new epoch;
- **a lie that stops**: a two-way sample measures the offset, so a sample fresher than the
  mapping by more than its own and the gate's half round trips can explain (plus 0.5 ms), or
  than ``follow_threshold_ms`` whichever is less, cannot be honest together with it;
  ``confirm_samples`` of those in a row open a new epoch at their oldest-looking level
  (``LatePolicy.FOLLOW``), so an offset once pushed older by false answers comes back after
  the confirmation (0.5 s at 10 Hz), not after the skew bound's creep (75 s for 15 ms);
- **reboots**: the autopilot's clock going back by more than the threshold is a reboot: a new
  epoch, locking again. Each kind of stamp is its own stream (a message id's boot times, the
  TIMESYNC answers' clock), compared only with itself: an autopilot stamps some messages with
  their sample's time (a setpoint's, a range finder's), older than its newest pose by more
  than the threshold and steadily so. A stream must step back twice in a row, the second not
  back above its old level, so that one reordered or late message is not a reboot;
- **the 32-bit boot clock**: ``time_boot_ms`` is a uint32 of milliseconds, wrapping after
  49.7 days while TIMESYNC's clock goes on (:meth:`TimesyncEstimator.boot_ms_ns` unwraps it
  against the mapped clock);
- **lock**: settling until ``lock_samples`` accepted samples of the epoch; nothing is mapped
  for PROCEED before (the world HOLDs ``clock_not_locked``);
- **a lock that ages**: a mapping no accepted answer has refreshed for ``max_unrefreshed_ms``
  (10 s: at the 200 ppm bound, 2 ms of drift) is ``resync`` at that time (``status_at``):
  answers lost, or all slower than the gate, once left it LOCKED for good while the clocks
  drifted apart, and poses and LANDING_TARGET stamps went 60 ms wrong (red team rt12). The
  next accepted answer locks it again.

Pure: every host time is an argument. The I/O side sends the requests, feeds the answers in,
and answers the autopilot's own requests with :meth:`autopilot_now_ns` (in the autopilot's
clock, so its offset to us stays zero) only once locked.
"""

from __future__ import annotations

from collections import deque
from typing import Final, NamedTuple

from gizmo_core.clock import ClockStatus, EpochClock, LatePolicy

_HONEST_SLACK_NS: Final = 500_000  # rounding and the skew within one sample period
BOOT_MS_PERIOD_NS: Final = 2**32 * 1_000_000  # ``time_boot_ms`` (uint32 ms) wraps after 49.7 days
_UNWRAP_AHEAD_NS: Final = (
    1_000_000_000  # a stamp this far ahead of the clock is still this period's
)
_MAX_STREAMS: Final = 64  # stamp streams followed for reboots (message ids: a dialect's few)
TIMESYNC_STREAM: Final = -1  # the TIMESYNC answers' clock, as a stream of stamps


class TimesyncStats(NamedTuple):
    epoch: int
    status: str
    offset_ns: float | None  # autopilot minus host
    rtt_ns: int | None  # the last accepted sample's round trip
    min_rtt_ns: int | None
    skew_ppm: float | None  # the offset's drift over the epoch's accepted samples
    samples: int
    accepted: int
    rejected_rtt: int
    rejected_unknown: int  # answers to no request of ours
    outliers: int
    reboots: int
    rtt_gate_ns: int = 0  # the round trip a sample may have now (adaptive, bounded)


class TimesyncEstimator:
    """Maps one autopilot's boot clock (ns) to the host clock."""

    def __init__(
        self,
        *,
        rtt_slack_ms: float = 1.0,
        rtt_ceiling_ms: float = 100.0,
        rtt_spread: float = 0.25,
        rtt_window: int = 100,
        max_skew_ppm: float = 200.0,
        jump_threshold_ms: float = 20.0,
        follow_threshold_ms: float = 5.0,
        confirm_samples: int = 5,
        lock_samples: int = 5,
        max_pending: int = 32,
        max_unrefreshed_ms: float = 10_000.0,
    ) -> None:
        if not rtt_slack_ms > 0:
            raise ValueError(f"rtt_slack_ms: expected > 0, got {rtt_slack_ms!r}")
        if not max_skew_ppm >= 0:
            raise ValueError(f"max_skew_ppm: expected >= 0, got {max_skew_ppm!r}")
        if not rtt_ceiling_ms >= rtt_slack_ms:
            raise ValueError(
                f"rtt_ceiling_ms: expected >= rtt_slack_ms ({rtt_slack_ms!r}), "
                f"got {rtt_ceiling_ms!r}"
            )
        if not 0 <= rtt_spread <= 1:
            raise ValueError(f"rtt_spread: expected 0..1, got {rtt_spread!r}")
        if not 0 < follow_threshold_ms <= jump_threshold_ms:
            raise ValueError(
                f"follow_threshold_ms: expected 0 < it <= jump_threshold_ms, "
                f"got {follow_threshold_ms!r}"
            )
        self._slack_ns = round(rtt_slack_ms * 1e6)
        self._ceiling_ns = round(rtt_ceiling_ms * 1e6)
        self._spread = rtt_spread
        self._recent_rtts: deque[int] = deque(maxlen=max(1, rtt_window))
        self._threshold_ns = jump_threshold_ms * 1e6
        self._follow_ns = follow_threshold_ms * 1e6
        self._core = EpochClock(
            tolerance_ns=jump_threshold_ms * 1e6,
            late_tolerance_ns=follow_threshold_ms * 1e6,
            max_skew_ppm=max_skew_ppm,
            confirm_samples=confirm_samples,
            confirm_ns=0.0,
            late_after_ns=0.0,
            lock_samples=lock_samples,
            late=LatePolicy.FOLLOW,
            per_sample=True,
        )
        if not max_unrefreshed_ms > 0:
            raise ValueError(f"max_unrefreshed_ms: expected > 0, got {max_unrefreshed_ms!r}")
        self._max_unrefreshed_ns = round(max_unrefreshed_ms * 1e6)
        self._refreshed_ns: int | None = None  # host time of the last accepted sample
        self._max_pending = max_pending
        self._pending: dict[int, int] = {}  # ts1 we sent -> host send time (the same value)
        self._streams: dict[int, int] = {}  # stream -> its newest stamp (ns) this epoch
        self._stepped: set[int] = set()  # streams whose last stamp stepped back (unconfirmed)
        self._last_remote_ns = 0  # the last sample's autopilot time (where offsets are read)
        self._first: tuple[int, int, float] | None = None  # the epoch's first: host, offset
        self._skew_ppm: float | None = None
        self._rtt: int | None = None
        self._min_rtt: int | None = None
        self._samples = self._accepted = self._rejected_rtt = self._rejected_unknown = 0
        self._outliers = self._reboots = 0

    @property
    def status(self) -> ClockStatus:
        """OUTLIER while answers say the autopilot's clock stepped ahead and too few agree
        yet: its stamps would map fresher than they are, so its poses are not used."""
        core = self._core
        return ClockStatus.OUTLIER if core.early_pending else core.status

    def status_at(self, host_ns: int) -> ClockStatus:
        """``status`` at ``host_ns``: a lock no accepted answer refreshed within
        ``max_unrefreshed_ms`` is ``RESYNC`` (its drift is no longer bounded)."""
        status = self.status
        refreshed = self._refreshed_ns
        if status is ClockStatus.LOCKED and (
            refreshed is None or host_ns - refreshed > self._max_unrefreshed_ns
        ):
            return ClockStatus.RESYNC
        return status

    @property
    def epoch(self) -> int:
        return self._core.epoch

    def request(self, host_ns: int) -> int:
        """Note a request sent at ``host_ns``; returns the ``ts1`` to send (the host time)."""
        if len(self._pending) >= self._max_pending:
            del self._pending[next(iter(self._pending))]  # the oldest never came back
        self._pending[host_ns] = host_ns
        return host_ns

    def answer(self, tc1_ns: int, ts1_ns: int, host_rx_ns: int) -> ClockStatus | None:
        """Feed an answer to one of our requests; ``None`` when it is not usable."""
        self._samples += 1
        sent = self._pending.pop(ts1_ns, None)
        if sent is None:
            self._rejected_unknown += 1
            return None
        rtt = host_rx_ns - sent
        if 0 <= rtt <= self._ceiling_ns:
            self._recent_rtts.append(rtt)
        if tc1_ns > 0:
            self.boot_time(tc1_ns, TIMESYNC_STREAM)  # an answer's clock, however slow the trip
        if not 0 <= rtt <= self.rtt_gate_ns or tc1_ns <= 0:
            self._rejected_rtt += 1
            return None
        self._rtt = rtt
        self._min_rtt = rtt if self._min_rtt is None else min(self._min_rtt, rtt)
        core = self._core
        host_ns = (sent + host_rx_ns) // 2
        honest_ns = (rtt + self.rtt_gate_ns) / 2 + _HONEST_SLACK_NS
        core.late_tolerance_ns = min(self._follow_ns, honest_ns)
        reading = core.observe(tc1_ns, host_ns)
        self._last_remote_ns = tc1_ns
        if reading.status is ClockStatus.OUTLIER:
            self._outliers += 1
            return self.status
        self._accepted += 1
        self._refreshed_ns = host_ns
        offset = -reading.offset_ns  # autopilot minus host
        if self._first is None or self._first[0] != core.epoch:
            self._first = (core.epoch, host_ns, offset)
            self._skew_ppm = None
        elif host_ns > self._first[1]:
            self._skew_ppm = (offset - self._first[2]) / (host_ns - self._first[1]) * 1e6
        return self.status

    def restart(self) -> None:
        """Forget the mapping: a new epoch, locking again (another autopilot is now mapped).
        The last one's round trips and outstanding requests go too: a peer with faster
        answers would otherwise gate the new one out for the whole window."""
        self._core.new_epoch()
        self._forget_streams()
        self._recent_rtts.clear()
        self._pending.clear()

    @property
    def rtt_gate_ns(self) -> int:
        """The largest round trip a sample may have now: the least recent round trip plus
        ``rtt_slack_ms`` (or ``rtt_spread`` of it on a slower link), up to the ceiling."""
        if not self._recent_rtts:
            return self._ceiling_ns
        least = min(self._recent_rtts)
        return min(self._ceiling_ns, least + max(self._slack_ns, round(least * self._spread)))

    def boot_time(self, autopilot_ns: int, stream: int) -> None:
        """A stamp of one ``stream`` (a message id's, or :data:`TIMESYNC_STREAM`): that stream
        stepping back by more than the threshold twice in a row, the second time not back
        above its old level, is a reboot."""
        streams = self._streams
        last = streams.get(stream)
        if last is None:
            if len(streams) < _MAX_STREAMS:
                streams[stream] = autopilot_ns
            return
        if autopilot_ns < last - self._threshold_ns:
            if stream not in self._stepped:
                self._stepped.add(stream)  # one late or reordered stamp: wait for the next
                return
            self._reboots += 1
            self._core.new_epoch()
            self._forget_streams()
            # The rebooted autopilot's answers may come slower (red team rt14: 3 ms slower
            # were all gated out until the old round trips aged out, 10 s of HOLD).
            self._recent_rtts.clear()
            return  # the epoch's streams start with their next stamps
        self._stepped.discard(stream)
        if autopilot_ns > last:
            streams[stream] = autopilot_ns

    def _forget_streams(self) -> None:
        self._streams.clear()
        self._stepped.clear()

    def boot_ms_ns(self, boot_ms: int, host_ns: int) -> int:
        """A ``time_boot_ms`` received at ``host_ns`` as boot time in ns: of the values it
        stands for (it wraps every 2^32 ms), the latest not more than 1 s ahead of the
        autopilot's clock as mapped. Before any mapping, as it is (49.7 days of uptime)."""
        ns = boot_ms * 1_000_000
        now = self.to_autopilot_ns(host_ns)
        if now is None:
            return ns
        wraps = (now + _UNWRAP_AHEAD_NS - ns) // BOOT_MS_PERIOD_NS
        return ns + wraps * BOOT_MS_PERIOD_NS if wraps > 0 else ns

    def to_host_ns(self, autopilot_ns: int) -> int | None:
        """Host time of an autopilot time of this epoch; ``None`` before any sample."""
        return self._core.to_host_ns(autopilot_ns)

    def to_autopilot_ns(self, host_ns: int) -> int | None:
        """The autopilot time that maps to ``host_ns`` (the mapping inverted)."""
        core = self._core
        offset = core.offset_ns(self._last_remote_ns)
        if offset is None:
            return None
        guess = host_ns - offset
        at_guess = core.offset_ns(guess)
        assert at_guess is not None
        return round(host_ns - at_guess)

    def autopilot_now_ns(self, host_ns: int) -> int | None:
        """What to answer the autopilot's own TIMESYNC with: its clock now, once locked (and
        the lock refreshed: ``status_at``)."""
        return (
            self.to_autopilot_ns(host_ns) if self.status_at(host_ns) is ClockStatus.LOCKED else None
        )

    def stats(self) -> TimesyncStats:
        core = self._core
        offset = core.offset_ns(self._last_remote_ns)
        return TimesyncStats(
            core.epoch,
            core.status.value,
            None if offset is None else -offset,
            self._rtt,
            self._min_rtt,
            self._skew_ppm,
            self._samples,
            self._accepted,
            self._rejected_rtt,
            self._rejected_unknown,
            self._outliers,
            self._reboots,
            self.rtt_gate_ns,
        )
