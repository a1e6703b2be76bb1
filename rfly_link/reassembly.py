"""Sans-I/O reassembly of RflySim vision-sensor UDP fragments (DECISIONS.md, fragments).

Unlike the SDK's single slot per socket, frames are keyed by ``(sender, frame_id)`` for the
32-byte header and ``(sender, timestamp)`` for the 24-byte one, so fragments may arrive in any
order, two senders may interleave, and both header types may share a socket. Each frame is
assembled in one buffer allocated once its fragment size is known: fragment ``k`` is copied
to ``k * fragment_size``, so assembly is linear. Everything is bounded (frames in flight, frame
bytes, fragments per frame, and the memory of all buffers together, since a single small first
fragment may claim a buffer of ``count * fragment_size``) and every discarded datagram or frame
is counted by cause.
Frame buffers are recycled (:mod:`rfly_link.pool`) once the consumer has dropped a frame.

Memory: ``max_bytes_in_flight`` bounds every buffer the reassembler keeps, counted at its full
preallocated size: those of incomplete frames plus the idle ones its pool remembers. A completed
frame's buffer belongs to the consumer until it drops the frame (then it is idle in the pool),
so a receiver holds at most this budget plus the frames queued for or held by its consumer
(:class:`rfly_link.io.UdpReceiver` bounds that queue). The budget is per reassembler, so
per sensor receiver.
"""

from __future__ import annotations

import math
import mmap
import struct
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, NamedTuple

from rfly_link import wire
from rfly_link.errors import DropCause
from rfly_link.pool import BufferPool

_CHECKSUM = struct.Struct("<i")
_H24 = wire.FRAGMENT_HEADER_24.struct
_H32 = wire.FRAGMENT_HEADER_32.struct
FRAGMENT_SIZE = 60000


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


class ReassemblerStats(NamedTuple):
    datagrams: int
    fragments_accepted: int
    frames_completed: int
    bytes_completed: int
    frames_in_flight: int
    drops: dict[str, int]
    bytes_in_flight: int = 0  # buffer bytes (full preallocated size) of incomplete frames


class _Frame:
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

    def __init__(
        self, count: int, header_size: int, frame_id: int | None, ts: float, now_ns: int
    ) -> None:
        self.count = count
        self.header_size = header_size
        self.frame_id = frame_id
        self.timestamp_s = ts
        self.first_rx_ns = now_ns
        self.received = bytearray(count)
        self.have = 0
        self.fragment_size = 0
        self.buffer: mmap.mmap | None = None
        self.reserved = 0  # bytes counted against the in-flight budget
        self.pending_last: bytes | None = None
        self.last_len = 0


