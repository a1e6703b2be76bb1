"""Device clock -> host clock: the board's ``timestamp_ms`` as samples of the clock core.

The board stamps each result with ``timestamp_ms``, its uint32 boot-millisecond clock; the host
stamps the receive time with ``time.monotonic_ns()``. The offset ``host_rx - device`` is the true
offset plus a delay that is never negative (UART serialisation, driver and scheduling latency,
the ms floor of the device clock), so the mapping is the lower envelope of the offsets, and
everything the mapping promises (never fresher within an epoch, the skew bound, the lock, jumps
and epochs) is :class:`gizmo_core.clock.EpochClock`'s. This adapter adds what is the board's:

- the uint32 wrap, resolved from host-clock deltas (``tracker.device_clock_advance_ms``), so a
  reset is never mistaken for a wrap; a device clock step on a frame whose sequence moved
  forward is a step (its signed distance), never a reset;
- device resets (from the sequence tracker, or the clock falling back) and reconnections
  (``new_epoch``) open an epoch; the skew is kept (it is the board's oscillator), so a new
  epoch locks after a few consistent frames (the first waits ``lock_after_ms``: the skew is
  not known yet);
- a step back seen on an in-order frame is the clock, not the latency: JUMPED at once, then an
  epoch at the new level once a run of frames agrees (``step=True`` to the core);
- frames all late for 500 ms with no step in the stamps (a latency rise, a host backlog) keep
  the mapping: JUMPED for three more frames over 66 ms, then an epoch that keeps it
  (``LatePolicy.ACCEPT``): ages stay true or larger, and the HOLD ends. The skew is still
  learned across those epochs, so a resonator drifting up to ``max_skew_ppm`` is followed; one
  drifting slower than that bound is JUMPED for good (``stats().skew_beyond_bound``);
- the known minimum transport delay (35 bytes of serialisation at the baud rate) is subtracted,
  and an integer device tick ``k`` maps from its midpoint ``k + 0.5``; a frame is never mapped
  later than its own arrival allows.

It never reads a clock itself: the shell passes host times in.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from gizmo_core.clock import ClockEvent, ClockStatus, EpochClock, LatePolicy
from gizmo_host.stream.tracker import (
    ADVANCE_TOLERANCE_MS,
    DEFAULT_MAX_SKEW_PPM,
    TIMESTAMP_MODULUS,
    clock_step_ms,
    device_clock_advance_ms,
)

UART_BITS_PER_BYTE: Final = 10  # 8N1: start + 8 data + stop
FRAME_BYTES: Final = 35
DEFAULT_PHASE_ERROR_THRESHOLD_MS: Final = 5.0
# The first epoch's mapping is trusted (LOCKED) after this long and 10 frames; later epochs
# (the skew known) after RELOCK_FRAMES frames over RELOCK_MS.
DEFAULT_LOCK_AFTER_MS: Final = 500.0
RELOCK_FRAMES: Final = 3
RELOCK_MS: Final = 66.0
CONFIRM_FRAMES: Final = 3  # frames in a row that confirm a step (with CONFIRM_MS of host time)
CONFIRM_MS: Final = 66.0  # (three frames at 30 Hz span 66.7 ms)
LATE_AFTER_MS: Final = 500.0  # late frames for this long (device time): JUMPED (a loaded host's
# jitter makes every frame late for a few hundred milliseconds now and then)

__all__ = [
    "DEFAULT_LOCK_AFTER_MS",
    "DEFAULT_PHASE_ERROR_THRESHOLD_MS",
    "ClockEvent",
    "ClockSample",
    "ClockStats",
    "ClockStatus",
    "DeviceClockEstimator",
    "frame_transmit_ns",
]


def frame_transmit_ns(baudrate: int, frame_bytes: int = FRAME_BYTES) -> int:
    """Time a frame takes on the wire at ``baudrate`` 8N1: the minimum transport delay."""
    return frame_bytes * UART_BITS_PER_BYTE * 1_000_000_000 // baudrate


_DEVICE_RESET: Final = ClockEvent.DEVICE_RESET
_OUTLIER: Final = ClockStatus.OUTLIER


class ClockSample(NamedTuple):
    """What the estimator made of one frame's ``timestamp_ms``."""

    device_ms: int  # timestamp_ms unwrapped within the current epoch
    epoch: int  # incremented on every device reset, reconnection and confirmed step
    status: ClockStatus
    event: ClockEvent | None  # set on the frame that changed the mapping's state


