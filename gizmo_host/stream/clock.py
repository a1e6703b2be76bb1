"""Device clock -> host clock: an online, passive, minimum-latency (Olson-style) estimator.

The board stamps each result with ``timestamp_ms``, its uint32 boot-millisecond clock; the host
stamps the receive time with ``time.monotonic_ns()``. For every frame the offset
``o = host_rx - device`` is the true clock offset plus a delay that is never negative (UART
serialisation, driver and scheduling latency, the ms floor of the device clock). So the true
offset line lies on the **lower envelope** of the (device time, offset) cloud:

- device time is cut into segments (default 500 ms); each keeps its minimum offset, which sheds
  jitter and late outliers without any statistics about them;
- the skew (the slope of the envelope) is a least-squares fit through the segment minima of the
  last couple of minutes, with segments lying well above the fit discarded, clamped to
  ``max_skew_ppm`` (default 200 ppm) and kept across resets (it is the board's oscillator);
- the phase is the lowest segment minimum of the last few seconds under that slope;
- the known minimum transport delay (35 bytes of serialisation at the baud rate) is subtracted,
  and an integer device tick ``k`` maps from its midpoint ``k + 0.5``.

The uint32 wrap is resolved from host-clock deltas (``tracker.device_clock_advance_ms``), so a
reset is never mistaken for a wrap. It never reads a clock itself: the shell passes host times in.

**The mapping never moves in the direction that makes data look fresher**, except at a new
epoch (a device reset, or ``new_epoch()`` when the link reconnects). With one-way timestamps a
rise in latency (a slow host, a backlog, a delaying adapter) and a device clock stepping back
look the same, and following either would report old data as young. So the published offset
(host minus device) may rise no faster than ``max_skew_ppm`` (the oscillator's drift); it may
fall at once (a frame that arrived before the mapping says it was sent re-fits it earlier:
status ``resync``, event ``PHASE_ERROR``). Two whole segments whose minimum offset lies more than
the phase-error threshold above the published line are a sustained late arrival: status
``jumped`` (event ``CLOCK_JUMP``), which holds every verdict until the next epoch, while capture
times keep their conservative, older mapping.
"""

from __future__ import annotations

import math
from collections import deque
from enum import Enum
from typing import NamedTuple

from gizmo_host.stream.tracker import DEFAULT_MAX_SKEW_PPM, device_clock_advance_ms

UART_BITS_PER_BYTE = 10  # 8N1: start + 8 data + stop
FRAME_BYTES = 35
DEFAULT_PHASE_ERROR_THRESHOLD_MS = 5.0
# A new epoch's mapping is trusted (LOCKED) after this long and 10 samples.
DEFAULT_LOCK_AFTER_MS = 1000.0


def frame_transmit_ns(baudrate: int, frame_bytes: int = FRAME_BYTES) -> int:
    """Time a frame takes on the wire at ``baudrate`` 8N1: the minimum transport delay."""
    return frame_bytes * UART_BITS_PER_BYTE * 1_000_000_000 // baudrate


class ClockStatus(Enum):
    CONVERGING = "converging"  # first epoch, not enough data to trust the mapping yet
    LOCKED = "locked"  # the mapping is within its accuracy target
    RESYNC = "resync"  # after a new epoch or a phase error, re-acquiring the phase
    JUMPED = "jumped"  # data arrives later than the mapping allows, sustained: until a new epoch


class ClockEvent(Enum):
    """What one frame changed in the mapping (typed: the service acts on it)."""

    DEVICE_RESET = "device_reset"  # the device clock restarted: a new epoch
    PHASE_ERROR = "phase_error"  # a frame arrived before it was sent by the line: re-fit earlier
    CLOCK_JUMP = "clock_jump"  # sustained late arrival: status JUMPED, the mapping is kept


_INF = math.inf
_new_tuple = tuple.__new__  # builds a NamedTuple without its Python-level __new__


class ClockSample(NamedTuple):
    """What the estimator made of one frame's ``timestamp_ms``."""

    device_ms: int  # timestamp_ms unwrapped within the current epoch
    epoch: int  # incremented on every device reset; a phase-error resync keeps it
    status: ClockStatus
    event: ClockEvent | None  # set on the frame that changed the mapping's state


_LOCKED, _JUMPED = ClockStatus.LOCKED, ClockStatus.JUMPED
_REFIT_ALWAYS_BELOW = 16  # segments in the window: below this, refit the slope on every one
_REFIT_EVERY = 4  # segments between refits of a longer window


class ClockStats(NamedTuple):
    status: ClockStatus
    epoch: int
    skew_ppm: float
    resets: int
    phase_errors: int
    jumps: int
    samples: int


