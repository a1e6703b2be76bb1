"""Checks shared by the settings readers: a value's type, and the one-line error naming the key
and the value expected (``serial.baudrate: expected an integer, got 'fast'``)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from gizmo_host.app.settings import Setting
from gizmo_host.errors import ConfigError

MAX_DISPLAYED_CHARS = 60


def show(value: Any) -> str:
    """``repr`` cut to a readable length (a config value can be a whole table)."""
    try:
        text = repr(value)
    except ValueError:  # an int beyond sys.get_int_max_str_digits()
        text = f"an integer of {value.bit_length()} bits"
    if len(text) > MAX_DISPLAYED_CHARS:
        text = text[: MAX_DISPLAYED_CHARS - 3] + "..."
    return text


def fail(key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{key}: expected {expected}, got {show(value)}", key)


def check_type(key: str, value: Any, annotation: str) -> Any:
    if value is None and "None" in annotation:
        return None
    if annotation.startswith("bool"):
        if isinstance(value, bool):
            return value
        raise fail(key, "true or false", value)
    if annotation.startswith("int"):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise fail(key, "an integer", value)
    if annotation.startswith("float"):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # an int too large for a float
                number = math.inf
            if math.isfinite(number):
                return number
        raise fail(key, "a finite number", value)
    if annotation.startswith("str"):
        if isinstance(value, str):
            return value
        raise fail(key, "a string", value)
    return value


def check_setting(setting: Setting, key: str, value: Any) -> Any:
    """``value`` of the right type and within ``setting``'s range, else a ConfigError."""
    if setting.kind == "triple":
        if not isinstance(value, (list, tuple)) or len(value) != 3:
            raise fail(key, "a list of 3 numbers", value)
        one = dataclasses.replace(setting, kind="float")  # each number by the same range
        return tuple(check_setting(one, f"{key}[{i}]", v) for i, v in enumerate(value))
    annotation = {"int": "int", "float": "float", "bool": "bool", "str": "str"}.get(setting.kind)
    checked = value if annotation is None else check_type(key, value, annotation)
    number = isinstance(checked, (int, float)) and not isinstance(checked, bool)
    if number and not setting.accepts(checked):
        raise fail(key, setting.describe(), value)
    return checked
