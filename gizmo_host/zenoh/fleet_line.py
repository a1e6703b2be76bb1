"""A fleet peer's world line, checked before anything uses it: what the fleet view keeps of it.

A line comes from the network, so nothing in it is trusted: every number is finite (``NaN``,
``Infinity`` and a ``1e400`` that overflows are refused by the parser itself, anywhere in the
line), every field the view uses has its type and range checked, and text is bounded. A line
that fails is a ``BadLine`` naming the field, which the view counts and drops; it never
reaches a row. What is kept is a ``WorldLine``: the few fields a fleet operator needs (the
verdict, the vehicle's position, the selected target's compact form), not the whole line.

``TARGET_FIELDS`` is the selected target's compact form, one row per field with its check:
a field added to the world's targets reaches the fleet rows by adding its row here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, NamedTuple

PROCEED, HOLD = "PROCEED", "HOLD"
MAX_NS = 2**63 - 1  # host_ns, wall_ns: CLOCK_MONOTONIC and CLOCK_REALTIME as int64
MAX_VALIDITY_NS = 3600 * 10**9  # a line valid for more than an hour means nothing
MAX_POSITION_M = 1e7  # beyond the Earth's size from its origin
MAX_RANGE_M = 1e7
MAX_SPEED_M_S = 1e4  # a target's velocity, each axis
MAX_TEXT = 128  # characters of a key, a label, a reason or a link state
MAX_REASONS = 32


class BadLine(ValueError):
    """A line the view will not use; ``field`` names what was wrong (``json``: not JSON)."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field


class WorldLine(NamedTuple):
    """What the fleet view keeps of one world line (times on the publishing host's clocks)."""

    seq: int
    host_ns: int
    wall_ns: int | None
    validity_ns: int  # valid_until_ns - host_ns: how long after its making the verdict holds
    verdict: str  # PROCEED | HOLD, as the host said
    reasons: tuple[str, ...]
    selected: str | None
    position_ned_m: tuple[float, float, float] | None  # the vehicle's
    target: dict[str, Any] | None  # the selected target, TARGET_FIELDS


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: an overflow the parser would make inf
        raise BadLine("json", f"a number out of range: {text[:20]}")
    return value


def _no_constant(text: str) -> Any:
    raise BadLine("json", f"{text} is not a number")


_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_no_constant)


def decode(payload: bytes) -> Any:
    """JSON with finite numbers only; ``BadLine("json")`` otherwise (also for bytes that are
    not UTF-8, nesting too deep for the parser, or an integer of over 4,300 digits)."""
    try:
        return _DECODER.decode(payload.decode("utf-8"))
    except BadLine:
        raise
    except (ValueError, RecursionError) as exc:
        raise BadLine("json", str(exc)[:80]) from None


# -- field checks ------------------------------------------------------------------------


def _integer(field: str, value: Any, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:  # bool is not an int here
        raise BadLine(field, f"expected an integer {low}..{high}, got {str(value)[:40]!r}")
    return value


def _number(field: str, value: Any, low: float, high: float) -> float:
    if type(value) not in (int, float) or not low <= value <= high:
        raise BadLine(field, f"expected a number {low:g}..{high:g}, got {str(value)[:40]!r}")
    return float(value)


def _text(field: str, value: Any) -> str:
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise BadLine(field, f"expected text of at most {MAX_TEXT} characters")
    return value


def _optional_text(field: str, value: Any) -> str | None:
    return None if value is None else _text(field, value)


def _vec3(field: str, value: Any, limit: float) -> tuple[float, float, float] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 3:
        raise BadLine(field, "expected 3 numbers or null")
    return (
        _number(field, value[0], -limit, limit),
        _number(field, value[1], -limit, limit),
        _number(field, value[2], -limit, limit),
    )


def _vec3_json(field: str, value: Any) -> list[float] | None:
    checked = _vec3(field, value, MAX_POSITION_M)
    return None if checked is None else list(checked)


def _optional_number(low: float, high: float) -> Callable[[str, Any], float | None]:
    def check(field: str, value: Any) -> float | None:
        return None if value is None else _number(field, value, low, high)

    return check


def _velocity_json(field: str, value: Any) -> list[float] | None:
    checked = _vec3(field, value, MAX_SPEED_M_S)
    return None if checked is None else list(checked)


# The selected target's compact form: (field, check); ``speed_m_s`` follows from the velocity.
TARGET_FIELDS: tuple[tuple[str, Callable[[str, Any], Any]], ...] = (
    ("key", _text),
    ("label", _optional_text),
    ("position_ned_m", _vec3_json),
    ("azimuth_deg", _optional_number(0, 360)),
    ("elevation_deg", _optional_number(-90, 90)),
    ("range_m", _optional_number(0, MAX_RANGE_M)),
    ("velocity_ned_m_s", _velocity_json),  # a tracked target's (docs/tracking.md)
)


def _target(targets: Any, selected: str) -> dict[str, Any] | None:
    if not isinstance(targets, list):
        raise BadLine("targets", "expected a list")
    for index, target in enumerate(targets):
        if isinstance(target, dict) and target.get("key") == selected:
            where = f"targets[{index}]."
            out = {name: check(where + name, target.get(name)) for name, check in TARGET_FIELDS}
            v = out["velocity_ned_m_s"]
            out["speed_m_s"] = None if v is None else round(math.hypot(*v), 3)
            return out
    return None


def parse_world(payload: bytes) -> WorldLine:
    """The checked ``WorldLine`` of a world line's bytes, or ``BadLine``."""
    line = decode(payload)
    if not isinstance(line, dict):
        raise BadLine("json", "expected an object")
    if line.get("type", "world") != "world":
        raise BadLine("type", "expected 'world'")
    seq = _integer("seq", line.get("seq"), 1, MAX_NS)
    host_ns = _integer("host_ns", line.get("host_ns"), 0, MAX_NS)
    wall_ns = line.get("wall_ns")
    if wall_ns is not None:
        wall_ns = _integer("wall_ns", wall_ns, 0, MAX_NS)
    valid_until_ns = _integer(
        "valid_until_ns", line.get("valid_until_ns"), host_ns, host_ns + MAX_VALIDITY_NS
    )
    verdict = line.get("verdict")
    if verdict not in (PROCEED, HOLD):
        raise BadLine("verdict", "expected PROCEED or HOLD")
    reasons = line.get("reasons")
    if not isinstance(reasons, list) or len(reasons) > MAX_REASONS:
        raise BadLine("reasons", f"expected a list of at most {MAX_REASONS}")
    reasons_t = tuple(_text("reasons", r) for r in reasons)
    selected = _optional_text("selected", line.get("selected"))
    if verdict == PROCEED and (selected is None or reasons_t):
        raise BadLine("verdict", "a PROCEED names its target and gives no reasons")
    vehicle = line.get("vehicle")
    if vehicle is not None and not isinstance(vehicle, dict):
        raise BadLine("vehicle", "expected an object or null")
    position = None
    if vehicle is not None:
        position = _vec3("vehicle.position_ned_m", vehicle.get("position_ned_m"), MAX_POSITION_M)
    target = None if selected is None else _target(line.get("targets"), selected)
    return WorldLine(
        seq, host_ns, wall_ns, valid_until_ns - host_ns, verdict, reasons_t, selected,
        position, target,
    )  # fmt: skip


def parse_link(payload: bytes) -> str:
    """A link line's ``state``, or ``BadLine``."""
    line = decode(payload)
    if not isinstance(line, dict):
        raise BadLine("json", "expected an object")
    return _text("state", line.get("state"))
