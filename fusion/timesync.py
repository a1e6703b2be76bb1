"""The autopilot's boot clock on the host clock, from two-way TIMESYNC exchanges.

The host sends ``TIMESYNC(tc1=0, ts1=t1)`` at host time ``t1``; the autopilot answers with
``tc1`` = its own clock when it handled the request and ``ts1`` echoed; the host reads the
answer at ``t4``. The autopilot's clock at the midpoint of the round trip is ``tc1``, so
``offset = tc1 - (t1 + t4) / 2`` (autopilot minus host) is wrong by at most half the round trip
(its asymmetry). Like PX4's own filter, only low round trips teach anything, and the mapping
keeps the safety rules of the other clocks here (docs/world-safety.md):

- **never fresher**: autopilot time ``A`` maps to host ``A - offset``. The offset may rise at
  once (data look older), but falls (data look fresher) by at most ``max_skew_ppm`` of the
  host time elapsed;
- **outliers**: a sample that would move the offset by more than ``jump_threshold_ms`` is an
  outlier until ``confirm_samples`` in a row agree with it; then it starts a new epoch;
- **a lie that stops**: a sample fresher than the published offset by more than the two
  samples' half round trips can explain (after the skew allowance) cannot be honest together
  with it: ``confirm_samples`` of those in a row start a new epoch at the oldest-looking of
  them, so an offset once pushed up by false answers is not kept for the ``max_skew_ppm``
  fall (75 s for 15 ms) but for the confirmation (0.5 s at 10 Hz) and the relock;
- **reboots**: the autopilot's clock going back (any message's boot time, or a TIMESYNC
  answer) by more than the threshold is a reboot: a new epoch, locking again;
- **lock**: ``LOCKING`` until ``lock_samples`` low-round-trip samples of the epoch were
  accepted; nothing is mapped for PROCEED before (the world HOLDs ``clock_not_locked``);
- **the round-trip gate adapts, bounded**: a sample is kept when its round trip is at most
  ``max_rtt_ms`` (PX4's own 10 ms) or, on a slower link, within ``rtt_spread`` of the least
  round trip of the last ``rtt_window`` answers (plus 1 ms), never above ``rtt_ceiling_ms``.
  A serial or radio link whose every round trip is 16-32 ms still locks, on its fastest
  answers, and a sample's error (half its asymmetry) stays within half the gate's width above
  the least round trip; a fast link keeps the fixed 10 ms gate. ``stats().rtt_gate_ns`` is
  the gate now.

Pure: every host time is an argument. The I/O side sends the requests, feeds the answers in,
and answers the autopilot's own requests with :meth:`autopilot_now_ns` (in the autopilot's
clock, so its offset to us stays zero) only once locked.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from .simclock import SimClockStatus

_HONEST_SLACK_NS = 500_000  # rounding and the skew within one sample period


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
        max_rtt_ms: float = 10.0,
        rtt_ceiling_ms: float = 100.0,
        rtt_spread: float = 0.25,
        rtt_window: int = 50,
        max_skew_ppm: float = 200.0,
        jump_threshold_ms: float = 20.0,
        confirm_samples: int = 5,
        lock_samples: int = 5,
        max_pending: int = 32,
    ) -> None:
        if not max_rtt_ms > 0:
            raise ValueError(f"max_rtt_ms: expected > 0, got {max_rtt_ms!r}")
        if not max_skew_ppm >= 0:
            raise ValueError(f"max_skew_ppm: expected >= 0, got {max_skew_ppm!r}")
        if not rtt_ceiling_ms >= max_rtt_ms:
            raise ValueError(
                f"rtt_ceiling_ms: expected >= max_rtt_ms ({max_rtt_ms!r}), got {rtt_ceiling_ms!r}"
            )
        if not 0 <= rtt_spread <= 1:
            raise ValueError(f"rtt_spread: expected 0..1, got {rtt_spread!r}")
        self._max_rtt_ns = round(max_rtt_ms * 1e6)
        self._ceiling_ns = round(rtt_ceiling_ms * 1e6)
        self._spread = rtt_spread
        self._recent_rtts: deque[int] = deque(maxlen=max(1, rtt_window))
        self._max_skew = max_skew_ppm * 1e-6
        self._threshold_ns = jump_threshold_ms * 1e6
        self._confirm = max(1, confirm_samples)
        self._lock = max(1, lock_samples)
        self._max_pending = max_pending
        self._pending: dict[int, int] = {}  # ts1 we sent -> host send time (the same value)
        self._epoch = 0
        self._offset_ns: float | None = None
        self._offset_host_ns = 0  # host time of the last offset update
        self._epoch_accepted = 0
        self._first: tuple[int, float] | None = None  # (host ns, offset) of the epoch's first
        self._candidates: list[float] = []  # offsets of outliers in a row
        self._falls: list[float] = []  # offsets too fresh for the published one, in a row
        self._offset_rtt_ns = 0  # the round trip of the sample the published offset is from
        self._last_autopilot_ns: int | None = None
        self._rtt: int | None = None
        self._min_rtt: int | None = None
        self._skew_ppm: float | None = None
        self._samples = self._accepted = self._rejected_rtt = self._rejected_unknown = 0
        self._outliers = self._reboots = 0

    @property
    def status(self) -> SimClockStatus:
        if self._offset_ns is None or self._epoch_accepted < self._lock:
            return SimClockStatus.LOCKING
        return SimClockStatus.LOCKED

    @property
    def epoch(self) -> int:
        return self._epoch

    def request(self, host_ns: int) -> int:
        """Note a request sent at ``host_ns``; returns the ``ts1`` to send (the host time)."""
        if len(self._pending) >= self._max_pending:
            del self._pending[next(iter(self._pending))]  # the oldest never came back
        self._pending[host_ns] = host_ns
        return host_ns

    def answer(self, tc1_ns: int, ts1_ns: int, host_rx_ns: int) -> SimClockStatus | None:
        """Feed an answer to one of our requests; ``None`` when it is not usable."""
        self._samples += 1
        sent = self._pending.pop(ts1_ns, None)
        if sent is None:
            self._rejected_unknown += 1
            return None
        rtt = host_rx_ns - sent
        if 0 <= rtt <= self._ceiling_ns:
            self._recent_rtts.append(rtt)
        if not 0 <= rtt <= self.rtt_gate_ns or tc1_ns <= 0:
            self._rejected_rtt += 1
            return None
        self._rtt = rtt
        self._min_rtt = rtt if self._min_rtt is None else min(self._min_rtt, rtt)
        self.boot_time(tc1_ns, host_rx_ns)
        self._take(tc1_ns - (sent + host_rx_ns) / 2, host_rx_ns, rtt)
        return self.status

    @property
    def rtt_gate_ns(self) -> int:
        """The largest round trip a sample may have now: ``max_rtt_ms``, or on a slower link
        the least recent round trip plus ``rtt_spread`` of it and 1 ms, up to the ceiling."""
        if not self._recent_rtts:
            return self._max_rtt_ns
        least = min(self._recent_rtts)
        adaptive = least + round(least * self._spread) + 1_000_000
        return min(self._ceiling_ns, max(self._max_rtt_ns, adaptive))

    def boot_time(self, autopilot_ns: int, host_rx_ns: int) -> None:
        """Any message's boot time: the autopilot's clock going back is a reboot."""
        last = self._last_autopilot_ns
        if last is not None and autopilot_ns < last - self._threshold_ns:
            self._reboots += 1
            self._new_epoch()
        if self._last_autopilot_ns is None or autopilot_ns > self._last_autopilot_ns:
            self._last_autopilot_ns = autopilot_ns

    def _take(self, offset_ns: float, host_ns: int, rtt_ns: int) -> None:
        published = self._offset_ns
        if published is None:
            self._set(offset_ns, host_ns, rtt_ns)
            return
        if abs(offset_ns - published) > self._threshold_ns:
            self._candidates.append(offset_ns)
            if len(self._candidates) < self._confirm:
                self._outliers += 1
                return
            spread = max(self._candidates) - min(self._candidates)
            if spread > self._threshold_ns:  # they disagree among themselves too: keep waiting
                self._candidates.pop(0)
                self._outliers += 1
                return
            self._restart(max(self._candidates), host_ns, rtt_ns)  # the oldest-looking
            return
        self._candidates.clear()
        if offset_ns >= published:
            self._falls.clear()
            self._set(offset_ns, host_ns, rtt_ns)  # older: at once
            return
        floor = published - self._max_skew * (host_ns - self._offset_host_ns)
        if offset_ns < floor - (rtt_ns + self._offset_rtt_ns) / 2 - _HONEST_SLACK_NS:
            self._falls.append(offset_ns)
            if len(self._falls) >= self._confirm:
                self._restart(max(self._falls), host_ns, rtt_ns)
                return
        else:
            self._falls.clear()
        if offset_ns >= floor:
            self._set(offset_ns, host_ns, rtt_ns)
        else:
            self._set(floor, host_ns, self._offset_rtt_ns)

    def _restart(self, offset_ns: float, host_ns: int, rtt_ns: int) -> None:
        """A confirmed step: a new epoch from ``offset_ns`` (read before the epoch clears the
        samples that confirmed it)."""
        self._new_epoch()
        self._set(offset_ns, host_ns, rtt_ns)

    def _set(self, offset_ns: float, host_ns: int, rtt_ns: int) -> None:
        self._offset_ns = offset_ns
        self._offset_host_ns = host_ns
        self._offset_rtt_ns = rtt_ns
        self._accepted += 1
        self._epoch_accepted += 1
        if self._first is None:
            self._first = (host_ns, offset_ns)
        elif host_ns > self._first[0]:
            self._skew_ppm = (offset_ns - self._first[1]) / (host_ns - self._first[0]) * 1e6

    def _new_epoch(self) -> None:
        self._epoch += 1
        self._offset_ns = None
        self._epoch_accepted = 0
        self._first = None
        self._skew_ppm = None
        self._candidates.clear()
        self._falls.clear()
        self._last_autopilot_ns = None

    def restart(self) -> None:
        """Forget the mapping: a new epoch, locking again (another autopilot is now mapped)."""
        self._new_epoch()

    def to_host_ns(self, autopilot_ns: int) -> int | None:
        """Host time of an autopilot time of this epoch; ``None`` before any sample."""
        return None if self._offset_ns is None else round(autopilot_ns - self._offset_ns)

    def to_autopilot_ns(self, host_ns: int) -> int | None:
        return None if self._offset_ns is None else round(host_ns + self._offset_ns)

    def autopilot_now_ns(self, host_ns: int) -> int | None:
        """What to answer the autopilot's own TIMESYNC with: its clock now, once locked."""
        return self.to_autopilot_ns(host_ns) if self.status is SimClockStatus.LOCKED else None

    def stats(self) -> TimesyncStats:
        return TimesyncStats(
            self._epoch,
            self.status.value,
            self._offset_ns,
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
