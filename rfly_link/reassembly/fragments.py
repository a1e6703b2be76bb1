"""The vision-sensor UDP fragment: its 24- or 32-byte header, read and written (VSP 1.2; DEC).

A sensor frame larger than a datagram travels as ``count`` fragments of ``fragment_size`` bytes
(the last may be shorter, or empty when the SDK sends an exact multiple), each behind a header
with its index ``seq``. The 32-byte header names its frame by ``frame_id``; the 24-byte one has
no ID, so its timestamp names the frame, compared by its raw bits (exact, and NaN-safe).
"""

from __future__ import annotations

import math
import mmap
import struct
from collections.abc import Hashable
from typing import NamedTuple

from rfly_link import wire
from rfly_link.errors import DropCause

FRAGMENT_SIZE = 60000  # the SDK's fragment payload size

_CHECKSUM = struct.Struct("<i")
_H24 = wire.FRAGMENT_HEADER_24.struct
_H32 = wire.FRAGMENT_HEADER_32.struct
_TS24 = wire.FRAGMENT_HEADER_24.offsets["timestamp_s"]
_TS24_END = _TS24 + struct.calcsize("<d")


class FragmentHeader(NamedTuple):
    """One fragment's header; ``frame`` is what names its frame among a sender's frames."""

    size: int  # header bytes: 24 or 32
    packet_len: int  # the whole datagram, header included
    packet_seq: int
    packet_count: int
    frame_id: int | None  # 32-byte header only
    timestamp_s: float
    frame: Hashable  # frame_id, or the 24-byte header's timestamp bits


def read_header(
    data: bytes | bytearray | memoryview | mmap.mmap, offset: int = 0, length: int | None = None
) -> FragmentHeader | DropCause:
    """The header of the ``length``-byte datagram at ``offset`` of ``data``, or why it has none.

    ``length`` defaults to the rest of ``data``. The causes: ``SHORT`` (shorter than its
    header) and ``UNKNOWN_CHECKSUM``; the fields themselves are the caller's to check.
    """
    size = len(data) - offset if length is None else length
    if size < _H24.size:
        return DropCause.SHORT
    (checksum,) = _CHECKSUM.unpack_from(data, offset)
    if checksum == wire.FRAGMENT_CHECKSUM_32:
        if size < _H32.size:
            return DropCause.SHORT
        _, packet_len, seq, count, frame_id, _, ts = _H32.unpack_from(data, offset)
        return FragmentHeader(_H32.size, packet_len, seq, count, frame_id, ts, frame_id)
    if checksum == wire.FRAGMENT_CHECKSUM_24:
        _, packet_len, seq, count, ts = _H24.unpack_from(data, offset)
        bits = bytes(data[offset + _TS24 : offset + _TS24_END])
        return FragmentHeader(_H24.size, packet_len, seq, count, None, ts, bits)
    return DropCause.UNKNOWN_CHECKSUM


def fragment_payload(
    payload: bytes | bytearray | memoryview,
    *,
    header_size: int = 32,
    frame_id: int = 0,
    timestamp_s: float = 0.0,
    fragment_size: int = FRAGMENT_SIZE,
    sdk_empty_last: bool = False,
) -> list[bytes]:
    """Split ``payload`` into datagrams with the 24- or 32-byte header.

    Our sender never emits an empty fragment; ``sdk_empty_last=True`` reproduces the SDK, which
    appends one when the length is an exact multiple of ``fragment_size``.
    """
    if header_size not in (_H24.size, _H32.size):
        raise ValueError(f"header_size: expected 24 or 32, got {header_size}")
    if fragment_size < 1:
        raise ValueError(f"fragment_size: expected >= 1, got {fragment_size}")
    size = len(payload)
    full = size // fragment_size + 1  # the SDK's count: an exact multiple adds an empty one
    count = full if sdk_empty_last else max(1, math.ceil(size / fragment_size))
    view = memoryview(payload)
    out = []
    for seq in range(count):
        body = view[seq * fragment_size : (seq + 1) * fragment_size]
        packet_len = header_size + len(body)
        if header_size == _H32.size:
            head = _H32.pack(
                wire.FRAGMENT_CHECKSUM_32, packet_len, seq, count, frame_id, 0, timestamp_s
            )
        else:
            head = _H24.pack(wire.FRAGMENT_CHECKSUM_24, packet_len, seq, count, timestamp_s)
        out.append(head + body)
    return out
