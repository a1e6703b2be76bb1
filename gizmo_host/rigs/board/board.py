"""The board's frame numbering and device clock, sans-I/O.

``BoardModel`` numbers frames (the header ``sequence``, wrapping 65535 -> 0), stamps them with
the device clock (``timestamp_ms``, uint32 boot milliseconds, wrapping at 2**32) and restarts
both on ``reset()``. Two clock modes:

- stepped (default): the device clock advances ``period_ms`` per frame, whatever the host does;
- ``live_clock``: the device clock runs with the host clock, ``device = anchor_device +
  (host - anchor_host) * (1 + skew_ppm / 1e6)`` (ns, floored to ms), so it can be skewed
  (``set_skew``), stepped (``jump_clock``) and restarted (``reset``) like a real oscillator.
  Pass the host time as ``now_ns``; without it the injected ``clock`` is read. The first read
  anchors the clock at ``timestamp_ms``, so constructing a model reads nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gizmo_host.wire.protocol import VisionResult
from gizmo_host.wire.results import ResultType

TRACKED_RELATIVE = 0x05  # "detected" on the board
LOST_RELATIVE = 0x06  # "not detected"
SEQUENCE_MODULUS = 1 << 16
TIMESTAMP_MODULUS = 1 << 32


@dataclass(slots=True)
class BoardModel:
    """Frame numbering and the device clock of one emulated board."""

    source_id: int = 1
    result_type: int = ResultType.DETECTOR
    result_id: int = 11
    sequence: int = 0
    timestamp_ms: int = 1000
    period_ms: int = 33
    latency_ms: int = 12
    live_clock: bool = False  # the device clock runs with the host clock instead of period_ms
    clock: Callable[[], int] = time.monotonic_ns  # host clock (ns), read only without now_ns
    boot_host_ms: int | None = None  # host time of device time 0 (live_clock); None: first use
    skew_ppm: float = 0.0  # how much faster than the host the device clock runs (live_clock)
    # The live clock's anchor: device time ``_anchor_device_ns`` at host time ``_anchor_host_ns``.
    _anchor_host_ns: int | None = field(default=None, init=False, repr=False)
    _anchor_device_ns: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.boot_host_ms is not None:
            self._anchor_host_ns = self.boot_host_ms * 1_000_000

    def another_source(self, source_id: int, *, result_type: int, result_id: int = 0) -> BoardModel:
        """A second result stream of the same board: same device clock, its own sequence."""
        other = replace(
            self, source_id=source_id, result_type=result_type, result_id=result_id, sequence=0
        )
        other._anchor_host_ns = self._anchor_host_ns
        other._anchor_device_ns = self._anchor_device_ns
        return other

    # -- the device clock ------------------------------------------------------------------

    def device_ms(self, now_ns: int) -> int:
        """The device clock (uint32 ms) at host time ``now_ns`` (live clock)."""
        return self._device_ns(now_ns) // 1_000_000 % TIMESTAMP_MODULUS

    def _device_ns(self, now_ns: int) -> int:
        if self._anchor_host_ns is None:  # first use: the clock reads timestamp_ms now
            self._anchor_host_ns = now_ns
            self._anchor_device_ns = self.timestamp_ms * 1_000_000
        elapsed_ns = now_ns - self._anchor_host_ns
        return self._anchor_device_ns + round(elapsed_ns * (1.0 + self.skew_ppm * 1e-6))

    def set_skew(self, skew_ppm: float, now_ns: int) -> None:
        """The oscillator's rate changes at ``now_ns``; the device clock stays continuous."""
        if self.live_clock:
            self._anchor_device_ns = self._device_ns(now_ns)
            self._anchor_host_ns = now_ns
        self.skew_ppm = skew_ppm

    def jump_clock(self, delta_ms: int, now_ns: int | None = None) -> None:
        """The device clock steps by ``delta_ms`` (either sign)."""
        if self.live_clock:
            now = self.clock() if now_ns is None else now_ns
            self._anchor_device_ns = self._device_ns(now) + delta_ms * 1_000_000
            self._anchor_host_ns = now
        else:
            self.timestamp_ms = (self.timestamp_ms + delta_ms) % TIMESTAMP_MODULUS

    # -- frames ----------------------------------------------------------------------------

    def next_result(
        self, *, flags: int = TRACKED_RELATIVE, now_ns: int | None = None, **fields: int
    ) -> VisionResult:
        """The next frame's value; the sequence and device clock advance (and wrap).

        ``now_ns``: the host time the live device clock is read at (default: ``clock``).
        """
        if self.live_clock:
            self.timestamp_ms = self.device_ms(self.clock() if now_ns is None else now_ns)
        values = {
            "source_id": self.source_id,
            "result_type": self.result_type,
            "id": self.result_id,
            "sequence": self.sequence,
            "result_sequence": self.sequence,
            "timestamp_ms": self.timestamp_ms,
            "confidence": 87,
            "flags": flags,
            "age_ms": self.latency_ms,
            "x": -125,
            "y": 54,
            "w": 410,
            "h": 360,
        }
        values.update(fields)
        self.sequence = (self.sequence + 1) % SEQUENCE_MODULUS
        self.timestamp_ms = (self.timestamp_ms + self.period_ms) % TIMESTAMP_MODULUS
        return VisionResult(**values)

    def next_frame(self, **fields: int) -> bytes:
        return self.next_result(**fields).encode()

    def reset(self, boot_ms: int = 300, now_ns: int | None = None) -> None:
        """The board restarts: sequence from 0, device clock from ``boot_ms`` (now)."""
        self.sequence = 0
        self.timestamp_ms = boot_ms
        if self.live_clock:
            self._anchor_host_ns = self.clock() if now_ns is None else now_ns
            self._anchor_device_ns = boot_ms * 1_000_000
