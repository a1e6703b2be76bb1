"""Host-stamped values the live link hands to its consumers, and their JSON Lines form.

Every JSON object has a ``type`` (``result``, ``link``, ``verdict``, ``stats``, ``version``);
each has a schema in ``gizmo_host/schemas/``. Host times are ``time.monotonic_ns()`` values
(``*_ns``); ages are milliseconds (``*_ms``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NamedTuple, Protocol

from gizmo_core import LinkState
from gizmo_host.stream.clock import ClockStatus
from gizmo_host.stream.tracker import SequenceEvent
from gizmo_host.wire.protocol import ResultFlags, VisionResult
from gizmo_host.wire.results import BOX_INTERPRETATION_JSON, interpretation_json

# LinkState is gizmo_core's (one vocabulary, as Decision and HoldReason): DOWN (no port: missing,
# unplugged, or failed to open), CONNECTING (open in progress), SYNCING (port open, no valid
# frame yet on this connection), UP (valid frames arriving), SILENT (port open, no valid frame
# for ``silent_after_s``).
__all__ = ["JSONL_FORMAT_VERSION", "LinkEvent", "ReceivedResult", "ResultKey", "version_message"]

JSONL_FORMAT_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class LinkEvent:
    """One link state transition."""

    state: LinkState
    previous: LinkState
    host_ns: int
    reason: str
    path: str
    transitions: int  # how many transitions this link has made so far, this one included

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "link",
            "state": self.state.value,
            "previous": self.previous.value,
            "host_ns": self.host_ns,
            "reason": self.reason,
            "path": self.path,
            "transitions": self.transitions,
        }


ResultKey = tuple[int, int, int]  # (source_id, result_type, id)


class ReceivedResult(NamedTuple):
    """A decoded frame with what the host knows about it: when, and how it fits the stream.

    A NamedTuple: one is built for every frame.
    """

    result: VisionResult
    host_rx_ns: int  # host time the chunk holding the frame's last byte was read
    host_capture_ns: int | None  # capture time (timestamp_ms - age_ms) mapped to the host clock
    device_ms: int  # timestamp_ms unwrapped within the clock epoch
    epoch: int  # device clock epoch: changes on every device reset
    clock_status: ClockStatus
    sequence_event: SequenceEvent
    # The host time after which it is stale: its reference time plus its type's TTL. A sink
    # that would deliver it later skips it (gizmo_host.publish.sinks).
    valid_until_ns: int

    @property
    def key(self) -> ResultKey:
        r = self.result
        return (r.source_id, r.result_type, r.id)

    def reference_ns(self) -> int:
        """The time the result describes: capture time when mapped, else receive time."""
        return self.host_rx_ns if self.host_capture_ns is None else self.host_capture_ns

    def age_ms(self, now_ns: int) -> float:
        return (now_ns - self.reference_ns()) / 1e6

    def age_us(self, now_ns: int) -> int:
        """Age in whole microseconds (rounded): what JSON output carries, as ms with 3
        decimals, formatted from the integer so the per-frame line needs no float rounding."""
        return (now_ns - self.reference_ns() + 500) // 1000

    def to_dict(self, now_ns: int) -> dict[str, Any]:
        return {
            "type": "result",
            "host_rx_ns": self.host_rx_ns,
            "host_capture_ns": self.host_capture_ns,
            "host_published_ns": now_ns,
            "valid_until_ns": self.valid_until_ns,
            "age_ms": self.age_us(now_ns) / 1000,
            "device_ms": self.device_ms,
            "epoch": self.epoch,
            "clock": self.clock_status.value,
            "sequence_event": self.sequence_event.value,
            "result": self.result.to_dict(),
        }

    def to_json_line(self, now_ns: int) -> bytes:
        """``to_dict(now_ns)`` as one JSON line, built from a template: this runs per frame.
        A result that locates a target by a box (the usual kind) has a bytes template of its
        own with the interpretation in it (one format for the whole line).

        The tests check that it parses to exactly ``to_dict(now_ns)``.
        """
        return _result_line(self, now_ns)


def _result_line(received: Any, now_ns: Any) -> bytes:
    """``ReceivedResult.to_json_line``, its values untyped: compiled, values typed ``int``
    would be unboxed from the tuples and boxed again for the format, which costs about as
    much as the format itself (bench/jsonl_encoding.py)."""
    r, rx_ns, capture, device_ms, epoch, clock_status, sequence_event, valid_until_ns = received
    age_us: Any = (now_ns - (rx_ns if capture is None else capture) + 500) // 1000  # age_us()
    sign = b""
    if age_us < 0:
        sign, age_us = b"-", -age_us
    # ``_value_`` is the member's value without the ``.value`` descriptor call.
    clock, event = clock_status._value_, sequence_event._value_
    box_lines = _BOX_RESULT_LINES.get((r[_TYPE], r[_ID]))
    if box_lines is None:  # the rest: an interpretation of its own
        line: str = _RESULT_LINE % (
            rx_ns, "null" if capture is None else capture, now_ns, valid_until_ns,
            sign.decode(), age_us // 1000, age_us % 1000, device_ms, epoch, clock, event, *r,
            _FLAGS_JSON[r[_FLAGS] & _FLAG_BITS], interpretation_json(r),
        )  # fmt: skip
        return line.encode()
    # The values in four tuples, the result's own among them: the template joins them.
    rest = (
        now_ns, valid_until_ns, sign, age_us // 1000, age_us % 1000, device_ms, epoch,
        _ASCII[clock], _ASCII[event],
    )  # fmt: skip
    flags_and_box = (_FLAGS_BYTES[r[_FLAGS] & _FLAG_BITS], r[_X], r[_Y], r[_W], r[_H])
    if capture is None:
        return box_lines[1].format((rx_ns,), rest, r, flags_and_box)
    return box_lines[0].format((rx_ns, capture), rest, r, flags_and_box)


def version_message(package_version: str, path: str) -> dict[str, Any]:
    """The first line every Unix-socket client receives."""
    return {
        "type": "version",
        "format": "gizmo-host-jsonl",
        "format_version": JSONL_FORMAT_VERSION,
        "package_version": package_version,
        "serial_path": path,
        "types": ["version", "result", "link", "verdict", "stats", "error"],
    }


_RESULT_LINE_HEAD: Final = (
    '{"type":"result","host_rx_ns":%d,"host_capture_ns":%s,"host_published_ns":%d,'
    '"valid_until_ns":%d,"age_ms":%s%d.%03d,"device_ms":%d,"epoch":%d,"clock":"%s","sequence_event":"%s","result":{'
    + "".join(f'"{name}":%d,' for name in VisionResult._fields)
    + '%s"interpretation":'
)
_RESULT_LINE: Final = _RESULT_LINE_HEAD + "%s}}\n"


class LineTemplate(Protocol):
    """A bytes template's ``%`` of the tuples ``parts`` joined: ``line_template.Template``
    (C, where it is built) or ``PythonTemplate``."""

    def format(self, *parts: tuple[Any, ...]) -> bytes: ...


class PythonTemplate:
    """``line_template.Template`` where it is not built: Python's ``%`` itself."""

    __slots__ = ("template",)

    def __init__(self, template: bytes) -> None:
        self.template = template

    def format(self, *parts: tuple[Any, ...]) -> bytes:
        values: tuple[Any, ...] = ()
        for part in parts:
            values += part
        return self.template % values


