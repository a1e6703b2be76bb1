"""Simulation time -> host time for one RflySim stream: passive, skew-bounded, never fresher.

Each datagram carries its simulation time; the host stamps its arrival with
``time.monotonic_ns()``. ``offset = host_rx - sim`` is the true offset plus a delay that is
never negative, so the mapping follows the **lower envelope** of the offsets. The rules, each
with the attack or fault it answers (docs/world-safety.md):

- **Lock period.** A stream (or a new epoch of it) is ``LOCKING`` until its envelope has held
  within ``jump_threshold_ms`` for ``lock_ms`` of host time. Its first burst may be old
  (a sensor that starts with queued frames): the first sample's offset is then too high, and
  nothing it maps may count until the envelope has settled. Samples mapped while locking are
  not used by the world model.
- **Down at once, except a lone early sample.** A sample below the offset moves it down at
  once (data look older: the safe direction), unless the stream is locked and the sample sits
  more than ``jump_threshold_ms`` below. Then its stamp says it arrived before it was sent:
  one glitched stamp, or a real step ahead. It is an ``OUTLIER`` (dropped by the consumer,
  never the newest simulation time) until samples like it have kept coming for
  ``jump_confirm_ms`` of host time (and five samples); a step confirmed so starts a new epoch
  at the new offset.
- **Up at the skew bound.** A sample above the offset lets it rise by at most
  ``max_skew_ppm`` of the simulation time elapsed, never more: a late packet never makes the
  following ones look fresher than they are.
- **Late streams hold, and recover.** When every sample for ``jump_confirm_ms`` of simulation
  time sits more than ``jump_threshold_ms`` above the offset, the stream arrives later than the
  mapping allows (a latency rise, a host backlog, a simulation that paused without sending:
  one-way stamps cannot tell them apart). The mapping stays where it is and the status is
  ``JUMPED`` (the world HOLDs ``clock_jump``) until the stream is on time again for
  ``jump_confirm_ms`` of simulation time: a hiccup ends, a persistent rise holds. One case is
  told apart: a pause during which datagrams kept coming with the simulation time standing
  still. Those samples were fresh, so the resumed stream starts a new epoch.
- **Restarts.** Simulation time falling back by at most ``reorder_window_ms`` is a reordered
  datagram: mapped with the current offset, it teaches nothing (one that carries the
  discontinuity bit is an outlier: it marks a break already passed). Falling back further is
  a simulation restart: a new epoch. The odometry discontinuity bit starts a new epoch with the
  mapping kept (the pose history breaks; the clock is still good).

One instance per stream, run by the adapter, which copies ``host_ns``, ``epoch`` and ``status``
into each input. It never reads a clock: the shell passes host times in.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

_CONFIRM_SAMPLES = 5  # early samples in a row that confirm a step ahead (with the time span)


class SimClockStatus(Enum):
    LOCKED = "locked"  # the mapping follows the lower envelope within the skew bound
    LOCKING = "locking"  # a new epoch's envelope is still settling: not to be used yet
    JUMPED = "jumped"  # arrivals run later than the mapping allows (until on time again)
    OUTLIER = "outlier"  # this sample's stamp disagrees with its stream: drop it


class SimClockSample(NamedTuple):
    host_ns: int  # the sample's simulation time on the host clock (an outlier: its arrival)
    epoch: int
    status: SimClockStatus
    reason: str | None  # set on the sample that started a new epoch or changed the state


class SimClockStats(NamedTuple):
    epoch: int
    jumps: int
    resets: int
    discontinuities: int
    samples: int
    reordered: int
    outliers: int
    recoveries: int
    offset_ns: float


class SimClockEstimator:
    """Maps one stream's simulation time to the host clock."""

    def __init__(
        self,
        *,
        max_skew_ppm: float = 200.0,
        jump_threshold_ms: float = 20.0,
        jump_confirm_ms: float = 100.0,
        lock_ms: float = 250.0,
        reorder_window_ms: float = 200.0,
    ) -> None:
        for name, value in (
            ("max_skew_ppm", max_skew_ppm),
            ("jump_confirm_ms", jump_confirm_ms),
            ("lock_ms", lock_ms),
            ("reorder_window_ms", reorder_window_ms),
        ):
            if not value >= 0:
                raise ValueError(f"{name}: expected >= 0, got {value!r}")
        if not jump_threshold_ms > 0:
            raise ValueError(f"jump_threshold_ms: expected > 0, got {jump_threshold_ms!r}")
        self._max_skew = max_skew_ppm * 1e-6
        self._threshold_ns = jump_threshold_ms * 1e6
        self._confirm_ns = jump_confirm_ms * 1e6
        self._lock_ns = lock_ms * 1e6
        self._reorder_window_ns = reorder_window_ms * 1e6
        self._started = False
        self._offset_ns = 0.0
        self._last_sim_ns = 0
        self._last_host_ns = 0
        self._epoch = 0
        self._locked = False
        self._lock_since_ns = 0  # host time since which the envelope held within the threshold
        self._lock_offset_ns = 0.0  # the envelope's level at that time
        self._high_since_sim_ns: int | None = None  # start of a stretch above the threshold
        self._high_min_offset_ns = 0.0
        self._late = False  # arrivals confirmed late: JUMPED until on time again
        self._on_time_since_sim_ns: int | None = None  # while late: start of an on-time run
        self._early_since_ns: int | None = None  # host time of the first pending early sample
        self._early_min_offset_ns = 0.0
        self._early_samples = 0
        self._frozen_since_host_ns = 0  # arrival of the first sample at the current sim time
        self._frozen_samples = 0  # repeats of the current sim time
        self._paused = False  # sim time stood still while datagrams kept arriving
        self._jumps = self._resets = self._discontinuities = self._samples = 0
        self._reordered = self._outliers = self._recoveries = 0

    @property
    def epoch(self) -> int:
        return self._epoch

    def stats(self) -> SimClockStats:
        return SimClockStats(
            self._epoch,
            self._jumps,
            self._resets,
            self._discontinuities,
            self._samples,
            self._reordered,
            self._outliers,
            self._recoveries,
            self._offset_ns,
        )

    def to_host_ns(self, sim_time_ns: int) -> int | None:
        """Host time of a simulation time of the current epoch; ``None`` before any sample."""
        return round(sim_time_ns + self._offset_ns) if self._started else None

    def observe(
        self, sim_time_ns: int, host_rx_ns: int, *, discontinuity: bool = False
    ) -> SimClockSample:
        """Add one sample's simulation time and host arrival time; return its host time."""
        self._samples += 1
        if discontinuity:
            self._discontinuities += 1  # counted whether or not the sample is used
        offset_ns = float(host_rx_ns - sim_time_ns)
        reason: str | None = None
        if not self._started:
            self._started = True
            self._anchor(offset_ns, host_rx_ns)
        elif sim_time_ns < self._last_sim_ns:
            back_ns = self._last_sim_ns - sim_time_ns
            if back_ns <= self._reorder_window_ns:
                if discontinuity:  # a break already passed: its pose belongs to no epoch
                    self._outliers += 1
                    return SimClockSample(host_rx_ns, self._epoch, SimClockStatus.OUTLIER, None)
                self._reordered += 1
                host = min(round(sim_time_ns + self._offset_ns), host_rx_ns)
                return SimClockSample(host, self._epoch, self._status(), None)
            self._resets += 1
            reason = f"sim clock reset ({-back_ns / 1e6:.1f} ms)"
            self._new_epoch(offset_ns, host_rx_ns)
        else:
            early = self._early(offset_ns, host_rx_ns)
            if early is not None:
                if early.status is SimClockStatus.OUTLIER:
                    return early
                reason = early.reason
            else:
                self._watch_pause(sim_time_ns, host_rx_ns)
                reason = self._follow(offset_ns, sim_time_ns, host_rx_ns)
        if discontinuity and reason is None:
            self._epoch += 1
            reason = "discontinuity"
        self._last_sim_ns = sim_time_ns
        self._last_host_ns = host_rx_ns
        self._watch_lock(host_rx_ns)
        return SimClockSample(
            round(sim_time_ns + self._offset_ns), self._epoch, self._status(), reason
        )

    def _status(self) -> SimClockStatus:
        if self._late:
            return SimClockStatus.JUMPED
        return SimClockStatus.LOCKED if self._locked else SimClockStatus.LOCKING

    # -- internals -----------------------------------------------------------------------

    def _early(self, offset_ns: float, host_rx_ns: int) -> SimClockSample | None:
        """A locked stream's sample far below the envelope: an outlier until confirmed."""
        if not self._locked or offset_ns >= self._offset_ns - self._threshold_ns:
            if self._early_samples:
                self._outliers += self._early_samples  # the lone early ones were glitches
                self._early_samples = 0
                self._early_since_ns = None
            return None
        if self._early_since_ns is None:
            self._early_since_ns = host_rx_ns
            self._early_min_offset_ns = offset_ns
        self._early_samples += 1
        self._early_min_offset_ns = min(self._early_min_offset_ns, offset_ns)
        if (
            host_rx_ns - self._early_since_ns < self._confirm_ns
            or self._early_samples < _CONFIRM_SAMPLES
        ):
            return SimClockSample(host_rx_ns, self._epoch, SimClockStatus.OUTLIER, None)
        self._jumps += 1
        step_ms = (self._offset_ns - self._early_min_offset_ns) / 1e6
        self._new_epoch(self._early_min_offset_ns, host_rx_ns)
        return SimClockSample(
            host_rx_ns, self._epoch, SimClockStatus.LOCKING, f"sim clock ahead {step_ms:.1f} ms"
        )

    def _follow(self, offset_ns: float, sim_time_ns: int, host_rx_ns: int) -> str | None:
        if sim_time_ns == self._last_sim_ns:
            return None  # a repeat (a duplicate, or a paused simulation): nothing to learn
        elapsed = sim_time_ns - self._last_sim_ns
        ceiling = self._offset_ns + self._max_skew * elapsed
        self._offset_ns = min(offset_ns, ceiling)
        if offset_ns - self._offset_ns <= self._threshold_ns:
            self._high_since_sim_ns = None
            self._paused = False  # running on time again: a later rise is no pause
            return self._recover(sim_time_ns)
        self._on_time_since_sim_ns = None
        if self._late:
            return None  # already holding; the mapping keeps its rate-limited course
        if self._high_since_sim_ns is None:
            self._high_since_sim_ns = sim_time_ns
            self._high_min_offset_ns = offset_ns
            return None
        self._high_min_offset_ns = min(self._high_min_offset_ns, offset_ns)
        if sim_time_ns - self._high_since_sim_ns < self._confirm_ns:
            return None
        self._jumps += 1
        rise_ms = (self._high_min_offset_ns - self._offset_ns) / 1e6
        self._high_since_sim_ns = None
        if self._paused:
            self._paused = False
            self._new_epoch(self._high_min_offset_ns, host_rx_ns)
            return f"sim clock resumed after a pause, jumped +{rise_ms:.1f} ms"
        self._late = True
        return f"sim clock late +{rise_ms:.1f} ms: held until on time again"

    def _recover(self, sim_time_ns: int) -> str | None:
        """While late: on time again for the confirmation span ends the hold."""
        if not self._late:
            return None
        if self._on_time_since_sim_ns is None:
            self._on_time_since_sim_ns = sim_time_ns
            return None
        if sim_time_ns - self._on_time_since_sim_ns < self._confirm_ns:
            return None
        self._late = False
        self._on_time_since_sim_ns = None
        self._recoveries += 1
        return "sim clock on time again"

    def _watch_pause(self, sim_time_ns: int, host_rx_ns: int) -> None:
        """A sim time repeated over more than the jump threshold of arrivals is a pause."""
        if sim_time_ns != self._last_sim_ns:
            self._frozen_samples = 0
            return
        if self._frozen_samples == 0:
            self._frozen_since_host_ns = self._last_host_ns
        self._frozen_samples += 1
        if (
            self._frozen_samples >= 2
            and host_rx_ns - self._frozen_since_host_ns > self._threshold_ns
        ):
            self._paused = True

    def _watch_lock(self, host_rx_ns: int) -> None:
        """Locked once the envelope has held within the threshold for the lock period."""
        if self._locked:
            return
        if self._lock_offset_ns - self._offset_ns > self._threshold_ns:
            self._lock_since_ns = host_rx_ns  # still settling: the period starts again
            self._lock_offset_ns = self._offset_ns
        elif host_rx_ns - self._lock_since_ns >= self._lock_ns:
            self._locked = True

    def _new_epoch(self, offset_ns: float, host_rx_ns: int) -> None:
        self._epoch += 1
        self._late = False
        self._on_time_since_sim_ns = None
        self._anchor(offset_ns, host_rx_ns)

    def _anchor(self, offset_ns: float, host_rx_ns: int) -> None:
        self._offset_ns = offset_ns
        self._high_since_sim_ns = None
        self._early_since_ns = None
        self._early_samples = 0
        self._locked = False
        self._lock_since_ns = host_rx_ns
        self._lock_offset_ns = offset_ns
