"""One vehicle's row as the fleet view shows it, and its JSON line (``gizmo-host fleet --json``,
schema ``fleet_vehicle``): compact, made from a template, the line's own part made once per line.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from gizmo_host.jsonl import json_text
from gizmo_host.zenoh.fleet_line import WorldLine

DROPS = ("replayed", "foreign", "invalid", "oversized", "skipped")


class LineJson:
    """A vehicle's newest line, as the part of its row's JSON that comes from the line alone:
    made once per line, at the first row printed of it, for every row of it after."""

    __slots__ = ("line", "text")

    def __init__(self) -> None:
        self.line: WorldLine | None = None
        self.text = ""

    def of(self, line: WorldLine) -> str:
        if self.line is not line:
            self.line, self.text = line, json_text(_line_fields(line))[1:-1]
        return self.text


def _line_fields(line: WorldLine) -> dict[str, Any]:
    """The row's fields taken from the line itself."""
    return {
        "said": line.verdict,
        "reasons": list(line.reasons),
        "seq": line.seq,
        "position_ned_m": None if line.position_ned_m is None else list(line.position_ned_m),
        "selected": line.selected,
        "target": line.target,
    }


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class FleetRow(NamedTuple):
    """One vehicle as the view shows it at ``now_ns``."""

    vehicle: str
    state: str  # fresh | stale
    verdict: str  # PROCEED | HOLD | CONFLICT
    reason: str | None  # why not the line's PROCEED: stale, expired; CONFLICT: publishers, replay
    age_ms: float  # since the newest accepted line arrived here
    valid_ms: float | None  # PROCEED: how much longer it holds with no new line
    # The row's own time: the view's CLOCK_MONOTONIC when it was made, and PROCEED's end on
    # it, so that a consumer that reads the row late can tell (red team rt23: rows waited in
    # a pipe 6 s and read as fresh PROCEEDs).
    host_ns: int
    valid_until_ns: int | None
    line: WorldLine
    link: str | None  # the newest link line's state, if any came
    lost: int  # world lines missing from the publisher's seq numbers
    delay_ms: float | None  # the newest line's transport delay by the wall clocks (offset in)
    publisher: str  # the bound publisher's Zenoh identity
    publishers: int  # identities heard for this vehicle within the conflict window
    handovers: int  # times another publisher took the vehicle over
    dropped: dict[str, int]  # DROPS
    cache: LineJson  # the vehicle's: the line's part of the JSON line

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "fleet_vehicle",
            "vehicle": self.vehicle,
            "state": self.state,
            "verdict": self.verdict,
            "reason": self.reason,
            "age_ms": _ms(self.age_ms),
            "valid_ms": _ms(self.valid_ms),
            "host_ns": self.host_ns,
            "valid_until_ns": self.valid_until_ns,
            **_line_fields(self.line),
            "link": self.link,
            "lost": self.lost,
            "delay_ms": _ms(self.delay_ms),
            "publisher": self.publisher,
            "publishers": self.publishers,
            "handovers": self.handovers,
            "dropped": self.dropped,
        }

    def to_json_line(self) -> bytes:
        """``to_dict()`` as one JSON line, from a template, the line's own part made once per
        line (``cache``): a fleet of thousands prints thousands of rows a second. The tests
        check that it parses to exactly ``to_dict()``."""
        d = self.dropped
        return (
            _ROW_LINE
            % (
                _string(self.vehicle), self.state, self.verdict, _string(self.reason),
                _number(self.age_ms), _number(self.valid_ms), self.host_ns,
                "null" if self.valid_until_ns is None else self.valid_until_ns,
                self.cache.of(self.line),
                _string(self.link), self.lost, _number(self.delay_ms), _string(self.publisher),
                self.publishers, self.handovers,
                d["replayed"], d["foreign"], d["invalid"], d["oversized"], d["skipped"],
            )
        ).encode()  # fmt: skip


_ROW_LINE = (
    '{"type":"fleet_vehicle","vehicle":%s,"state":"%s","verdict":"%s","reason":%s,'
    '"age_ms":%s,"valid_ms":%s,"host_ns":%d,"valid_until_ns":%s,%s,"link":%s,"lost":%d,"delay_ms":%s,"publisher":%s,'
    '"publishers":%d,"handovers":%d,"dropped":{"replayed":%d,"foreign":%d,"invalid":%d,'
    '"oversized":%d,"skipped":%d}}\n'
)


def _string(value: str | None) -> str:
    return "null" if value is None else json_text(value)


def _number(value: float | None) -> str:
    return "null" if value is None else float.__repr__(round(value, 3))