def line_template(template: bytes) -> LineTemplate:
    """``template``'s ``%``, in C where ``line_template.pyx`` is built (a result line's format
    and joins about half the time: bench/line_template.py)."""
    try:
        from gizmo_host.stream import line_template as native  # noqa: PLC0415 - built, or not
    except ImportError:  # not built (no compiler, or interpreted)
        return PythonTemplate(template)
    return native.Template(template)


def _box_line(interpretation: str, *, mapped: bool) -> LineTemplate:
    """A box result's whole line as a bytes template: for a capture time mapped to the host
    clock (``%d``) or for none (``null``), with the interpretation's box in it."""
    capture = '"host_capture_ns":%d' if mapped else '"host_capture_ns":null'
    line = _RESULT_LINE_HEAD.replace('"host_capture_ns":%s', capture, 1)
    return line_template((line + interpretation + "}}\n").encode())


# Per box kind: the line for a mapped capture time, then the line for none.
_BOX_RESULT_LINES: Final = {
    key: (_box_line(interpretation, mapped=True), _box_line(interpretation, mapped=False))
    for key, interpretation in BOX_INTERPRETATION_JSON.items()
}
# The flag bits as plain ints (an IntFlag operation costs a call on the per-frame path).
_TRACKED: Final = int(ResultFlags.TRACKED)
_LOST: Final = int(ResultFlags.LOST)
_RELATIVE: Final = int(ResultFlags.RELATIVE)
_FLAG_BITS: Final = _TRACKED | _LOST | _RELATIVE
_JSON_BOOL: Final = ("false", "true")
# The three decoded flags for each combination of the bits, as one piece of the line.
_FLAGS_JSON: Final = tuple(
    f'"tracked":{_JSON_BOOL[bool(bits & _TRACKED)]},"lost":{_JSON_BOOL[bool(bits & _LOST)]},'
    f'"relative":{_JSON_BOOL[bool(bits & _RELATIVE)]},'
    for bits in range(_FLAG_BITS + 1)
)
_FLAGS_BYTES: Final = tuple(piece.encode() for piece in _FLAGS_JSON)  # a box line's
# The enum values a line carries (clock and sequence event), as bytes, by value: a str's
# hash is cached where an enum member's runs in Python.
_ASCII: Final = {
    member.value: member.value.encode() for enum in (ClockStatus, SequenceEvent) for member in enum
}
# The fields ``_result_line`` reads from a result, by place (its values are untyped there).
_TYPE: Final = VisionResult._fields.index("result_type")
_ID: Final = VisionResult._fields.index("id")
_FLAGS: Final = VisionResult._fields.index("flags")
_X: Final = VisionResult._fields.index("x")
_Y: Final = VisionResult._fields.index("y")
_W: Final = VisionResult._fields.index("w")
_H: Final = VisionResult._fields.index("h")
