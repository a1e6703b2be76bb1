"""Checked values for the emulator's settings: one error line naming the key and what it expected.

TOML gives typed values, command-line flags give text: every checker takes either, so a value
means the same wherever it came from. Errors are :class:`~gizmo_host.errors.ConfigError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any

from gizmo_host.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Number:
    """A number in ``low..high`` (``integer``: whole numbers only)."""

    low: float = -math.inf
    high: float = math.inf
    integer: bool = False
    open_low: bool = False  # ``low`` itself is excluded

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low == -math.inf and self.high == math.inf:
            return kind
        if self.high == math.inf:
            return f"{kind} {'>' if self.open_low else '>='} {_show_number(self.low)}"
        low = "(" if self.open_low else "["
        return f"{kind} in {low}{_show_number(self.low)}, {_show_number(self.high)}]"

    def check(self, key: str, value: Any) -> float:
        parsed = _parse_number(value, integer=self.integer)
        ok = parsed is not None and self.low <= parsed <= self.high
        if ok and self.open_low and parsed == self.low:
            ok = False
        if not ok or parsed is None:
            raise ConfigError(f"{key}: expected {self.describe()}, got {_show(value)}")
        return parsed

    def check_int(self, key: str, value: Any) -> int:
        return int(self.check(key, value))


def _show_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _parse_number(value: Any, *, integer: bool) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = int(value, 0) if integer else float(value)
        except ValueError:
            return None
    if isinstance(value, int):
        return float(value) if abs(value) < 2**53 else None
    if isinstance(value, float) and math.isfinite(value):
        if integer and not value.is_integer():
            return None
        return value
    return None


def boolean(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"true", "false"}:
        return value.lower() == "true"
    raise ConfigError(f"{key}: expected true or false, got {_show(value)}")


def text(key: str, value: Any) -> str:
    if isinstance(value, str) and value:
        return value
    raise ConfigError(f"{key}: expected a non-empty string, got {_show(value)}")


def table(key: str, value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    raise ConfigError(f"{key}: expected a table, got {_show(value)}")


def check_keys(where: str, values: Mapping[str, Any], allowed: Set[str]) -> None:
    """An unknown key is an error that lists the known ones (a typo never passes silently)."""
    for key in values:
        if key not in allowed:
            raise ConfigError(
                f"{where}.{key}: unknown key; expected one of {', '.join(sorted(allowed))}"
            )
