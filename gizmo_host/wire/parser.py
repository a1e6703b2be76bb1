"""Sans-I/O stream parser: UART bytes in any chunking -> VisionResults in order.

It never reads a clock, a port or a logger: the I/O shell feeds it bytes, stamps receive times and
decides what to log. A rejected candidate (bad header or CRC) is counted and the search resumes one
byte after its ``A5`` (docs/protocol-decisions.md, Gizmo UART), so a real frame that starts inside a
false candidate is still found. Between calls it keeps at most one incomplete frame (34 bytes).

A read that holds many frames (a saturated line, a backlog, a replayed capture) is mostly frames
back to back. Such a run is checked and unpacked with no Python code per frame (``_valid_run``:
the fixed header bytes of every frame compared as strided slices, the CRCs computed and compared
through ``map``, the values unpacked by ``iter_unpack``), 1.4 times as fast as the frame-by-frame
search. A frame with a good header and a wrong CRC (a bit error) is rejected in the run, which
goes on with the next frame unless a candidate starts inside the rejected one; a wrong header
hands over to the frame-by-frame search, which is also kept for short reads.

Invariant: ``bytes_in == 35 * frames_ok + bytes_discarded + buffered``.
"""

from __future__ import annotations

import binascii
import struct
import sys
from array import array
from collections.abc import Iterable
from itertools import compress, count, islice, repeat
from operator import ne
from typing import Final, NamedTuple

from gizmo_host.wire import protocol
from gizmo_host.wire.protocol import FIELDS, VisionResult

# Finals here: compiled, a C static each, where an imported name is a dictionary lookup.
BODY: Final = protocol.BODY
CRC_END: Final = protocol.CRC_END
CRC_INIT: Final = protocol.CRC_INIT
CRC_START: Final = protocol.CRC_START
FRAME_LEN: Final = protocol.FRAME_LEN
MSG_TYPE_VISION_RESULT: Final = protocol.MSG_TYPE_VISION_RESULT
PAYLOAD_LEN: Final = protocol.PAYLOAD_LEN
SYNC: Final = protocol.SYNC
VERSION: Final = protocol.VERSION
_VISION_RESULT: Final = VisionResult
_crc_hqx: Final = binascii.crc_hqx

