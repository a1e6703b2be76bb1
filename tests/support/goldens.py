"""What golden outputs are compared by."""

from __future__ import annotations

import json
import math
from typing import Any


def changes(lines_: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The verdicts of ``verdict`` or ``world`` lines, each change once."""
    out: list[tuple[Any, ...]] = []
    for line in lines_:
        key = (line.get("decision", line.get("verdict")), tuple(line["reasons"]))
        if not out or out[-1] != key:
            out.append(key)
    return out


# Floats a golden holds may differ in their last bits from one machine to another: the
# tracker's matrix products go through the BLAS numpy ships, whose kernels (and so their
# rounding) are chosen by the CPU. Within this relative tolerance they are the same value.
FLOAT_REL_TOL = 1e-9
FLOAT_ABS_TOL = 1e-12


def same_value(want: Any, got: Any) -> bool:
    """``want`` and ``got`` (parsed JSON) alike: the same structure, kinds, text and integers
    exactly, floats within ``FLOAT_REL_TOL`` (or ``FLOAT_ABS_TOL`` near zero)."""
    if type(want) is not type(got):
        return False
    if isinstance(want, float):
        return math.isclose(want, got, rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL)
    if isinstance(want, dict):
        return want.keys() == got.keys() and all(same_value(want[k], got[k]) for k in want)
    if isinstance(want, list):
        return len(want) == len(got) and all(map(same_value, want, got))
    return bool(want == got)


def first_difference(want: bytes, got: bytes) -> int | None:
    """The index of the first line of ``got`` that is not ``want``'s, up to float rounding
    (``same_value``); the shorter one's length when one ends first; ``None``: the same."""
    want_lines, got_lines = want.splitlines(), got.splitlines()
    for index, (a, b) in enumerate(zip(want_lines, got_lines, strict=False)):
        if a != b and not same_value(json.loads(a), json.loads(b)):
            return index
    if len(want_lines) != len(got_lines):
        return min(len(want_lines), len(got_lines))
    return None
