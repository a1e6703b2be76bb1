"""Simulation time -> host time for one RflySim stream: samples of the clock core.

Each datagram carries its simulation time; the host stamps its arrival with
``time.monotonic_ns()``. What the mapping promises (never fresher within an epoch, the skew
bound, the lock, jumps and epochs) is :class:`gizmo_core.clock.EpochClock`'s, run with the stream's
settings (docs/world-safety.md):

- **Lock period.** A stream, or a new epoch of it, is settling until its envelope has held
  within ``jump_threshold_ms`` for ``lock_ms`` of host time (a sensor that starts with queued
  frames would otherwise set the mapping from its oldest one). Samples mapped meanwhile are not
  used by the world model. Held both ways: late samples do not count, and late ones that a
  resumed pause vouches for settle again at their level (a pause while the stream settled
  held ``clock_jump`` for good, rt36).
- **Outliers.** On a locked stream a sample more than ``jump_threshold_ms`` early is an
  ``OUTLIER`` (mapped to its arrival, dropped by the consumer, never the newest time) until
  five like it over ``jump_confirm_ms`` of host time confirm a step ahead: a new epoch there.
- **Drift.** The mapping follows a simulation time running up to ``max_skew_ppm`` (200 ppm)
  slower than the host's, or any amount faster; one running slower than that falls behind and
  holds ``clock_jump`` (its late samples never move the mapping while it holds).
- **Late streams hold, and recover** (``LatePolicy.HOLD``). Samples all later than the
  threshold for ``jump_confirm_ms`` of simulation time: ``JUMPED`` (the world HOLDs
  ``clock_jump``) until on time again for as long; a persistent rise keeps holding (one-way
  stamps cannot tell it from a simulation that paused without sending). One case is told
  apart: a pause during which datagrams kept coming with the simulation time standing still
  (one repeat will do: a 30 Hz stream repeats once in a 40 ms stall). Those were fresh, so the
  resumed stream starts a new epoch at its new level, if it is late by no more than the pause
  shows beyond the stream's usual standstill (``_watch_pause``) plus two sendings plus the
  threshold (red team rt22: a 50 ms standstill followed by a path 300 ms slower was
  followed, and poses 300 ms old PROCEEDed as current). The period is learned from the steps
  of sim time (``_learn_period``), from 1 Hz to the fastest stream.
  A path that copies datagrams and delays the stream can show a pause that never was: the
  rule's limit (docs/world-safety.md).
- **Restarts and reordering** are the adapter's: simulation time falling back by at most
  ``reorder_window_ms`` is a reordered datagram (mapped with the current offset, learning
  nothing; one carrying the discontinuity bit is an outlier: it marks a break already
  passed); further back is a restart, a new epoch. The odometry discontinuity bit starts a new
  epoch with the mapping kept (the pose history breaks; the clock is still good).

One instance per stream, run by the adapter, which copies ``host_ns``, ``epoch`` and ``status``
into each input. It never reads a clock: the shell passes host times in.
"""

from __future__ import annotations

from collections import deque
from typing import Final, NamedTuple

from gizmo_core.clock import ClockEvent, ClockStatus, EpochClock, LatePolicy

_CONFIRM_SAMPLES: Final = 5  # early samples in a row that confirm a step ahead (with the time span)
# A simulation time may run this much slower than the host's and be followed. It is also how
# fast a latency that creeps up by less than ``jump_threshold_ms`` at a time is followed, and
# one-way stamps cannot tell the two apart: a host falling behind its receive queue by 2 ms a
# second would, at 5000 ppm, have its poses look 120 ms fresher than they are after a minute
# (a placement 1.2 m off at 10 m/s). A lockstep simulator running 0.1 % slow therefore holds
# ``clock_jump`` (docs/world-safety.md).
SIM_MAX_SKEW_PPM: Final = 200.0
_OUTLIER: Final = ClockStatus.OUTLIER
# The stream's period (``_learn_period``), from its last new sim times: at most 1 s (1 Hz,
# the slowest odometry rate the settings take).
_MAX_PERIOD_NS: Final = 1_000_000_000
_PERIOD_SAMPLES: Final = 32
_STANDSTILL_SAMPLES: Final = 9
_COUNT_SLACK: Final = 1.1


