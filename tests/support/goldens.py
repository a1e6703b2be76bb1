"""What golden outputs are compared by."""

from __future__ import annotations

from typing import Any


def changes(lines_: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The verdicts of ``verdict`` or ``world`` lines, each change once."""
    out: list[tuple[Any, ...]] = []
    for line in lines_:
        key = (line.get("decision", line.get("verdict")), tuple(line["reasons"]))
        if not out or out[-1] != key:
            out.append(key)
    return out
