"""Vectorised decoder for capture files: the same frames as StreamParser, ~10x faster.

Candidates are found with two uint16 comparisons, their 35-byte windows gathered once, and
the CRC of all of them computed together, 16 bits per step through a 65,536-entry table.
Overlapping valid candidates are resolved greedily, exactly as the stream parser skips 35
bytes after each good frame, so both decoders agree frame for frame on any input.
"""

from __future__ import annotations

from typing import Literal, overload

import numpy as np
import numpy.typing as npt

from gizmo_host.wire.protocol import (
    CRC_END,
    CRC_INIT,
    CRC_START,
    FIELDS,
    FRAME_LEN,
    MSG_TYPE_VISION_RESULT,
    PAYLOAD_LEN,
    SYNC,
    VALUE_FIELDS,
    VERSION,
    VisionResult,
)

_NUMPY_CODES = {"2s": "S2", "B": "u1", "H": "<u2", "I": "<u4", "h": "<i2"}
FRAME_DTYPE = np.dtype([(f.name, _NUMPY_CODES[f.fmt]) for f in FIELDS])
assert FRAME_DTYPE.itemsize == FRAME_LEN
_POLY = 0x1021

Bytes = npt.NDArray[np.uint8]
Words = npt.NDArray[np.uint16]
Offsets = npt.NDArray[np.intp]
Frames = npt.NDArray[np.void]  # rows of FRAME_DTYPE


def _crc_table(bits: int) -> Words:
    """Register after shifting ``bits`` zero bits through the CRC, for every start value."""
    reg = np.arange(1 << bits, dtype=np.uint32) << (16 - bits)
    for _ in range(bits):
        reg = np.where(reg & 0x8000, (reg << 1) ^ _POLY, reg << 1) & 0xFFFF
    table = reg.astype(np.uint16)
    table.flags.writeable = False
    return table


_TABLE16 = _crc_table(16)
_TABLE8 = _crc_table(8)
_SYNC_WORD = int.from_bytes(SYNC, "little")
_WORDS = (CRC_END - CRC_START) // 2  # 15 big-endian words, then one byte


def _candidates(raw: Bytes) -> Offsets:
    """Start offsets of A5 47 with room for a whole frame, sorted."""
    usable = raw.size - FRAME_LEN + 1
    even = np.flatnonzero(raw[: usable + usable % 2].view("<u2") == _SYNC_WORD) * 2
    odd_bytes = raw[1 : 1 + ((raw.size - 1) // 2) * 2]
    odd = np.flatnonzero(odd_bytes.view("<u2") == _SYNC_WORD) * 2 + 1
    starts = np.concatenate((even, odd))
    starts.sort(kind="stable")
    return starts[starts < usable]


def _frame_crcs(windows: Bytes) -> Words:
    words = np.ascontiguousarray(windows[:, CRC_START : CRC_START + 2 * _WORDS])
    words = np.ascontiguousarray(words.view(">u2").T.astype(np.uint16))
    reg = np.full(windows.shape[0], CRC_INIT, dtype=np.uint16)
    for row in words:
        reg = _TABLE16[reg ^ row]
    last = windows[:, CRC_END - 1]
    crcs: Words = (reg << np.uint16(8)) ^ _TABLE8[(reg >> np.uint16(8)) ^ last]
    return crcs


def _non_overlapping(starts: Offsets) -> Offsets:
    if starts.size < 2 or np.all(np.diff(starts) >= FRAME_LEN):
        return starts
    kept, next_free = [], -1
    for start in starts.tolist():
        if start >= next_free:
            kept.append(start)
            next_free = start + FRAME_LEN
    return np.asarray(kept, dtype=starts.dtype)


@overload
def decode_capture(
    data: bytes | bytearray | memoryview, *, with_offsets: Literal[False] = False
) -> Frames: ...
@overload
def decode_capture(
    data: bytes | bytearray | memoryview, *, with_offsets: Literal[True]
) -> tuple[Frames, Offsets]: ...
def decode_capture(
    data: bytes | bytearray | memoryview, *, with_offsets: bool = False
) -> Frames | tuple[Frames, Offsets]:
    """Every valid frame in a raw byte capture as a structured array (dtype ``FRAME_DTYPE``).

    With ``with_offsets=True`` returns ``(frames, offsets)``, the byte offset of each frame.
    """
    raw = np.frombuffer(data, dtype=np.uint8)
    empty = np.empty(0, dtype=FRAME_DTYPE)
    if raw.size < FRAME_LEN:
        return (empty, np.empty(0, dtype=np.intp)) if with_offsets else empty
    starts = _candidates(raw)
    windows = np.lib.stride_tricks.as_strided(
        raw, shape=(raw.size - FRAME_LEN + 1, FRAME_LEN), strides=(1, 1), writeable=False
    )[starts]
    header_ok = (
        (windows[:, 2] == VERSION)
        & (windows[:, 3] == MSG_TYPE_VISION_RESULT)
        & (windows[:, 7] == PAYLOAD_LEN & 0xFF)
        & (windows[:, 8] == PAYLOAD_LEN >> 8)
    )
    starts, windows = starts[header_ok], windows[header_ok]
    stored = windows[:, CRC_END].astype(np.uint16) | (
        windows[:, CRC_END + 1].astype(np.uint16) << 8
    )
    crc_ok = _frame_crcs(windows) == stored
    starts, windows = starts[crc_ok], windows[crc_ok]
    kept = _non_overlapping(starts)
    if kept.size != starts.size:
        windows = windows[np.isin(starts, kept)]
    frames = np.ascontiguousarray(windows).view(FRAME_DTYPE).reshape(-1)
    return (frames, kept) if with_offsets else frames


def to_results(frames: Frames) -> list[VisionResult]:
    """Structured rows back to VisionResult values (for checks and small captures)."""
    names = [f.name for f in VALUE_FIELDS]
    return [VisionResult._make(row) for row in frames[names].tolist()]
