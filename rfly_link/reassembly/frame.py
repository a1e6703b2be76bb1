"""One sensor frame: :class:`PartialFrame` while its fragments arrive, :class:`SensorFrame` once
complete.

A partial frame writes fragment ``k`` at ``k * fragment_size`` of one buffer, so assembly is
linear. The buffer is allocated when the first fragment other than the last gives the fragment
size (the last may be shorter, or empty); a last fragment that comes first waits in
``pending_last`` until then.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

from rfly_link.errors import DropCause
from rfly_link.reassembly.fragments import FragmentHeader


class SensorFrame(NamedTuple):
    """A complete frame: ``payload`` is a read-only view of the assembled sensor data."""

    sender: Hashable
    header_size: int
    frame_id: int | None
    timestamp_s: float
    payload: memoryview
    fragment_count: int
    first_rx_ns: int
    complete_ns: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready metadata (the payload is summarised by its length)."""
        return {
            "type": "SensorFrame",
            "sender": list(self.sender) if isinstance(self.sender, tuple) else str(self.sender),
            "header_size": self.header_size,
            "frame_id": self.frame_id,
            "timestamp_s": self.timestamp_s,
            "payload_len": len(self.payload),
            "fragment_count": self.fragment_count,
            "first_rx_ns": self.first_rx_ns,
            "complete_ns": self.complete_ns,
        }


# Gives a buffer of at least the bytes asked for, or None when the budget cannot hold them.
Allocate = Callable[[int], mmap.mmap | None]


class PartialFrame:
    """Assembly state of one frame; ``buffer`` exists once the fragment size is known."""

    __slots__ = (
        "buffer",
        "count",
        "first_rx_ns",
        "fragment_size",
        "frame_id",
        "have",
        "header_size",
        "last_len",
        "pending_last",
        "received",
        "reserved",
        "timestamp_s",
    )

    def __init__(self, header: FragmentHeader, now_ns: int) -> None:
        self.count = header.packet_count
        self.header_size = header.size
        self.frame_id = header.frame_id
        self.timestamp_s = header.timestamp_s
        self.first_rx_ns = now_ns
        self.received = bytearray(header.packet_count)
        self.have = 0
        self.fragment_size = 0
        self.buffer: mmap.mmap | None = None
        self.reserved = 0  # bytes counted against the reassembler's in-flight budget
        self.pending_last: bytes | None = None
        self.last_len = 0

    @property
    def size(self) -> int:
        """Payload bytes of the frame once complete (every fragment but the last is full)."""
        return (self.count - 1) * self.fragment_size + self.last_len

    def store(
        self, seq: int, body: memoryview, max_frame_bytes: int, allocate: Allocate
    ) -> DropCause | None:
        """Copy fragment ``seq`` into place; returns why not, if it cannot be stored.

        After a refusal the frame is still usable if it has a buffer (only this fragment had
        the wrong size); without one it never will be, and the caller forgets it.
        """
        n = len(body)
        last = seq == self.count - 1
        if self.buffer is None:
            if last:
                self.pending_last = bytes(body)
                self.last_len = n
                return None
            # The smallest frame these fragments can make: the last may be shorter, even empty
            # (the SDK's sender), so a frame of exactly max_frame_bytes may reserve up to one
            # fragment more; the exact size is checked when the frame completes.
            if n == 0:
                return DropCause.INCONSISTENT
            if (self.count - 1) * n > max_frame_bytes:
                return DropCause.FRAME_TOO_LARGE
            if self.pending_last is not None and self.last_len > n:
                return DropCause.INCONSISTENT
            buffer = allocate(self.count * n)
            if buffer is None:
                return DropCause.BYTES_IN_FLIGHT
            self.reserved = len(buffer)
            self.fragment_size = n
            self.buffer = buffer
            if self.pending_last is not None:
                start = (self.count - 1) * n
                buffer[start : start + self.last_len] = self.pending_last
                self.pending_last = None
        chunk = self.fragment_size
        if (last and n > chunk) or (not last and n != chunk):
            return DropCause.INCONSISTENT
        start = seq * chunk
        self.buffer[start : start + n] = body
        if last:
            self.last_len = n
        return None