class _Segment:
    __slots__ = ("index", "min_offset_ms", "x_ms")

    def __init__(self, index: int, x_ms: float, offset_ms: float) -> None:
        self.index = index
        self.x_ms = x_ms
        self.min_offset_ms = offset_ms


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
        if not 0 <= max_skew_ppm <= 10_000:
            raise ValueError(f"max_skew_ppm: expected 0..10000, got {max_skew_ppm!r}")
        if not phase_error_threshold_ms > 0:
            raise ValueError(
                f"phase_error_threshold_ms: expected > 0, got {phase_error_threshold_ms!r}"
            )
        self._max_skew = max_skew_ppm * 1e-6
        self._max_skew_ppm = max_skew_ppm
        self._delay_ms = transport_delay_ns / 1e6
        self._threshold_ms = phase_error_threshold_ms
        self._segment_ms = segment_ms
        self._phase_segments = phase_segments
        self._lock_after_ms = lock_after_ms
        self._lock_min_samples = lock_min_samples
        self._segments: deque[_Segment] = deque(maxlen=window_segments)
        self._skew = 0.0
        self._epoch_start_x_ms = 0
        self._high_segments = 0
        self._closed_since_fit = 0
        self._status = ClockStatus.CONVERGING
        self._epoch = 0
        self._resets = self._phase_errors = self._jumps = self._samples = 0
        self._started = False
        self._last_ts_ms = 0
        self._last_host_ns = 0
        self._last_x_ms = 0
        self._origin_device_ms = 0
        self._origin_host_ns = 0
        self._epoch_samples = 0
        self._phase_ms = math.inf  # the lower envelope's phase under the current slope (raw)
        # The published mapping: host_ms(x) = x * _map_rate + _map_base_ms, from the offset
        # ``_map_offset_ms`` at ``_map_x_ms``, which rises no faster than the skew bound.
        self._map_x_ms = 0.0
        self._map_offset_ms = math.inf
        self._map_rate = 1.0
        self._map_base_ms = 0.0

    @property
    def status(self) -> ClockStatus:
        return self._status

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def skew_ppm(self) -> float:
        return self._skew * 1e6

    def stats(self) -> ClockStats:
        return ClockStats(
            self._status,
            self._epoch,
            self.skew_ppm,
            self._resets,
            self._phase_errors,
            self._jumps,
            self._samples,
        )

    def new_epoch(self) -> None:
        """Start afresh with the next frame (the link reconnected: the board may have rebooted
        or changed while unplugged). The skew is kept: it is the board's oscillator."""
        if self._started:
            self._started = False
            self._epoch += 1

    def observe(
        self, timestamp_ms: int, host_rx_ns: int, *, reset: bool = False, forward: bool = False
    ) -> ClockSample:
        """Add one frame's device timestamp and host receive time.

        ``reset=True`` tells the estimator that the sequence tracker saw a device reset; the
        estimator also detects one itself when the device clock falls back. ``forward=True``
        says the frame's sequence moved forward (in order, or after a gap): its timestamp
        then cannot be earlier than the last one's, so a step back is the device clock
        jumping, known at once rather than after two late segments.
        """
        self._samples += 1
        event: ClockEvent | None = None
        if not self._started:
            self._started = True
            if reset:
                self._resets += 1
                event = ClockEvent.DEVICE_RESET
            self._start_epoch(timestamp_ms, host_rx_ns)
        else:
            advance = device_clock_advance_ms(
                self._last_ts_ms,
                timestamp_ms,
                host_rx_ns - self._last_host_ns,
                max_skew_ppm=self._max_skew_ppm,
            )
            if reset or advance is None:
                event = ClockEvent.DEVICE_RESET
                self._resets += 1
                self._epoch += 1
                self._start_epoch(timestamp_ms, host_rx_ns)
            else:
                self._last_x_ms += advance
                if forward and advance < -self._threshold_ms and self._status is not _JUMPED:
                    # A monotonic clock stepped back: captures would map too early (onto the
                    # wrong pose). The mapping stays (never fresher); verdicts hold.
                    event = ClockEvent.CLOCK_JUMP
                    self._jumps += 1
                    self._status = _JUMPED
        self._last_ts_ms = timestamp_ms
        self._last_host_ns = host_rx_ns
        x_ms = self._last_x_ms
        offset_ms = (host_rx_ns - self._origin_host_ns) / 1e6 - x_ms
        phase_ms = offset_ms - self._skew * x_ms  # this sample's phase under the current slope
        if self._phase_ms != _INF and phase_ms - self._phase_ms < -self._threshold_ms:
            # Received before it was sent, by the current line: the phase moved down. Moving
            # the mapping earlier makes data look older: safe at once.
            event = event or ClockEvent.PHASE_ERROR
            self._phase_errors += 1
            self._resync()
        segments = self._segments
        if segments and segments[-1].index == x_ms // self._segment_ms:
            # The current segment (the usual case): keep its minimum and the phase.
            current = segments[-1]
            if offset_ms < current.min_offset_ms:
                current.min_offset_ms, current.x_ms = offset_ms, x_ms
            self._phase_ms = min(self._phase_ms, phase_ms)
        else:
            event = self._add(x_ms, offset_ms) or event
        self._publish(x_ms)
        self._epoch_samples += 1
        if (
            self._status is not _LOCKED
            and self._status is not _JUMPED
            and self._epoch_samples >= self._lock_min_samples
            and x_ms - self._epoch_start_x_ms >= self._lock_after_ms
        ):
            self._status = _LOCKED
        return _new_tuple(
            ClockSample, (self._origin_device_ms + x_ms, self._epoch, self._status, event)
        )

    def tick_to_host_ns(self, device_tick_ms: int) -> int | None:
        """Host time at which the current epoch's device clock read the integer millisecond
        ``device_tick_ms``, taken at the tick's midpoint (the tick covers [k, k + 1) ms)."""
        if self._map_offset_ms == _INF:
            return None
        x_ms = device_tick_ms + 0.5 - self._origin_device_ms
        return self._origin_host_ns + round((x_ms * self._map_rate + self._map_base_ms) * 1e6)

    # -- internals -----------------------------------------------------------------------

    def _publish(self, x_ms: float) -> None:
        """Move the published offset to the envelope's, but never up faster than the skew
        bound: an upward move makes every capture time later, so data looks fresher."""
        if self._phase_ms == _INF:
            return
        at_ms = x_ms if x_ms > self._map_x_ms else self._map_x_ms
        offset_ms = self._phase_ms + self._skew * at_ms
        if self._map_offset_ms != _INF:
            ceiling_ms = self._map_offset_ms + self._max_skew * (at_ms - self._map_x_ms)
            offset_ms = min(offset_ms, ceiling_ms)
        self._map_x_ms, self._map_offset_ms = at_ms, offset_ms
        self._map_rate = 1.0 + self._skew
        self._map_base_ms = offset_ms - self._skew * at_ms - self._delay_ms

    def _published_offset_ms(self, x_ms: float) -> float:
        return self._map_offset_ms + self._skew * (x_ms - self._map_x_ms)

    def _start_epoch(self, timestamp_ms: int, host_rx_ns: int) -> None:
        self._origin_device_ms = timestamp_ms
        self._origin_host_ns = host_rx_ns
        self._last_x_ms = 0
        self._map_x_ms, self._map_offset_ms = 0.0, math.inf  # a new epoch may map anywhere
        self._high_segments = 0
        if self._status is _JUMPED:
            self._status = ClockStatus.RESYNC
        self._resync()

    def _resync(self) -> None:
        """Forget the phase history (the skew is kept: it is the board's oscillator)."""
        self._segments.clear()
        self._phase_ms = math.inf
        self._epoch_samples = 0
        self._epoch_start_x_ms = self._last_x_ms
        if self._samples > 1 and self._status is not _JUMPED:
            self._status = ClockStatus.RESYNC

    def _add(self, x_ms: float, offset_ms: float) -> ClockEvent | None:
        """Put a sample in a new segment; returns ``CLOCK_JUMP`` when the second segment in a
        row closes above the published line by more than the threshold."""
        index = int(x_ms // self._segment_ms)
        segments = self._segments
        if segments and index < segments[-1].index:
            return None  # a reordered frame from a closed segment: nothing new to learn
        event = None
        if segments and self._map_offset_ms != _INF:
            closed = segments[-1]
            residual = closed.min_offset_ms - self._published_offset_ms(closed.x_ms)
            self._high_segments = self._high_segments + 1 if residual > self._threshold_ms else 0
            if self._high_segments >= 2 and self._status is not _JUMPED:
                # Two whole segments late: latency rose, or the device clock stepped back.
                # Either way the mapping stays where it is (never fresher) and verdicts hold.
                event = ClockEvent.CLOCK_JUMP
                self._jumps += 1
                self._status = _JUMPED
        if len(segments) >= 3:
            # A full window holds minutes of minima: refit it every few segments, not on
            # every one (the slope moves slowly; a fit walks the whole window).
            self._closed_since_fit += 1
            if len(segments) < _REFIT_ALWAYS_BELOW or self._closed_since_fit >= _REFIT_EVERY:
                self._closed_since_fit = 0
                self._fit_skew()
        segments.append(_Segment(index, x_ms, offset_ms))
        self._phase_ms = min(self._recent_phases())
        return event

    def _recent_phases(self) -> list[float]:
        recent = list(self._segments)[-self._phase_segments :]
        return [s.min_offset_ms - self._skew * s.x_ms for s in recent]

    def _fit_skew(self) -> None:
        points = [(s.x_ms, s.min_offset_ms) for s in self._segments]
        if points[-1][0] - points[0][0] < 4 * self._segment_ms:
            return
        for _ in range(2):
            slope, intercept = _least_squares(points)
            kept = [(x, o) for x, o in points if o - (intercept + slope * x) <= 1.0]
            if len(kept) < 3 or len(kept) == len(points):
                break
            points = kept
        slope, _ = _least_squares(points)
        self._skew = max(-self._max_skew, min(self._max_skew, slope))


def _least_squares(points: list[tuple[float, float]]) -> tuple[float, float]:
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    if sxx == 0:
        return 0.0, mean_y
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx
    return slope, mean_y - slope * mean_x
