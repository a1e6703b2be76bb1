"""Simulation time -> host time for one pose stream: passive, skew-bounded, never fresher.

Each CopterSim pose carries its simulation time; the host stamps its arrival with
``time.monotonic_ns()``. ``offset = host_rx - sim`` is the true offset plus a delay that is
never negative, so the mapping follows the **lower envelope** of the offsets:

- a sample below the current offset moves the offset down at once. That makes data look
  older, which is the safe direction;
- a sample above it lets the offset rise by at most ``max_skew_ppm`` of the simulation time
  elapsed, never more. A late packet therefore never makes the following ones look fresher
  than they are (the safety rule of the live link, applied to the sim clock);
- when every sample for ``jump_confirm_ms`` of simulation time sits more than
  ``jump_threshold_ms`` above the rate-limited offset, the poses arrive later than the mapping
  allows. With one-way stamps a rise in latency (a slow network, a host backlog) and a
  simulation that paused without sending look the same, so the mapping stays where it is and
  the status is ``JUMPED`` until the simulation restarts (its time falls back; an odometry
  discontinuity does not end it): the world HOLDs (``clock_jump``) rather than present poses
  hundreds of milliseconds old as current. One case is told apart: a pause
  during which datagrams kept coming with the simulation time standing still (at least two
  repeats over more than ``jump_threshold_ms`` of host time). Those samples were fresh, so the
  resumed stream starts a **new epoch** at the lowest offset of the late stretch and reports
  ``JUMPED`` for ``jump_hold_ms`` only;
- simulation time falling back by less than ``reorder_window_ms`` is a reordered datagram: it
  is mapped with the current offset and teaches nothing. Falling back further, or for
  ``restart_samples`` samples in a row, is a simulation restart: a new epoch, also ``JUMPED``;
- the odometry discontinuity bit starts a new epoch with the mapping kept.

One instance per stream, run by the adapter, which copies ``host_ns``, ``epoch`` and ``status``
into each :class:`~fusion.inputs.PoseSample`. It never reads a clock: the shell passes host
times in.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class SimClockStatus(Enum):
    LOCKED = "locked"  # the mapping follows the lower envelope within the skew bound
    JUMPED = "jumped"  # arrivals run late (until a restart), or a new epoch is < hold old


class SimClockSample(NamedTuple):
    host_ns: int  # the sample's simulation time on the host clock
    epoch: int
    status: SimClockStatus
    reason: str | None  # set on the sample that started a new epoch


class SimClockStats(NamedTuple):
    epoch: int
    jumps: int
    resets: int
    discontinuities: int
    samples: int
    reordered: int
    offset_ns: float


class SimClockEstimator:
    """Maps one pose stream's simulation time to the host clock."""

    def __init__(
        self,
        *,
        max_skew_ppm: float = 200.0,
        jump_threshold_ms: float = 20.0,
        jump_confirm_ms: float = 100.0,
        jump_hold_ms: float = 1000.0,
        reorder_window_ms: float = 200.0,
        restart_samples: int = 3,
    ) -> None:
        for name, value in (
            ("max_skew_ppm", max_skew_ppm),
            ("jump_confirm_ms", jump_confirm_ms),
            ("jump_hold_ms", jump_hold_ms),
            ("reorder_window_ms", reorder_window_ms),
        ):
            if not value >= 0:
                raise ValueError(f"{name}: expected >= 0, got {value!r}")
        if not jump_threshold_ms > 0:
            raise ValueError(f"jump_threshold_ms: expected > 0, got {jump_threshold_ms!r}")
        self._max_skew = max_skew_ppm * 1e-6
        self._jump_threshold_ns = jump_threshold_ms * 1e6
        self._jump_confirm_ns = jump_confirm_ms * 1e6
        self._jump_hold_ns = round(jump_hold_ms * 1e6)
        if restart_samples < 1:
            raise ValueError(f"restart_samples: expected >= 1, got {restart_samples!r}")
        self._reorder_window_ns = reorder_window_ms * 1e6
        self._restart_samples = restart_samples
        self._late_run = 0  # consecutive samples behind the newest simulation time
        self._started = False
        self._offset_ns = 0.0
        self._last_sim_ns = 0
        self._epoch = 0
        self._jumped_until_ns = 0
        self._high_since_sim_ns: int | None = None  # start of a stretch above the threshold
        self._high_min_offset_ns = 0.0
        self._last_host_ns = 0
        self._frozen_since_host_ns = 0  # arrival of the first sample at the current sim time
        self._frozen_samples = 0  # repeats of the current sim time
        self._paused = False  # sim time stood still while datagrams kept arriving
        self._late_until_epoch = False  # arrivals rose past the threshold: JUMPED until an epoch
        self._jumps = self._resets = self._discontinuities = self._samples = 0
        self._reordered = 0

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
        offset = float(host_rx_ns - sim_time_ns)
        reason: str | None = None
        if not self._started:
            self._started = True
            self._anchor(offset)
        elif sim_time_ns < self._last_sim_ns:
            back_ns = self._last_sim_ns - sim_time_ns
            self._late_run += 1
            late = back_ns <= self._reorder_window_ns and self._late_run < self._restart_samples
            if late and not discontinuity:
                self._reordered += 1
                return SimClockSample(
                    round(sim_time_ns + self._offset_ns),
                    self._epoch,
                    self._status(host_rx_ns),
                    None,
                )
            self._resets += 1
            reason = f"sim clock reset ({-back_ns / 1e6:.1f} ms)"
            self._new_epoch(offset, host_rx_ns)
        else:
            self._watch_pause(sim_time_ns, host_rx_ns)
            reason = self._follow(offset, sim_time_ns, host_rx_ns)
        self._late_run = 0
        if discontinuity:
            self._discontinuities += 1
            if reason is None:
                self._epoch += 1
                reason = "discontinuity"
        self._last_sim_ns = sim_time_ns
        self._last_host_ns = host_rx_ns
        return SimClockSample(
            round(sim_time_ns + self._offset_ns), self._epoch, self._status(host_rx_ns), reason
        )

    def _status(self, host_rx_ns: int) -> SimClockStatus:
        if self._late_until_epoch or host_rx_ns < self._jumped_until_ns:
            return SimClockStatus.JUMPED
        return SimClockStatus.LOCKED

    # -- internals -----------------------------------------------------------------------

    def _follow(self, offset: float, sim_time_ns: int, host_rx_ns: int) -> str | None:
        if sim_time_ns == self._last_sim_ns:
            return None  # a repeat (a duplicate, or a paused simulation): nothing to learn
        elapsed = max(0, sim_time_ns - self._last_sim_ns)
        ceiling = self._offset_ns + self._max_skew * elapsed
        if offset <= ceiling:
            self._offset_ns = offset
        else:
            self._offset_ns = ceiling
        if offset - self._offset_ns <= self._jump_threshold_ns:
            self._high_since_sim_ns = None
            if sim_time_ns > self._last_sim_ns:
                self._paused = False  # running on time again: a later rise is no pause
            return None
        if self._late_until_epoch:
            return None  # already holding; the mapping keeps its rate-limited course
        if self._high_since_sim_ns is None:
            self._high_since_sim_ns = sim_time_ns
            self._high_min_offset_ns = offset
            return None
        self._high_min_offset_ns = min(self._high_min_offset_ns, offset)
        if sim_time_ns - self._high_since_sim_ns < self._jump_confirm_ns:
            return None
        self._jumps += 1
        rise_ms = (self._high_min_offset_ns - self._offset_ns) / 1e6
        if self._paused:
            self._paused = False
            self._new_epoch(self._high_min_offset_ns, host_rx_ns)
            return f"sim clock resumed after a pause, jumped +{rise_ms:.1f} ms"
        self._late_until_epoch = True
        self._high_since_sim_ns = None
        return f"sim clock late +{rise_ms:.1f} ms: held until a new epoch"

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
            and host_rx_ns - self._frozen_since_host_ns > self._jump_threshold_ns
        ):
            self._paused = True

    def _new_epoch(self, offset: float, host_rx_ns: int) -> None:
        self._epoch += 1
        self._late_until_epoch = False
        self._jumped_until_ns = host_rx_ns + self._jump_hold_ns
        self._anchor(offset)

    def _anchor(self, offset: float) -> None:
        self._offset_ns = offset
        self._high_since_sim_ns = None
