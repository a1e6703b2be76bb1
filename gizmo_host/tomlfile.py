"""The one TOML reader: every settings file (``run``, ``record``, ``demo``, the emulator's
board and fault timelines) is read here, with the same size and line limits.

Anything but a small UTF-8 TOML file is a one-line ``ConfigError`` naming the file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from gizmo_core import ConfigError
from rfly_link.config_json import read_regular_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

MAX_FILE_BYTES = 64 * 1024  # a settings file is a few hundred bytes; a timeline a few KiB
MAX_LINE_CHARS = 4096  # tomllib's memory grows with the square of a dotted key's length


def display_name(text: str) -> str:
    """A key or path as typed, or quoted when it would break the one-line message."""
    return text if text.isprintable() and text.strip() == text and text else repr(text)


def read_toml(path: str | Path) -> dict[str, Any]:
    """The TOML document at ``path``; anything but a small UTF-8 TOML file is a ConfigError."""
    where = f"config file {display_name(str(path))}"
    try:  # non-blocking: a FIFO or a device is refused at once, not waited on
        data = read_regular_file(
            path, MAX_FILE_BYTES, what="settings", where=where, error=ConfigError
        )
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{where}: expected UTF-8 text, got byte 0x{data[exc.start]:02x} at offset {exc.start}"
        ) from None
    # TOML's lines end at "\n" only, not at U+0085 as ``splitlines``'s do (rt59: 709 MB)
    for number, line in enumerate(text.split("\n"), 1):
        if len(line) > MAX_LINE_CHARS:
            raise ConfigError(
                f"{where}: line {number}: expected at most {MAX_LINE_CHARS} characters"
            )
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: expected valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{where}: expected valid TOML: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer beyond sys.get_int_max_str_digits()
        raise ConfigError(f"{where}: expected valid TOML: {exc}") from None
