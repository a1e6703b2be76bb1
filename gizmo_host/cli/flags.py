"""Command-line values checked by hand: one line naming the flag, never argparse's usage dump.

The commands keep numbers as text in argparse and check them here, so an out-of-range value is
a :class:`UsageError` whose message names the flag and the value expected
(``--copter: expected an integer 1..450, got 0``); the command prints it and exits 2.
``gizmo-host rfly``, ``sim`` and ``demo`` share these.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
from typing import NoReturn


class UsageError(ValueError):
    """A command-line value that is malformed or out of range; the message names the flag."""


class OneLineParser(argparse.ArgumentParser):
    """argparse whose mistakes are one line (``gizmo-host run: error: argument --baud: ...``)
    and exit status 2, as every other command-line mistake: not the usage text first."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (--help for usage)\n")


def integer(flag: str, text: str, low: int, high: int | None = None) -> int:
    """``text`` as an integer in ``low..high`` (no upper bound when ``high`` is None)."""
    wanted = f"an integer {low}..{high}" if high is not None else f"an integer >= {low}"
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{flag}: expected {wanted}, got {text!r}") from None
    if value < low or (high is not None and value > high):
        raise UsageError(f"{flag}: expected {wanted}, got {value}")
    return value


def number(flag: str, text: str, low: float | None = 0.0, what: str = "a finite number") -> float:
    """``text`` as a finite number, at least ``low`` (any when ``low`` is None)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (low is not None and value < low):
        wanted = what + (f" >= {low:g}" if low is not None else "")
        raise UsageError(f"{flag}: expected {wanted}, got {text!r}")
    return value


def ipv4(flag: str, text: str) -> str:
    try:
        return str(ipaddress.IPv4Address(text))
    except ValueError:
        raise UsageError(f"{flag}: expected an IPv4 address, got {text!r}") from None
