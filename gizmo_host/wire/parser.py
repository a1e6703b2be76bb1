"""Sans-I/O stream parser: UART bytes in any chunking -> VisionResults in order.

It never reads a clock, a port or a logger: the I/O shell feeds it bytes, stamps receive times and
decides what to log. A rejected candidate (bad header or CRC) is counted and the search resumes one
byte after its ``A5`` (docs/protocol-decisions.md, Gizmo UART), so a real frame that starts inside a
false candidate is still found. Between calls it keeps at most one incomplete frame (34 bytes).

Invariant: ``bytes_in == 35 * frames_ok + bytes_discarded + buffered``.
"""

from __future__ import annotations

import binascii
from typing import NamedTuple

from gizmo_host.wire.protocol import (
    BODY,
    CRC_END,
    CRC_INIT,
    CRC_START,
    FRAME_LEN,
    MSG_TYPE_VISION_RESULT,
    PAYLOAD_LEN,
    SYNC,
    VERSION,
    VisionResult,
)

_SYNC_FIRST = SYNC[0]
# Positions inside the values unpacked from BODY (which starts at byte CRC_START).
_VERSION_AT, _TYPE_AT, _LEN_AT = 0, 1, 4


class ParserStats(NamedTuple):
    bytes_in: int
    frames_ok: int
    crc_errors: int
    header_errors: int  # a sync with a wrong version, message type or payload length
    bytes_discarded: int  # bytes that were not part of a valid frame


class StreamParser:
    """Feed bytes, get every valid frame back; bad bytes are counted, never raised."""

    __slots__ = (
        "_bytes_discarded",
        "_bytes_in",
        "_crc_errors",
        "_frames_ok",
        "_header_errors",
        "_pending",
        "buffered",
    )

    def __init__(self) -> None:
        self._pending = b""
        self.buffered = 0  # bytes held for an incomplete frame (at most FRAME_LEN - 1)
        self._bytes_in = self._frames_ok = self._crc_errors = 0
        self._header_errors = self._bytes_discarded = 0

    @property
    def stats(self) -> ParserStats:
        return ParserStats(
            self._bytes_in,
            self._frames_ok,
            self._crc_errors,
            self._header_errors,
            self._bytes_discarded,
        )

    def reset(self) -> None:
        """Drop the partial frame, e.g. after a reconnect: its tail will never arrive."""
        self._bytes_discarded += len(self._pending)
        self._pending = b""
        self.buffered = 0

    def feed(self, data: bytes | bytearray | memoryview) -> list[VisionResult]:
        if not data:
            return []
        data = bytes(data)
        self._bytes_in += len(data)
        buf = self._pending + data if self._pending else data
        end = len(buf)
        if end == FRAME_LEN and buf[:2] == SYNC:
            # The usual read on a live link: exactly one frame. Valid, it is taken here;
            # anything else goes through the general search below, which counts it.
            values = BODY.unpack_from(buf, CRC_START)
            if (
                values[_VERSION_AT] == VERSION
                and values[_TYPE_AT] == MSG_TYPE_VISION_RESULT
                and values[_LEN_AT] == PAYLOAD_LEN
                and binascii.crc_hqx(buf[CRC_START:CRC_END], CRC_INIT)
                == buf[CRC_END] | buf[CRC_END + 1] << 8
            ):
                self._pending = b""
                self.buffered = 0
                self._frames_ok += 1
                return [tuple.__new__(VisionResult, values)]
        last_start = end - FRAME_LEN
        find, unpack, crc = buf.find, BODY.unpack_from, binascii.crc_hqx
        new, result_type = tuple.__new__, VisionResult
        out: list[VisionResult] = []
        append = out.append
        pos = discarded = header_errors = crc_errors = 0
        while True:
            start = find(SYNC, pos)
            if start < 0:
                # A final A5 may be the first half of the next sync: keep it.
                keep = 1 if end > pos and buf[end - 1] == _SYNC_FIRST else 0
                discarded += end - keep - pos
                pos = end - keep
                break
            discarded += start - pos
            if start > last_start:
                pos = start  # incomplete candidate: wait for the rest
                break
            values = unpack(buf, start + CRC_START)
            if (
                values[_VERSION_AT] != VERSION
                or values[_TYPE_AT] != MSG_TYPE_VISION_RESULT
                or values[_LEN_AT] != PAYLOAD_LEN
            ):
                header_errors += 1
            elif crc(buf[start + CRC_START : start + CRC_END], CRC_INIT) != (
                buf[start + CRC_END] | buf[start + CRC_END + 1] << 8
            ):
                crc_errors += 1
            else:
                append(new(result_type, values))
                pos = start + FRAME_LEN
                continue
            discarded += 1  # the rejected A5; resume right after it
            pos = start + 1
        self._pending = buf[pos:]
        self.buffered = end - pos
        self._frames_ok += len(out)
        if discarded:  # rejected candidates are counted in ``discarded`` too
            self._crc_errors += crc_errors
            self._header_errors += header_errors
            self._bytes_discarded += discarded
        return out
