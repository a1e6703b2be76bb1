"""The host settings a capture carries, so that its replay computes what the live host did.

A capture's output depends on the TTLs, the clock model, the silence timeout and the verdict
selector as much as on its bytes; the recorder writes them in the ``gizmo-host.settings``
metadata record (one JSON value per key, as MCAP metadata is text) and offline replay builds
the same ``Host`` from them (``gizmo_host.app.offline_replay.host_config``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from gizmo_core import Selector
from gizmo_host.errors import CaptureError
from gizmo_host.jsonl import json_text
from gizmo_host.stream.clock import DEFAULT_LOCK_AFTER_MS, DEFAULT_PHASE_ERROR_THRESHOLD_MS
from gizmo_host.stream.store import DEFAULT_RESET_HOLD_MS, DEFAULT_TTL_MS
from gizmo_host.stream.tracker import DEFAULT_MAX_SKEW_PPM


@dataclass(frozen=True, slots=True)
class HostSettings:
    """What decides the host's JSON output for a given input (defaults: ``gizmo-host run``'s)."""

    serial_path: str = "/dev/gizmo0"
    baudrate: int = 115200
    silent_after_s: float = 1.0
    transport_delay_ns: int | None = None  # None: a frame's time on the wire at ``baudrate``
    max_skew_ppm: float = DEFAULT_MAX_SKEW_PPM
    phase_error_threshold_ms: float = DEFAULT_PHASE_ERROR_THRESHOLD_MS
    lock_after_ms: float = DEFAULT_LOCK_AFTER_MS  # a capture before the key: the default
    ttl_ms: float = DEFAULT_TTL_MS
    ttl_ms_by_type: tuple[tuple[int, float], ...] = ()
    reset_hold_ms: float = DEFAULT_RESET_HOLD_MS
    verdict_interval_s: float = 1.0
    stats_interval_s: float = 10.0  # 0: no stats lines but the last
    selector: Selector = field(default_factory=Selector)

    def __post_init__(self) -> None:
        for name in ("silent_after_s", "ttl_ms", "verdict_interval_s", "baudrate"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")
        for name in ("stats_interval_s", "reset_hold_ms", "max_skew_ppm", "lock_after_ms"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: expected a finite number >= 0, got {value!r}")

    def to_metadata(self) -> dict[str, str]:
        """One JSON text per setting (MCAP metadata maps strings to strings)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "selector":
                value = value.to_dict()
            elif f.name == "ttl_ms_by_type":
                value = {str(k): v for k, v in value}
            out[f.name] = json_text(value)
        return out

    @classmethod
    def from_metadata(cls, data: Mapping[str, str], where: str) -> HostSettings:
        """The settings in a capture's metadata; keys it does not know are ignored (a newer
        recorder), a value of the wrong kind is a ``CaptureError`` naming ``where`` and key."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in data:
                continue
            try:
                values[f.name] = _parse(f.name, json.loads(data[f.name]))
            except (ValueError, TypeError, KeyError, OverflowError, RecursionError) as exc:
                raise CaptureError(f"{where}: setting {f.name}: {exc}") from None
        try:
            return cls(**values)
        except (ValueError, OverflowError) as exc:  # OverflowError: an integer of 400 digits
            raise CaptureError(f"{where}: setting {exc}") from None


def _parse(name: str, value: Any) -> Any:
    if name == "serial_path":
        return _typed(value, str)
    if name == "baudrate":
        return _typed(value, int)
    if name == "transport_delay_ns":  # a 401-digit one overflowed its ms (rt59)
        if value is not None and not -(2**63) <= _typed(value, int) < 2**63:
            raise ValueError("expected a 64-bit integer of nanoseconds")
        return value
    if name == "selector":
        keys = ("source_id", "result_type", "id")
        if not isinstance(value, dict) or set(value) - set(keys):
            raise ValueError(f"expected an object with keys {', '.join(keys)}, got {value!r}")
        return Selector(**{k: _optional_int(value.get(k)) for k in keys})
    if name == "ttl_ms_by_type":
        if not isinstance(value, dict):
            raise ValueError(f"expected an object of result_type -> ms, got {value!r}")
        return tuple(sorted((int(k), _number(v)) for k, v in value.items()))
    return _number(value)


def _typed(value: Any, kind: type) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"expected {kind.__name__}, got {value!r}")
    return value


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(_typed(value, int))


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)