_new_tuple: Final = tuple.__new__  # builds a NamedTuple without its Python-level __new__


class SimClockSample(NamedTuple):
    host_ns: int  # the sample's simulation time on the host clock (an outlier: its arrival)
    epoch: int
    status: ClockStatus
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
        max_skew_ppm: float = SIM_MAX_SKEW_PPM,
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
        self._core = EpochClock(
            tolerance_ns=jump_threshold_ms * 1e6,
            max_skew_ppm=max_skew_ppm,
            confirm_samples=_CONFIRM_SAMPLES,
            confirm_ns=jump_confirm_ms * 1e6,
            lock_samples=1,
            lock_ns=lock_ms * 1e6,
            late=LatePolicy.HOLD,
            per_sample=True,
        )
        self._threshold_ns = jump_threshold_ms * 1e6
        self._reorder_window_ns = reorder_window_ms * 1e6
        self._started = False
        self._last_sim_ns = 0
        self._last_host_ns = 0
        self._period_ns = 0.0  # the sender's period (``_learn_period``)
        self._steps: deque[int] = deque(maxlen=_PERIOD_SAMPLES)  # sim time from one to the next
        self._arrivals: deque[int] = deque(maxlen=_PERIOD_SAMPLES + 1)  # their arrivals
        self._send_ns = 0.0  # how often the sender sends (``_end_standstill``)
        # The lateness the newest pause (sim time standing still while datagrams kept
        # arriving) vouches for; 0: none since the stream was last on time.
        self._paused_ns = 0.0
        self._repeats = 0  # the current sim time's repeats since it came
        self._frozen_from_ns = 0  # its arrival
        # The last sim times before this one, [sim time, first arrival, last arrival,
        # repeats]: a simulation whose time moves in ticks coarser than its sending repeats
        # every tick, and only a standstill longer than usual is a pause (``_usual``).
        self._closed: deque[list[int]] = deque(maxlen=_STANDSTILL_SAMPLES)
        self._usual_ns = 0.0  # what their repeats showed: the upper quartile
        self._vouched_ns = 0.0  # the current standstill's vouch (nonzero: it is a pause)
        self._resets = self._discontinuities = self._samples = 0
        self._reordered = self._outliers = 0

    @property
    def epoch(self) -> int:
        return self._core.epoch

    @property
    def status(self) -> ClockStatus:
        return self._core.status

    def stats(self) -> SimClockStats:
        core = self._core
        offset = core.offset_ns(self._last_sim_ns) if self._started else None
        return SimClockStats(
            core.epoch,
            core.jumps + core.epochs,
            self._resets,
            self._discontinuities,
            self._samples,
            self._reordered,
            self._outliers + core.outliers,
            core.recoveries,
            0.0 if offset is None else offset,
        )

    def to_host_ns(self, sim_time_ns: int) -> int | None:
        """Host time of a simulation time of the current epoch; ``None`` before any sample."""
        return self._core.to_host_ns(sim_time_ns)

    def observe(
        self, sim_time_ns: int, host_rx_ns: int, *, discontinuity: bool = False
    ) -> SimClockSample:
        """Add one sample's simulation time and host arrival time; return its host time."""
        self._samples += 1
        if discontinuity:
            self._discontinuities += 1  # counted whether or not the sample is used
        core = self._core
        reason: str | None = None
        if self._started and sim_time_ns < self._last_sim_ns:
            back_ns = self._last_sim_ns - sim_time_ns
            if back_ns <= self._reorder_window_ns:
                if discontinuity:  # a break already passed: its pose belongs to no epoch
                    self._outliers += 1
                    return SimClockSample(host_rx_ns, core.epoch, _OUTLIER, None)
                self._reordered += 1
                self._late_repeat(sim_time_ns, host_rx_ns)
                mapped = core.to_host_ns(sim_time_ns)
                host = host_rx_ns if mapped is None else min(mapped, host_rx_ns)
                return SimClockSample(host, core.epoch, core.status, None)
            self._resets += 1
            reason = f"sim clock reset ({-back_ns / 1e6:.1f} ms)"
            core.new_epoch()
            self._paused_ns = 0.0
        elif self._started and sim_time_ns == self._last_sim_ns:
            # A repeat (a duplicate, or a paused simulation): nothing to learn.
            self._watch_pause(host_rx_ns)
            self._last_host_ns = host_rx_ns
            mapped = core.to_host_ns(sim_time_ns)
            host = host_rx_ns if mapped is None else min(mapped, host_rx_ns)
            return SimClockSample(host, core.epoch, core.status, None)
        if self._vouched_ns:  # a pause ends: what came late since it began, it explains
            core.explain_late(self._last_sim_ns)
        if self._started and reason is None and (not self._vouched_ns or self._unsure()):
            # A step at the stream's own pace; or one after a pause while the period is
            # not known (its steps are, once two came: rt39, coarse ticks whose first tick
            # passed for a pause never learned it)
            self._learn_period(sim_time_ns - self._last_sim_ns, host_rx_ns)
        if self._started and reason is None:
            self._end_standstill()
        self._repeats, self._vouched_ns = 0, 0.0
        self._frozen_from_ns = host_rx_ns
        self._started = True
        follow_ns = self._paused_ns + self._threshold_ns if self._paused_ns else 0.0
        reading = core.observe(sim_time_ns, host_rx_ns, follow_ns=follow_ns)
        if reading.status is _OUTLIER:
            return SimClockSample(host_rx_ns, reading.epoch, _OUTLIER, None)
        if reason is None and reading.event is not None:  # the usual sample has neither
            reason = self._reason(reading.event, reading.jump_ns)
        if not core.late_pending:
            self._paused_ns = 0.0  # on time again: a later rise is no pause
        if discontinuity and reason is None:
            core.new_epoch(keep_mapping=True)
            reason = "discontinuity"
        self._last_sim_ns = sim_time_ns
        self._last_host_ns = host_rx_ns
        return _new_tuple(
            SimClockSample,
            (round(sim_time_ns + reading.offset_ns), core.epoch, reading.status, reason),
        )

    def _reason(self, event: ClockEvent | None, jump_ns: float) -> str | None:
        if event is ClockEvent.NEW_EPOCH:
            if jump_ns < 0:
                return f"sim clock ahead {-jump_ns / 1e6:.1f} ms"
            self._paused_ns = 0.0
            return f"sim clock resumed after a pause, jumped +{jump_ns / 1e6:.1f} ms"
        if event is ClockEvent.CLOCK_JUMP:
            return f"sim clock late +{jump_ns / 1e6:.1f} ms: held until on time again"
        if event is ClockEvent.ON_TIME:
            return "sim clock on time again"
        return None

    def _learn_period(self, step_ns: int, host_rx_ns: int) -> None:
        """The sender's period: the median of its last 32 steps of sim time, or the mean
        spacing of their arrivals if that is less (a sender that stamps its sending time
        jitters both ways: a lower quartile learned 9.3 ms at 100 Hz, and a genuine pause
        held for good, red team rt30). The path can shape arrivals (hold every other datagram
        and they come in pairs, twice the period apart; rt27) but not the steps of sim time,
        and a gap is one step of many; a simulation running faster than the host has longer
        steps than its arrivals. Only a path that drops most
        datagrams for seconds lengthens both, and the stream it leaves has that period."""
        steps, arrivals = self._steps, self._arrivals
        steps.append(min(step_ns, _MAX_PERIOD_NS))
        arrivals.append(host_rx_ns)
        period = float(sorted(steps)[len(steps) // 2])
        if len(arrivals) > 1:
            period = min(period, (host_rx_ns - arrivals[0]) / (len(arrivals) - 1))
        self._period_ns = period

    def _end_standstill(self) -> None:
        """A sim time's datagrams are over (a new one came): how many repeats it had and what
        they showed join the stream's usual. A simulation whose time moves in ticks coarser
        than it sends repeats each time as often (red team rt28): it sends that many times
        more often than its period."""
        self._closed.append(
            [self._last_sim_ns, self._frozen_from_ns, self._last_host_ns, self._repeats]
        )
        self._usual()

    def _late_repeat(self, sim_time_ns: int, host_rx_ns: int) -> None:
        """A repeat of an earlier sim time that came after a later one is still one of its
        repeats (red team rt29: a path that held each tick's repeats past the next tick hid
        them all, and the sender seemed to send once a tick: a delay passed for a pause)."""
        for closed in self._closed:
            if closed[0] == sim_time_ns:
                closed[2] = max(closed[2], host_rx_ns)
                closed[3] += 1
                self._usual()
                return

    def _usual(self) -> None:
        """The sending rate (the period over the upper quartile of the number of sendings of
        the last sim times: a path dropping some repeats in five ticks once lowered a median,
        and a delay passed for a pause, red team rt30) and the usual standstill: the upper
        quartile of what their repeats showed (a tick holding one sending more than most is
        usual too)."""
        closed = self._closed
        counts = sorted([c[3] for c in closed])
        send = self._send_ns = self._period_ns / (counts[3 * len(counts) // 4] + 1)
        shown = sorted([min(c[3] * send, c[2] - c[1]) if c[3] else 0.0 for c in closed])
        self._usual_ns = shown[3 * len(shown) // 4]

    def _shown(self, last_ns: int) -> float:
        """What the current sim time's repeats show, the last of them at ``last_ns``: the lesser
        of their number times the sending rate (with ``_COUNT_SLACK``) and the host time they
        span."""
        if not self._repeats:
            return 0.0
        span = last_ns - self._frozen_from_ns
        if self._unsure():
            # No sending rate yet (CopterSim paused when the host started, or before its
            # second step: red teams rt36, rt39): their span alone, as a stream delayed from
            # its first datagram on cannot be told from one that is not, either. (Once the
            # rate is known, the count bounds it: a span alone let coarse ticks vouch for a
            # path's delay, rt28.)
            return span
        # The count bound's slack: a sending rate learned from jittered stamps errs by a few
        # per cent, which a long pause multiplies (rt30: 1-3 s pauses at 100 Hz, stamps
        # jittered by 3 ms, held for good); a stretching path gains at most that share.
        bound = _COUNT_SLACK * self._repeats * self._send_ns
        return min(bound, span)

    def _unsure(self) -> bool:
        """Fewer than two steps of sim time seen: no sending rate to bound a pause by (one
        step may be a part of a period: a pause that began between two datagrams)."""
        return len(self._steps) < 2

    def _watch_pause(self, host_rx_ns: int) -> None:
        """Repeats of a sim time are a pause once what they show (``_shown``) exceeds what the
        stream's standstills usually show by half the jump threshold. It may have begun just
        after the datagram before the first of that time and lasted until the next was due:
        it vouches for that excess plus two steps (a sending, or what of a coarse tick its
        repeats do not usually cover), and no more than the newest pause does.

        Each bound answers a path (red teams rt26, rt27): one that holds each repeat a little
        longer than the one before stretches the span, not the number; one that copies
        datagrams adds to the number, not the span; a stream delivered in bursts, or stalled
        on the way and delivered at once, keeps both (rt28: a stall that restarted the count
        held a genuine pause for good). A simulation whose time moves in ticks coarser than it
        sends shows a standstill every tick: only one longer than usual is a pause (rt28: a
        path that held back one tick had the ticks after it vouch for the delay, PROCEEDs
        0.8 m off). Pauses are not added: copies of datagrams that look like many small
        pauses never excuse a delay (rt25)."""
        self._repeats += 1
        usual, send, period = self._usual_ns, self._send_ns, self._period_ns
        need = 0.5 * self._threshold_ns  # one repeat at 50 Hz shows 20 ms
        if usual > need:  # coarse ticks: one may hold a sending more than most (a period
            usual = max(usual, period - send)  # that is no multiple of the sendings')
            need += send
        shown = self._shown(host_rx_ns) - usual
        if shown > need:
            # Where in a step it began and ended: a step less what repeats usually cover
            # (a coarse tick's repeats cover all of it but one sending)
            step = max(send, period - usual)
            if self._unsure():  # no period yet: the repeats' own spacing
                step = max(step, (host_rx_ns - self._frozen_from_ns) / self._repeats)
            self._paused_ns = self._vouched_ns = shown + 2 * step
