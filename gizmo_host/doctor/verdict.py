"""A doctor's verdict: ok, warn, fail or skip, one line of evidence, one line of fix; and the
exit status of a list of them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum
from typing import NamedTuple


class Status(Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


class Check(NamedTuple):
    name: str
    status: Status
    evidence: str
    fix: str = ""


def exit_code(checks: Sequence[Check]) -> int:
    """0 when all pass, 1 on a warning, 2 on a failure."""
    statuses = {c.status for c in checks}
    return 2 if Status.FAIL in statuses else 1 if Status.WARN in statuses else 0


def ok(name: str, evidence: str) -> Check:
    return Check(name, Status.OK, evidence)


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]