# ``observe_frame``: device_ms, epoch, status and event as in ``ClockSample``, then the
# capture time on the host clock (None while nothing maps).
FrameTimes = tuple[int, int, ClockStatus, ClockEvent | None, int | None]


class ClockStats(NamedTuple):
    status: ClockStatus
    epoch: int
    skew_ppm: float  # the board's clock rate above the host's
    resets: int
    phase_errors: int
    jumps: int
    samples: int
    steps: int  # epochs opened by a confirmed step or latency change
    recoveries: int  # JUMPED -> LOCKED without a new epoch
    # the board's clock runs slower than ``max_skew_ppm`` lets the mapping follow: JUMPED
    # (HOLD ``clock_jump``) from its next late run on, until it is within the bound again
    skew_beyond_bound: bool = False


class DeviceClockEstimator:
    """Maps one board's device clock to the host clock. One instance per link (per board)."""

    def __init__(
        self,
        *,
        max_skew_ppm: float = DEFAULT_MAX_SKEW_PPM,
        transport_delay_ns: int = 0,
        phase_error_threshold_ms: float = DEFAULT_PHASE_ERROR_THRESHOLD_MS,
        segment_ms: float = 500.0,
        window_segments: int = 240,
        phase_segments: int = 8,
        lock_after_ms: float = DEFAULT_LOCK_AFTER_MS,
        lock_min_samples: int = 10,
    ) -> None:
        if not phase_error_threshold_ms > 0:
            raise ValueError(
                f"phase_error_threshold_ms: expected > 0, got {phase_error_threshold_ms!r}"
            )
        self._core = EpochClock(
            tolerance_ns=phase_error_threshold_ms * 1e6,
            max_skew_ppm=max_skew_ppm,
            confirm_samples=CONFIRM_FRAMES,
            confirm_ns=CONFIRM_MS * 1e6,
            late_after_ns=LATE_AFTER_MS * 1e6,
            lock_samples=RELOCK_FRAMES,
            lock_ns=RELOCK_MS * 1e6,
            first_lock_samples=lock_min_samples,
            first_lock_ns=lock_after_ms * 1e6,
            late=LatePolicy.ACCEPT,
            segment_ns=segment_ms * 1e6,
            window_segments=window_segments,
            phase_segments=phase_segments,
        )
        self._max_skew_ppm = max_skew_ppm
        self._delay_ns = transport_delay_ns
        self._threshold_ms = phase_error_threshold_ms
        self._started = False
        self._resets = 0
        self._last_ts_ms = 0
        self._last_host_ns = 0
        self._x_ms = 0  # device time unwrapped within the epoch, from its first frame
        self._origin_device_ms = 0
        self._status = ClockStatus.CONVERGING  # the last frame's (OUTLIER while one pends)
        self._own_offset_ns: float | None = None  # the last frame's own, when below the line

    @property
    def status(self) -> ClockStatus:
        """The mapping's status; OUTLIER while the last frame was early beyond the threshold
        (a step ahead not yet confirmed: verdicts hold)."""
        return self._status

    @property
    def epoch(self) -> int:
        return self._core.epoch

    @property
    def skew_ppm(self) -> float:
        """How much faster than the host's the board's clock runs, in ppm (+80: its crystal
        gains 80 µs a second), the sign of ``emulate.skew_ppm``. The mapping's own slope is
        the other way round: the offset host - device falls by that much per device second."""
        slope = self._core.skew_ppm * 1e-6  # d(host - device) / d(device)
        return -slope / (1.0 + slope) * 1e6

    def stats(self) -> ClockStats:
        core = self._core
        return ClockStats(
            self._status,
            core.epoch,
            self.skew_ppm,
            self._resets,
            core.phase_errors,
            core.jumps,
            core.samples,
            core.epochs,
            core.recoveries,
            core.beyond_bound,
        )

    def new_epoch(self) -> None:
        """Start afresh with the next frame (the link reconnected: the board may have rebooted
        or changed while unplugged). The skew is kept: it is the board's oscillator."""
        self._started = False
        self._core.new_epoch()

    def observe(
        self, timestamp_ms: int, host_rx_ns: int, *, reset: bool = False, forward: bool = False
    ) -> ClockSample:
        """Add one frame's device timestamp and host receive time.

        ``reset=True`` tells the estimator that the sequence tracker saw a device reset; the
        estimator also detects one itself when the device clock falls back without the
        sequence moving forward. ``forward=True`` says the frame's sequence moved forward
        (in order, or after a gap): its timestamp cannot be earlier than the last one's, so
        a step back is the device clock stepping, known at once.
        """
        device_ms, epoch, status, event, _ = self.observe_frame(
            timestamp_ms, 0, host_rx_ns, reset, forward
        )
        return ClockSample(device_ms, epoch, status, event)

    def observe_frame(
        self, timestamp_ms: int, age_ms: int, host_rx_ns: int, reset: bool, forward: bool
    ) -> FrameTimes:
        """``observe`` and then ``tick_to_host_ns(device_ms - age_ms)`` (the capture time) in
        one call, as a plain tuple: the pipeline's per-frame path."""
        event: ClockEvent | None = None
        step = False
        if not self._started or reset:
            if reset:
                self._resets += 1
                event = _DEVICE_RESET
                self._core.new_epoch()
            self._begin(timestamp_ms)
        else:
            last_ts_ms = self._last_ts_ms
            ahead_ms = (timestamp_ms - last_ts_ms) % TIMESTAMP_MODULUS
            if ahead_ms <= ADVANCE_TOLERANCE_MS:  # the usual small step forward: no step back
                self._x_ms += ahead_ms
            else:  # the host clock decides
                advance = device_clock_advance_ms(
                    last_ts_ms,
                    timestamp_ms,
                    host_rx_ns - self._last_host_ns,
                    max_skew_ppm=self._max_skew_ppm,
                )
                if advance is None and forward:
                    # A step (or a delivery the host read late): the sequence says it is later.
                    advance = clock_step_ms(last_ts_ms, timestamp_ms)
                if advance is None:  # the device clock restarted
                    self._resets += 1
                    event = _DEVICE_RESET
                    self._core.new_epoch()
                    self._begin(timestamp_ms)
                else:
                    self._x_ms += advance
                    step = forward and advance < -self._threshold_ms
        self._last_ts_ms = timestamp_ms
        self._last_host_ns = host_rx_ns
        x_ms = self._x_ms
        core = self._core
        offset_ns, epoch, status, core_event, _ = (
            core.observe(x_ms * 1_000_000, host_rx_ns, step=True)
            if step
            else core.observe(x_ms * 1_000_000, host_rx_ns)
        )
        self._status = status
        # Only an early frame (an outlier) is mapped below the published line, by its arrival.
        own = self._own_offset_ns = offset_ns if status is _OUTLIER else None
        # tick_to_host_ns(origin + x_ms - age_ms)
        tick_ns = (x_ms - age_ms) * 1_000_000 + 500_000
        offset = core.offset_ns(tick_ns)
        capture_ns = None
        if offset is not None:
            if own is not None and own < offset:
                offset = own
            capture_ns = round(tick_ns + offset) - self._delay_ns
        return (self._origin_device_ms + x_ms, epoch, status, event or core_event, capture_ns)

    def tick_to_host_ns(self, device_tick_ms: int) -> int | None:
        """Host time at which the current epoch's device clock read the integer millisecond
        ``device_tick_ms``, taken at the tick's midpoint (the tick covers [k, k + 1) ms), less
        the transport delay; never later than the last frame's own arrival allows."""
        remote_ns = (device_tick_ms - self._origin_device_ms) * 1_000_000 + 500_000
        offset = self._core.offset_ns(remote_ns)
        if offset is None:
            return None
        own = self._own_offset_ns
        if own is not None and own < offset:
            offset = own
        return round(remote_ns + offset) - self._delay_ns

    def _begin(self, timestamp_ms: int) -> None:
        self._started = True
        self._origin_device_ms = timestamp_ms
        self._x_ms = 0
