#!/usr/bin/env python3
"""The per-frame JSON line: today's templates against msgspec (issue 11 item 7).

``gizmo-host run`` writes one ``result`` line per frame. Measured per line, in the same run:

- baseline: ``json.dumps(to_dict())`` (the plain standard library);
- the templates ``ReceivedResult.to_json_line`` uses today;
- msgspec encoding the same dict (``msgspec.json.encode(to_dict())``);
- msgspec encoding typed ``msgspec.Struct`` values (one definition per message, which would
  also give the JSON Schema), built from the frame, with the interpretation as a tagged union.

Each is checked to decode to the same object first. Needs ``pip install msgspec`` (it is not a
dependency: see docs/bench.md's measured result).
"""

from __future__ import annotations

import json
import sys
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    import msgspec
except ImportError:  # not a dependency: this bench measures whether it should become one
    sys.exit("bench/jsonl_encoding.py needs msgspec: .venv/bin/pip install msgspec")

from gizmo_host.rigs.board import BoardModel
from gizmo_host.stream.clock import ClockStatus
from gizmo_host.stream.events import ReceivedResult
from gizmo_host.stream.tracker import SequenceEvent

NUMBER = 50_000


class Box(msgspec.Struct, tag="detection", tag_field="kind", omit_defaults=False):
    detector: str
    box: dict[str, int]


class Result(msgspec.Struct):
    version: int
    msg_type: int
    header_flags: int
    sequence: int
    payload_len: int
    source_id: int
    result_type: int
    result_sequence: int
    timestamp_ms: int
    confidence: int
    flags: int
    age_ms: int
    x: int
    y: int
    w: int
    h: int
    id: int
    aux: int
    tracked: bool
    lost: bool
    relative: bool
    interpretation: Any


class ResultLine(msgspec.Struct, tag="result", tag_field="type"):
    host_rx_ns: int
    host_capture_ns: int | None
    host_published_ns: int
    valid_until_ns: int
    age_ms: float
    device_ms: int
    epoch: int
    clock: str
    sequence_event: str
    result: Result


def struct_line(rr: ReceivedResult, now_ns: int, encoder: msgspec.json.Encoder) -> bytes:
    r = rr.result
    flags = r.flags
    result = Result(
        *r,
        tracked=bool(flags & 1),
        lost=bool(flags & 2),
        relative=bool(flags & 4),
        interpretation=r.interpretation.to_dict(),
    )
    line = ResultLine(
        rr.host_rx_ns,
        rr.host_capture_ns,
        now_ns,
        rr.valid_until_ns,
        rr.age_us(now_ns) / 1000,
        rr.device_ms,
        rr.epoch,
        rr.clock_status.value,
        rr.sequence_event.value,
        result,
    )
    return encoder.encode(line) + b"\n"


def main() -> int:
    result = BoardModel().next_result()
    rr = ReceivedResult(
        result,
        10**12,
        10**12 - 12_000_000,
        5000,
        0,
        ClockStatus.LOCKED,
        SequenceEvent.IN_ORDER,
        10**12 + 238_000_000,
    )
    now = 10**12 + 2_000_000
    encoder = msgspec.json.Encoder()
    expected = rr.to_dict(now)
    candidates = {
        "json.dumps(to_dict)": lambda: (json.dumps(rr.to_dict(now)) + "\n").encode(),  # noqa: PLW0108 - timed per call
        "templates (today)": lambda: rr.to_json_line(now),
        "msgspec encode(to_dict)": lambda: encoder.encode(rr.to_dict(now)) + b"\n",
        "msgspec Structs": lambda: struct_line(rr, now, encoder),
    }
    for name, encode in candidates.items():
        assert json.loads(encode()) == expected, name
    best = {
        name: min(timeit.repeat(encode, number=NUMBER, repeat=5)) / NUMBER * 1e6
        for name, encode in candidates.items()
    }
    base = best["json.dumps(to_dict)"]
    print(f"one result line, best of 5 x {NUMBER}:")
    for name, us in best.items():
        print(f"  {name:26s} {us:6.2f} us   {us / base:5.2f} x json.dumps")
    schema = msgspec.json.schema(ResultLine)
    print(f"msgspec also gives the JSON Schema ({len(json.dumps(schema))} bytes for ResultLine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
