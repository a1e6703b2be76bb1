"""The published line: one epoch's remote time -> host time, never rising faster than the skew.

An origin (the epoch's first sample), the lower envelope of the samples' offsets
(:mod:`.envelope`) and the line published from it: an offset at one remote time, sloped by the
envelope's skew. It follows the envelope down at once (data look older: safe) and up no faster
than ``max_skew_ppm`` of the remote time elapsed (the oscillators' drift), so a late sample
never makes later data look fresher. Which samples reach the envelope, and when the line starts
again at a new origin, is :class:`~gizmo_core.clock.mapping.EpochClock`'s, built on this one.

Pure: every time is an argument. Remote times are ns; ``x`` is remote time since the origin.
"""

from __future__ import annotations

import math
from typing import Final

from gizmo_core.clock.envelope import Envelope

_INF: Final = math.inf


class PublishedLine:
    """The line an epoch's samples publish (see the module docstring); nothing maps before
    the envelope's first sample."""

    def __init__(
        self,
        *,
        max_skew_ppm: float,
        segment_ns: float,
        window_segments: int,
        phase_segments: int,
        learn_skew: bool,
        per_sample: bool,
    ) -> None:
        """``per_sample``: every sample counts on its own (no segments, no skew fit): the
        offset drops to any lower sample at once and rises towards the latest at the bound."""
        if per_sample:
            segment_ns, window_segments, phase_segments, learn_skew = 1.0, 1, 1, False
        if not 0 <= max_skew_ppm <= 10_000:
            raise ValueError(f"max_skew_ppm: expected 0..10000, got {max_skew_ppm!r}")
        self._max_skew = max_skew_ppm * 1e-6
        self._env = Envelope(
            segment_ns=segment_ns,
            window_segments=window_segments,
            phase_segments=phase_segments,
            max_skew=self._max_skew,
            learn_skew=learn_skew,
        )
        self._origin_remote = self._origin_host = 0
        # The published line: offset ``_map_offset`` at ``_map_x``, slope the envelope's skew.
        self._map_x = 0.0
        self._map_offset = _INF

    @property
    def skew_ppm(self) -> float:
        return self._env.skew * 1e6

    @property
    def beyond_bound(self) -> bool:
        """The fitted skew says the remote clock runs slower than the bound lets the line
        follow (see :mod:`.envelope`)."""
        return self._env.beyond

    def offset_ns(self, remote_ns: int | float) -> float | None:
        """The published offset (host minus remote) at ``remote_ns``; None before a sample."""
        if self._map_offset == _INF:
            return None
        x = remote_ns - self._origin_remote
        return (
            self._map_offset
            + self._env.skew * (x - self._map_x)
            + self._origin_host
            - self._origin_remote
        )

    def to_host_ns(self, remote_ns: int | float) -> int | None:
        offset = self.offset_ns(remote_ns)
        return None if offset is None else round(remote_ns + offset)

    def _reorigin(self, remote_ns: int, host_ns: int) -> None:
        """Start the line again at this sample: nothing maps until the envelope's next one."""
        self._origin_remote, self._origin_host = remote_ns, host_ns
        self._map_x, self._map_offset = 0.0, _INF

    def _publish(self, x: float) -> None:
        """Move the published offset to the envelope's, never up faster than the skew bound:
        an upward move makes every mapped time later, so data would look fresher."""
        env = self._env
        if env.phase == _INF:
            return
        at = x if x > self._map_x else self._map_x
        level = env.phase + env.skew * at
        if self._map_offset != _INF:
            ceiling = self._map_offset + self._max_skew * (at - self._map_x)
            level = min(level, ceiling)
        self._map_x, self._map_offset = at, level
