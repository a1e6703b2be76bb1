"""The live service's settings as small frozen values: what the link and the pipeline need.

The settings table (``gizmo_host.app.settings``, behind TOML, flags and docs/settings.md) reads
their defaults from here; those the per-frame pipeline shares are the stream layer's
constants (``DEFAULT_TTL_MS``, ``DEFAULT_MAX_SKEW_PPM``, ...), written once there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gizmo_host.stream.clock import (
    DEFAULT_LOCK_AFTER_MS,
    DEFAULT_PHASE_ERROR_THRESHOLD_MS,
    frame_transmit_ns,
)
from gizmo_host.stream.pipeline import FramePipeline
from gizmo_host.stream.store import DEFAULT_RESET_HOLD_MS, DEFAULT_TTL_MS
from gizmo_host.stream.tracker import DEFAULT_MAX_SKEW_PPM


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """One serial path and how the link treats it (``SerialLink``)."""

    path: str
    baudrate: int = 115200
    silent_after_s: float = 1.0  # SILENT after this long without a valid frame
    backoff_min_s: float = 0.1  # reopen backoff, doubling up to backoff_max_s
    backoff_max_s: float = 2.0


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """The per-frame pipeline's settings (``FramePipeline``) and the verdict period."""

    ttl_ms: float = DEFAULT_TTL_MS
    ttl_ms_by_type: Mapping[int, float] = field(default_factory=dict)
    reset_hold_ms: float = DEFAULT_RESET_HOLD_MS
    max_skew_ppm: float = DEFAULT_MAX_SKEW_PPM
    phase_error_threshold_ms: float = DEFAULT_PHASE_ERROR_THRESHOLD_MS
    lock_after_ms: float = DEFAULT_LOCK_AFTER_MS
    transport_delay_ns: int | None = None  # None: 35 bytes' time at the link's baud rate
    verdict_interval_s: float = 1.0  # watched verdicts are re-published this often

    def transport_delay(self, baudrate: int) -> int:
        if self.transport_delay_ns is None:
            return frame_transmit_ns(baudrate)
        return self.transport_delay_ns

    def build(self, baudrate: int) -> FramePipeline:
        """A fresh pipeline with these settings, for a link at ``baudrate``."""
        return FramePipeline(
            ttl_ms=self.ttl_ms,
            ttl_ms_by_type=dict(self.ttl_ms_by_type),
            reset_hold_ms=self.reset_hold_ms,
            max_skew_ppm=self.max_skew_ppm,
            phase_error_threshold_ms=self.phase_error_threshold_ms,
            transport_delay_ns=self.transport_delay(baudrate),
            lock_after_ms=self.lock_after_ms,
        )
