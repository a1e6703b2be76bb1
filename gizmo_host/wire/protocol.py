"""Gizmo VISION_RESULT v1: the one definition of the 35-byte UART frame.

``FIELDS`` is the single source of truth. The frame ``struct.Struct``, the ``VisionResult``
value type, the encoder's range checks, the numpy dtype of the batch decoder and the docs all
derive from it. The protocol: docs/uart.md, and
docs/protocol-decisions.md, Gizmo UART.

Everything is little-endian with no padding: ``"<2sBBBHH24sH"`` is 35 bytes, while the native
``"2sBBBHH24sH"`` would be 36.
"""

from __future__ import annotations

import binascii
import operator
import struct
from enum import IntFlag
from typing import Any, NamedTuple

from gizmo_host.errors import (
    BadPayloadLength,
    BadSync,
    CrcMismatch,
    EncodeError,
    FrameLengthError,
    TruncatedFrame,
    UnknownMessageType,
    UnsupportedVersion,
)
from gizmo_host.wire.results import Interpretation, interpret


class Field(NamedTuple):
    name: str
    fmt: str  # struct code, little-endian by the frame's "<"
    offset: int  # absolute offset in the frame
    doc: str


def _layout(*spec: tuple[str, str, str]) -> tuple[Field, ...]:
    fields, offset = [], 0
    for name, fmt, doc in spec:
        fields.append(Field(name, fmt, offset, doc))
        offset += struct.calcsize("<" + fmt)
    return tuple(fields)


FIELDS: tuple[Field, ...] = _layout(
    ("sync", "2s", "frame start, always A5 47 (not covered by the CRC)"),
    ("version", "B", "protocol version, 1"),
    ("msg_type", "B", "message type, 0x60 = VISION_RESULT"),
    ("header_flags", "B", "header flags, 0 today; kept raw"),
    ("sequence", "H", "frame sequence number, wraps 65535 -> 0, restarts on device reset"),
    ("payload_len", "H", "payload length in bytes, 24"),
    ("source_id", "B", "source number, 1 by default, configurable on the board"),
    ("result_type", "B", "task that produced the result: see results.ResultType"),
    ("result_sequence", "H", "result sequence, equal to the header sequence"),
    ("timestamp_ms", "I", "device boot clock in ms, read after recognition; wraps at 2**32"),
    ("confidence", "B", "confidence 0..100, meaning depends on the algorithm"),
    ("flags", "B", "bit0 tracked, bit1 lost, bit2 relative coordinates (05 found, 06 not)"),
    ("age_ms", "H", "processing latency in ms (not the capture-to-receive age)"),
    ("x", "h", "meaning depends on result_type: box centre x, line offset or a mean"),
    ("y", "h", "meaning depends on result_type: box centre y, 500 for lines, or a variance"),
    ("w", "h", "meaning depends on result_type: box width or line coverage scale"),
    ("h", "h", "meaning depends on result_type: box height or line slope scale"),
    ("id", "h", "class id, colour id or a 16-bit content hash"),
    ("aux", "h", "auxiliary result (line slope scale)"),
    ("crc", "H", "CRC-16/CCITT-FALSE over bytes 2..32, little-endian"),
)

FRAME = struct.Struct("<" + "".join(f.fmt for f in FIELDS))
FRAME_LEN = FRAME.size
SYNC = b"\xa5\x47"
VERSION = 1
MSG_TYPE_VISION_RESULT = 0x60
PAYLOAD_LEN = 24
HEADER_LEN = 9
CRC_START = 2  # the CRC covers bytes CRC_START .. CRC_END - 1
CRC_END = FRAME_LEN - 2
CRC_INIT = 0xFFFF

# Everything between sync and crc: the fields a VisionResult holds, in wire order.
VALUE_FIELDS: tuple[Field, ...] = FIELDS[1:-1]
BODY = struct.Struct("<" + "".join(f.fmt for f in VALUE_FIELDS))
CRC = struct.Struct("<H")

assert FRAME_LEN == 35 and BODY.size == CRC_END - CRC_START, "VISION_RESULT v1 is 35 bytes"
assert struct.calcsize("<" + "".join(f.fmt for f in FIELDS[6:-1])) == PAYLOAD_LEN