class Reassembler:
    """Feed datagrams with :meth:`feed`; get back the frames they complete.

    ``timeout_ns`` evicts a frame that has not completed since its first fragment;
    ``max_frames_in_flight`` evicts the oldest frame when a new one would exceed it;
    ``max_frame_bytes`` and ``max_fragments`` reject absurd sizes before allocating;
    ``max_bytes_in_flight`` bounds the buffers of all incomplete frames together with the idle
    pooled ones (see the module docstring): a frame that needs more evicts the oldest frames
    (counted as ``bytes_in_flight``), and a frame that alone exceeds it is dropped with the same
    cause.
    """

    def __init__(
        self,
        *,
        timeout_ns: int = 1_000_000_000,
        max_frames_in_flight: int = 8,
        max_frame_bytes: int = 32 * 1024 * 1024,
        max_fragments: int = 4096,
        max_bytes_in_flight: int = 64 * 1024 * 1024,
        remember_completed: int = 64,
    ) -> None:
        limits = (max_frames_in_flight, max_frame_bytes, max_fragments, max_bytes_in_flight)
        if min(limits) < 1:
            raise ValueError(
                "max_frames_in_flight, max_frame_bytes, max_fragments, max_bytes_in_flight: "
                f"must be >= 1, got {limits}"
            )
        self.timeout_ns = timeout_ns
        self.max_frames_in_flight = max_frames_in_flight
        self.max_frame_bytes = max_frame_bytes
        self.max_fragments = max_fragments
        self.max_bytes_in_flight = max_bytes_in_flight
        self._bytes_in_flight = 0
        self._remember = remember_completed
        self._frames: OrderedDict[Hashable, _Frame] = OrderedDict()
        self._completed: OrderedDict[Hashable, int] = OrderedDict()
        self._drops = dict.fromkeys(DropCause, 0)
        self._datagrams = 0
        self._accepted = 0
        self._frames_done = 0
        self._bytes_done = 0
        self._pool = BufferPool(slots=4)
        self._expiry_step_ns = max(1, timeout_ns // 16)
        self._next_expiry_ns = -(2**63)
        self._hint: tuple[Hashable, _Frame, int] | None = None
        self._slot: tuple[Hashable, _Frame, int, int, int] | None = None
        self._saved = b""

    # -- public ------------------------------------------------------------------------------

    @property
    def stats(self) -> ReassemblerStats:
        drops = {cause.value: n for cause, n in self._drops.items() if n}
        return ReassemblerStats(
            self._datagrams,
            self._accepted,
            self._frames_done,
            self._bytes_done,
            len(self._frames),
            drops,
            self._bytes_in_flight,
        )

    def drops(self, cause: DropCause) -> int:
        return self._drops[cause]

    def expire(self, now_ns: int) -> int:
        """Evict frames older than the timeout; returns how many were evicted.

        :meth:`feed` calls this itself, at most every ``timeout_ns / 16``, so an incomplete
        frame lives at most ``timeout_ns * 17 / 16`` after its first fragment.
        """
        self._next_expiry_ns = now_ns + self._expiry_step_ns
        evicted = 0
        frames = self._frames
        while frames:
            key, frame = next(iter(frames.items()))
            if now_ns - frame.first_rx_ns <= self.timeout_ns:
                break
            self._forget(key)
            self._drops[DropCause.TIMEOUT] += 1
            evicted += 1
        completed = self._completed
        while completed:
            key, done_ns = next(iter(completed.items()))
            if now_ns - done_ns <= self.timeout_ns:
                break
            del completed[key]
        return evicted

    def feed(
        self, datagram: bytes | bytearray | memoryview, sender: Hashable, now_ns: int
    ) -> list[SensorFrame]:
        """Process one datagram; returns the frames it completes (zero or one)."""
        self._datagrams += 1
        if now_ns >= self._next_expiry_ns:
            self.expire(now_ns)
        size = len(datagram)
        if size < 24:
            return self._drop(DropCause.SHORT)
        (checksum,) = _CHECKSUM.unpack_from(datagram)
        if checksum == wire.FRAGMENT_CHECKSUM_32:
            if size < 32:
                return self._drop(DropCause.SHORT)
            _, packet_len, seq, count, frame_id, _, ts = _H32.unpack_from(datagram)
            header_size = 32
            key: Hashable = (sender, 32, frame_id)
        elif checksum == wire.FRAGMENT_CHECKSUM_24:
            _, packet_len, seq, count, ts = _H24.unpack_from(datagram)
            header_size = 24
            frame_id = None
            key = (sender, 24, bytes(datagram[16:24]))  # raw bits: NaN-safe, exact
        else:
            return self._drop(DropCause.UNKNOWN_CHECKSUM)
        if packet_len != size:
            return self._drop(DropCause.WRONG_LENGTH)
        if count < 1 or count > self.max_fragments:
            return self._drop(DropCause.ABSURD_SIZE)
        if not 0 <= seq < count:
            return self._drop(DropCause.BAD_SEQUENCE)
        body = memoryview(datagram)[header_size:]
        if count == 1:
            return self._single(key, sender, header_size, frame_id, ts, body, now_ns)
        if key in self._completed:
            return self._drop(DropCause.LATE_FRAGMENT)
        frame = self._frames.get(key)
        if frame is None:
            frame = self._open(key, count, header_size, frame_id, ts, now_ns)
            if frame is None:
                return []
        elif frame.count != count:
            return self._drop(DropCause.INCONSISTENT)
        if frame.received[seq]:
            return self._drop(DropCause.DUPLICATE)
        if not self._store(key, frame, seq, body):
            return []
        return self._accept(key, sender, frame, seq, now_ns)

    # -- receiving in place (zero-copy) ------------------------------------------------------------

    def receive_slot(self) -> memoryview | None:
        """Where the next datagram may be received in place, or None (then use :meth:`feed`).

        When a frame is in progress, its next fragment will most likely be the next one in
        order: the slot is that fragment's place in the frame buffer, preceded by room for its
        header (the previous fragment's last bytes, saved here and restored afterwards). The
        caller receives into the slot, spilling any excess into a scratch buffer, then calls
        :meth:`feed_in_place`, or :meth:`cancel_in_place` if it decided to discard the datagram.
        """
        hint = self._hint
        if hint is None:
            return None
        key, frame, seq = hint
        if self._frames.get(key) is not frame or frame.received[seq] or frame.buffer is None:
            self._hint = None
            return None
        header = frame.header_size
        start = seq * frame.fragment_size - header
        if start < 0:  # fragments smaller than a header: no room in front, use feed()
            return None
        end = start + header + frame.fragment_size
        self._saved = bytes(frame.buffer[start : start + header])
        self._slot = (key, frame, seq, start, end - start)
        return memoryview(frame.buffer)[start:end]

    def cancel_in_place(self) -> None:
        """Undo :meth:`receive_slot` after a datagram that must not be processed."""
        slot = self._slot
        if slot is not None:
            _, frame, _, start, _ = slot
            assert frame.buffer is not None
            frame.buffer[start : start + len(self._saved)] = self._saved
            self._slot = None

    def feed_in_place(
        self, nbytes: int, overflow: memoryview, sender: Hashable, now_ns: int
    ) -> list[SensorFrame]:
        """Process a datagram received into the last :meth:`receive_slot` (excess in overflow).

        A datagram that is not the expected fragment is copied out and fed normally, so the
        result is always the same as :meth:`feed` on the same bytes.
        """
        slot = self._slot
        if slot is None:
            raise RuntimeError("feed_in_place() without a receive_slot()")
        key, frame, seq, start, room = slot
        buffer = frame.buffer
        assert buffer is not None
        header = frame.header_size
        if now_ns >= self._next_expiry_ns:
            self.expire(now_ns)
        fits = (
            self._frames.get(key) is frame
            and header < nbytes <= room
            and self._is_expected(buffer, start, nbytes, key, frame, seq, sender)
        )
        if not fits:
            landed = min(nbytes, room)
            datagram = bytes(buffer[start : start + landed]) + bytes(overflow[: nbytes - landed])
            self.cancel_in_place()
            return self.feed(datagram, sender, now_ns)
        self._slot = None
        buffer[start : start + header] = self._saved
        self._datagrams += 1
        if seq == frame.count - 1:
            frame.last_len = nbytes - header
        return self._accept(key, sender, frame, seq, now_ns)

    def _is_expected(
        self,
        buffer: mmap.mmap,
        start: int,
        nbytes: int,
        key: Hashable,
        frame: _Frame,
        seq: int,
        sender: Hashable,
    ) -> bool:
        if frame.header_size == 32:
            checksum, packet_len, got_seq, count, frame_id, _, _ = _H32.unpack_from(buffer, start)
            same_key = checksum == wire.FRAGMENT_CHECKSUM_32 and key == (sender, 32, frame_id)
        else:
            checksum, packet_len, got_seq, count, _ = _H24.unpack_from(buffer, start)
            ts_bits = bytes(buffer[start + 16 : start + 24])
            same_key = checksum == wire.FRAGMENT_CHECKSUM_24 and key == (sender, 24, ts_bits)
        body = nbytes - frame.header_size
        size_ok = (
            body <= frame.fragment_size if seq == frame.count - 1 else body == frame.fragment_size
        )
        return (
            same_key
            and packet_len == nbytes
            and got_seq == seq
            and count == frame.count
            and size_ok
        )

    def _accept(
        self, key: Hashable, sender: Hashable, frame: _Frame, seq: int, now_ns: int
    ) -> list[SensorFrame]:
        frame.received[seq] = 1
        frame.have += 1
        self._accepted += 1
        if frame.have < frame.count:
            nxt = seq + 1
            if frame.buffer is not None and nxt < frame.count and not frame.received[nxt]:
                self._hint = (key, frame, nxt)
            return []
        self._hint = None
        if (frame.count - 1) * frame.fragment_size + frame.last_len > self.max_frame_bytes:
            self._forget(key)
            self._remember_completed(key, now_ns)  # its other fragments are late, not new
            return self._drop(DropCause.FRAME_TOO_LARGE)
        return [self._finish(key, sender, frame, now_ns)]

    # -- internals -----------------------------------------------------------------------------

    def _drop(self, cause: DropCause) -> list[SensorFrame]:
        self._drops[cause] += 1
        return []

    def _single(
        self,
        key: Hashable,
        sender: Hashable,
        header_size: int,
        frame_id: int | None,
        ts: float,
        body: memoryview,
        now_ns: int,
    ) -> list[SensorFrame]:
        if len(body) > self.max_frame_bytes:
            return self._drop(DropCause.FRAME_TOO_LARGE)
        if key in self._completed:
            return self._drop(DropCause.DUPLICATE)
        self._remember_completed(key, now_ns)
        self._accepted += 1
        self._frames_done += 1
        self._bytes_done += len(body)
        payload = memoryview(bytes(body)).toreadonly()
        return [SensorFrame(sender, header_size, frame_id, ts, payload, 1, now_ns, now_ns)]

    def _open(
        self,
        key: Hashable,
        count: int,
        header_size: int,
        frame_id: int | None,
        ts: float,
        now_ns: int,
    ) -> _Frame | None:
        if len(self._frames) >= self.max_frames_in_flight:
            self._forget(next(iter(self._frames)))
            self._drops[DropCause.OVERFLOW] += 1
        frame = _Frame(count, header_size, frame_id, ts, now_ns)
        self._frames[key] = frame
        return frame

    def _store(self, key: Hashable, frame: _Frame, seq: int, body: memoryview) -> bool:
        n = len(body)
        last = seq == frame.count - 1
        if frame.buffer is None:
            if last:
                if frame.pending_last is not None:  # pragma: no cover - guarded by received[]
                    return False
                frame.pending_last = bytes(body)
                frame.last_len = n
                return True
            # The smallest frame these fragments can make: the last may be shorter, even empty
            # (the SDK's sender), so a frame of exactly max_frame_bytes may reserve up to one
            # fragment more; the exact size is checked when the frame completes.
            if n == 0 or (frame.count - 1) * n > self.max_frame_bytes:
                self._forget(key)
                self._drop(DropCause.FRAME_TOO_LARGE if n else DropCause.INCONSISTENT)
                return False
            if frame.pending_last is not None and frame.last_len > n:
                self._forget(key)
                self._drop(DropCause.INCONSISTENT)
                return False
            buffer = self._allocate(key, frame.count * n)
            if buffer is None:
                self._forget(key)
                self._drop(DropCause.BYTES_IN_FLIGHT)
                return False
            frame.reserved = len(buffer)
            frame.fragment_size = n
            frame.buffer = buffer
            if frame.pending_last is not None:
                start = (frame.count - 1) * n
                frame.buffer[start : start + frame.last_len] = frame.pending_last
                frame.pending_last = None
        chunk = frame.fragment_size
        if (last and n > chunk) or (not last and n != chunk):
            self._drop(DropCause.INCONSISTENT)
            return False
        start = seq * chunk
        frame.buffer[start : start + n] = body
        if last:
            frame.last_len = n
        return True

    def _allocate(self, key: Hashable, need: int) -> mmap.mmap | None:
        """A buffer of ``need`` bytes or more within the budget, or None if ``need`` exceeds it.

        The oldest other frames are evicted to make room, and the pool frees idle buffers so
        that they, the frames in flight and the new buffer stay within the budget together.
        """
        budget = self.max_bytes_in_flight
        if need > budget:
            return None
        while self._bytes_in_flight + need > budget:
            victim = next(k for k, f in self._frames.items() if f.reserved and k != key)
            self._forget(victim)
            self._drops[DropCause.BYTES_IN_FLIGHT] += 1
        buffer = self._pool.take(need, budget=budget - self._bytes_in_flight)
        self._bytes_in_flight += len(buffer)
        return buffer

    def _forget(self, key: Hashable) -> None:
        """Remove an incomplete or finished frame and release its share of the budget."""
        frame = self._frames.pop(key)
        self._bytes_in_flight -= frame.reserved
        frame.reserved = 0
        if self._hint is not None and self._hint[1] is frame:
            self._hint = None

    def _finish(self, key: Hashable, sender: Hashable, frame: _Frame, now_ns: int) -> SensorFrame:
        self._forget(key)
        self._remember_completed(key, now_ns)
        assert frame.buffer is not None  # a frame of >= 2 fragments has a non-last one
        total = (frame.count - 1) * frame.fragment_size + frame.last_len
        self._frames_done += 1
        self._bytes_done += total
        payload = memoryview(frame.buffer)[:total].toreadonly()
        return SensorFrame(
            sender,
            frame.header_size,
            frame.frame_id,
            frame.timestamp_s,
            payload,
            frame.count,
            frame.first_rx_ns,
            now_ns,
        )

    def _remember_completed(self, key: Hashable, now_ns: int) -> None:
        self._completed[key] = now_ns
        self._completed.move_to_end(key)
        while len(self._completed) > self._remember:
            self._completed.popitem(last=False)


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
    if header_size not in (24, 32):
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
        if header_size == 32:
            head = _H32.pack(
                wire.FRAGMENT_CHECKSUM_32, packet_len, seq, count, frame_id, 0, timestamp_s
            )
        else:
            head = _H24.pack(wire.FRAGMENT_CHECKSUM_24, packet_len, seq, count, timestamp_s)
        out.append(head + body)
    return out