_SYNC_FIRST: Final = SYNC[0]
# Positions inside the values unpacked from BODY (which starts at byte CRC_START).
_VERSION_AT: Final = 0
_TYPE_AT: Final = 1
_LEN_AT: Final = 4
# A whole frame's values, sync and CRC skipped: what ``iter_unpack`` gives for a run of frames.
_FRAME_VALUES: Final = struct.Struct("<2x" + BODY.format.lstrip("<") + "2x")
assert _FRAME_VALUES.size == FRAME_LEN
_OFFSET: Final = {f.name: f.offset for f in FIELDS}
# The bytes every valid frame has at a fixed offset: sync, version, message type, payload length.
_FIXED_BYTES: Final[tuple[tuple[int, bytes], ...]] = (
    (_OFFSET["sync"], SYNC[:1]),
    (_OFFSET["sync"] + 1, SYNC[1:]),
    (_OFFSET["version"], bytes((VERSION,))),
    (_OFFSET["msg_type"], bytes((MSG_TYPE_VISION_RESULT,))),
    *(
        (_OFFSET["payload_len"] + i, bytes((b,)))
        for i, b in enumerate(PAYLOAD_LEN.to_bytes(2, "little"))
    ),
)
_MIN_RUN: Final = 8  # frames: below this the per-run set-up costs more than it saves
# Where each frame's CRC input lies in a run of frames from 0 (a 4 KiB read holds 117 frames;
# a longer run gets its own).
_CRC_SLICES: Final = tuple(
    slice(CRC_START + n * FRAME_LEN, CRC_END + n * FRAME_LEN) for n in range(256)
)
_BIG_ENDIAN: Final = sys.byteorder == "big"  # the stored CRC is little-endian; array("H") native


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
        if type(data) is not bytes:
            data = bytes(data)
        self._bytes_in += len(data)
        pending = self._pending
        buf = pending + data if pending else data
        end = len(buf)
        if end == FRAME_LEN and buf[:2] == SYNC:
            # The usual read on a live link: exactly one frame. Valid, it is taken here;
            # anything else goes through the general search below, which counts it.
            values = BODY.unpack_from(buf, CRC_START)
            if (
                values[_VERSION_AT] == VERSION
                and values[_TYPE_AT] == MSG_TYPE_VISION_RESULT
                and values[_LEN_AT] == PAYLOAD_LEN
                and _crc_hqx(buf[CRC_START:CRC_END], CRC_INIT)
                == buf[CRC_END] | buf[CRC_END + 1] << 8
            ):
                self._pending = b""
                self.buffered = 0
                self._frames_ok += 1
                return [tuple.__new__(_VISION_RESULT, values)]
        last_start = end - FRAME_LEN
        find, unpack, crc = buf.find, BODY.unpack_from, _crc_hqx
        new, result_type = tuple.__new__, _VISION_RESULT
        out: list[VisionResult] = []
        append = out.append
        pos = discarded = header_errors = crc_errors = 0
        known_bad = -1  # where a run stopped: that candidate is judged on its own
        while True:
            start = pos if buf.startswith(SYNC, pos) else find(SYNC, pos)
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
            whole = (end - start) // FRAME_LEN
            if whole >= _MIN_RUN and start != known_bad:
                checked, crc_faults = _valid_run(buf, start, whole)
                taken = checked  # the slots the run judges: [0, taken)
                pos = start + checked * FRAME_LEN
                for fault in crc_faults:
                    # A good header and a wrong CRC: rejected here, and the run goes on with the
                    # next frame unless a candidate starts inside this one (the search's then).
                    at = start + fault * FRAME_LEN
                    crc_errors += 1
                    discarded += 1
                    if find(SYNC, at + 1, at + FRAME_LEN + 1) >= 0:
                        taken, pos = fault, at + 1
                        break
                    discarded += FRAME_LEN - 1
                if taken:
                    rows = _FRAME_VALUES.iter_unpack(
                        memoryview(buf)[start : start + taken * FRAME_LEN]
                    )
                    if crc_faults:  # the frames of the run but its rejected ones
                        selected = bytearray(b"\x01") * taken
                        for fault in crc_faults:
                            if fault < taken:
                                selected[fault] = 0
                        rows = compress(rows, selected)
                        out += map(new, repeat(result_type), rows)
                    else:
                        out += map(new, repeat(result_type, taken), rows)
                if taken == checked and checked < whole:
                    known_bad = pos  # a wrong header, or no sync: the search judges it
                if pos > start:
                    continue
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


def _valid_run(buf: bytes, pos: int, frames: int) -> tuple[int, list[int]]:
    """The frame-sized slots from ``pos`` that hold frames, in a row, without bytecode per
    frame: ``(checked, crc_faults)``. ``checked`` slots have the fixed header bytes (compared
    for all of them at once as strided slices, ``lstrip`` finding the first that differs);
    ``crc_faults`` lists those of them whose CRC is wrong, in order. The CRCs are computed
    through ``map`` into an array and compared with the stored ones all at once
    (little-endian, gathered from two strided slices); only a run with a wrong one compares
    them one by one.
    """
    stop = pos + frames * FRAME_LEN
    for offset, value in _FIXED_BYTES:
        wrong_from_end = len(buf[pos + offset : stop : FRAME_LEN].lstrip(value))
        if wrong_from_end:
            frames -= wrong_from_end
            if not frames:
                return 0, []
            stop = pos + frames * FRAME_LEN
    run = buf[pos:stop] if pos or stop != len(buf) else buf
    slices: Iterable[slice]
    if frames <= len(_CRC_SLICES):
        slices = islice(_CRC_SLICES, frames)
    else:
        size = len(run)
        slices = map(slice, range(CRC_START, size, FRAME_LEN), range(CRC_END, size, FRAME_LEN))
    computed = array("H", map(binascii.crc_hqx, map(run.__getitem__, slices), repeat(CRC_INIT)))
    stored = bytearray(2 * frames)
    stored[0::2] = run[CRC_END::FRAME_LEN]
    stored[1::2] = run[CRC_END + 1 :: FRAME_LEN]
    if _BIG_ENDIAN:
        computed.byteswap()
    if computed.tobytes() == stored:
        return frames, []
    return frames, list(compress(count(), map(ne, computed, array("H", stored))))