_RANGES = {"B": (0, 0xFF), "H": (0, 0xFFFF), "I": (0, 0xFFFF_FFFF), "h": (-0x8000, 0x7FFF)}


def crc16(data: bytes | bytearray | memoryview) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor)."""
    return binascii.crc_hqx(data, CRC_INIT)


class ResultFlags(IntFlag):
    """The payload ``flags`` byte."""

    TRACKED = 0x01
    LOST = 0x02
    RELATIVE = 0x04


class VisionResult(NamedTuple):
    """One decoded VISION_RESULT v1 frame: every header and payload field, raw, in wire order.

    A NamedTuple because the stream parser builds hundreds of thousands a second. Meanings of
    x/y/w/h/id depend on ``result_type``: read them through ``interpretation``, never directly.
    The fields are declared here for type checkers; a test checks them against ``FIELDS``.
    """

    version: int = VERSION
    msg_type: int = MSG_TYPE_VISION_RESULT
    header_flags: int = 0
    sequence: int = 0
    payload_len: int = PAYLOAD_LEN
    source_id: int = 1
    result_type: int = 0
    result_sequence: int = 0
    timestamp_ms: int = 0
    confidence: int = 0
    flags: int = 0
    age_ms: int = 0
    x: int = 0
    y: int = 0
    w: int = 0
    h: int = 0
    id: int = 0
    aux: int = 0

    @property
    def tracked(self) -> bool:
        return bool(self.flags & ResultFlags.TRACKED)

    @property
    def lost(self) -> bool:
        return bool(self.flags & ResultFlags.LOST)

    @property
    def relative(self) -> bool:
        return bool(self.flags & ResultFlags.RELATIVE)

    @property
    def interpretation(self) -> Interpretation:
        return interpret(self)

    def encode(self) -> bytes:
        """The 35-byte frame, CRC included. Raises EncodeError naming an out-of-range field."""
        try:
            body = BODY.pack(*self)
        except struct.error as exc:
            raise _range_error(self) from exc
        return SYNC + body + CRC.pack(crc16(body))

    @classmethod
    def decode(cls, frame: bytes | bytearray | memoryview) -> VisionResult:
        """Decode exactly one frame, or raise the FrameError subclass that names the fault."""
        frame = bytes(frame)
        if len(frame) != FRAME_LEN:
            error = TruncatedFrame if len(frame) < FRAME_LEN else FrameLengthError
            raise error(len(frame), FRAME_LEN)
        check_header(frame)
        computed = crc16(frame[CRC_START:CRC_END])
        (received,) = CRC.unpack_from(frame, CRC_END)
        if computed != received:
            raise CrcMismatch(expected=computed, received=received)
        return cls._make(BODY.unpack_from(frame, CRC_START))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: raw fields, decoded flags and the typed interpretation."""
        out: dict[str, Any] = self._asdict()
        out["tracked"] = self.tracked
        out["lost"] = self.lost
        out["relative"] = self.relative
        out["interpretation"] = self.interpretation.to_dict()
        return out


VisionResult.__doc__ = (
    (VisionResult.__doc__ or "")
    + "\n\n    Fields:\n"
    + "\n".join(f"      {f.name} (<{f.fmt} @ byte {f.offset}): {f.doc}" for f in VALUE_FIELDS)
)


def check_header(frame: bytes) -> None:
    """Raise the FrameError for the first wrong header byte of ``frame`` (>= 9 bytes)."""
    if frame[:2] != SYNC:
        raise BadSync(frame[:2])
    if frame[2] != VERSION:
        raise UnsupportedVersion(frame[2])
    if frame[3] != MSG_TYPE_VISION_RESULT:
        raise UnknownMessageType(frame[3])
    payload_len = frame[7] | frame[8] << 8
    if payload_len != PAYLOAD_LEN:
        raise BadPayloadLength(payload_len)


def _range_error(result: VisionResult) -> EncodeError:
    for field, value in zip(VALUE_FIELDS, result, strict=True):
        low, high = _RANGES[field.fmt]
        try:
            in_range = low <= operator.index(value) <= high  # numpy integers count as integers
        except TypeError:
            in_range = False
        if not in_range:
            return EncodeError(f"{field.name}: expected an integer in {low}..{high}, got {value!r}")
    return EncodeError("VisionResult does not fit the VISION_RESULT v1 layout")
