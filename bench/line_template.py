#!/usr/bin/env python3
"""The result line's template: its C form (``gizmo_host/stream/line_template.pyx``) against
Python's ``%`` (the baseline), in the same run.

``gizmo-host run`` writes one ``result`` line a frame: a bytes template of some thirty
integers. Timed on a real line's values, the two alternating, best of ``ROUNDS`` runs of
``CALLS``: Python's ``%`` after joining the values' tuples (what the line did), and the C
template given the tuples; and the whole ``ReceivedResult.to_json_line``, which uses the C
form where it is built. Both give the same bytes (checked first; the tests hold it to that on
random values). Run: ``.venv/bin/python bench/line_template.py``.
"""

from __future__ import annotations

import sys
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gizmo_host.stream.clock import ClockStatus
from gizmo_host.stream.events import (
    _BOX_RESULT_LINES,
    PythonTemplate,
    ReceivedResult,
)
from gizmo_host.stream.tracker import SequenceEvent
from gizmo_host.wire.protocol import VisionResult

CALLS = 100_000
ROUNDS = 5


def main() -> int:
    template = _BOX_RESULT_LINES[(5, 11)][0]
    if isinstance(template, PythonTemplate):
        print("line_template: not built here (run `python3 dev.py`): nothing to compare")
        return 1
    result = VisionResult(1, 96, 0, 100, 24, 1, 5, 100, 60037, 80, 5, 12, 40, -30, 200, 300, 11, 0)
    received = ReceivedResult(
        result, 20_039_907_174, 20_027_050_000, 60037, 0, ClockStatus.LOCKED,
        SequenceEvent.IN_ORDER, 20_277_050_000,
    )  # fmt: skip
    now_ns = received.host_rx_ns + 1000
    head = (received.host_rx_ns, received.host_capture_ns)
    rest = (now_ns, received.valid_until_ns, b"", 12, 858, 60037, 0, b"locked", b"in_order")
    tail = (b'"tracked":true,"lost":false,"relative":true,', 40, -30, 200, 300)
    plain = template.template
    python_line = plain % (head + rest + result + tail)
    if template.format(head, rest, result, tail) != python_line:
        print("line_template: the C form's line differs from Python's: not measured")
        return 1
    runs: dict[str, Callable[[], object]] = {
        "Python's % (tuples joined)": lambda: plain % (head + rest + result + tail),
        "C template (tuples given)": lambda: template.format(head, rest, result, tail),
        "to_json_line (all of it)": lambda: received.to_json_line(now_ns),
    }
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(ROUNDS):  # alternating: the load on a shared machine drifts
        for name, run in runs.items():
            best[name] = min(best[name], timeit.timeit(run, number=CALLS) / CALLS * 1e6)
    baseline = best["Python's % (tuples joined)"]
    print(f"line_template: a result line's format, {CALLS} calls a run, best of {ROUNDS}")
    for name, us in best.items():
        print(f"  {name:28s} {us:6.3f} us   {baseline / us:4.2f}x the baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
