"""Sans-I/O reassembly of RflySim vision-sensor UDP fragments (docs/protocol-decisions.md).

Unlike the SDK's single slot per socket, frames are keyed by ``(sender, frame_id)`` for the
32-byte header and ``(sender, timestamp)`` for the 24-byte one, so fragments may arrive in any
order, two senders may interleave, and both header types may share a socket. Each frame is
assembled in one buffer (:mod:`~rfly_link.reassembly.frame`), the header read by
:mod:`~rfly_link.reassembly.fragments`. Everything is bounded (frames in flight, frame
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

import mmap
from collections import OrderedDict
from collections.abc import Hashable
from typing import NamedTuple

from rfly_link.errors import DropCause
from rfly_link.pool import BufferPool
from rfly_link.reassembly.fragments import FragmentHeader, read_header
from rfly_link.reassembly.frame import PartialFrame, SensorFrame


class ReassemblerStats(NamedTuple):
    datagrams: int
    fragments_accepted: int
    frames_completed: int
    bytes_completed: int
    frames_in_flight: int
    drops: dict[str, int]
    bytes_in_flight: int = 0  # buffer bytes (full preallocated size) of incomplete frames


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
        self._frames: OrderedDict[Hashable, PartialFrame] = OrderedDict()
        self._completed: OrderedDict[Hashable, int] = OrderedDict()
        self._drops = dict.fromkeys(DropCause, 0)
        self._datagrams = 0
        self._accepted = 0
        self._frames_done = 0
        self._bytes_done = 0
        self._pool = BufferPool(slots=4)
        self._expiry_step_ns = max(1, timeout_ns // 16)
        self._next_expiry_ns = -(2**63)
        self._hint: tuple[Hashable, PartialFrame, int] | None = None
        self._slot: tuple[Hashable, PartialFrame, int, int, int] | None = None
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
        header = read_header(datagram)
        if not isinstance(header, FragmentHeader):
            return self._drop(header)
        size, seq, count = header.size, header.packet_seq, header.packet_count
        if header.packet_len != len(datagram):
            return self._drop(DropCause.WRONG_LENGTH)
        if count < 1 or count > self.max_fragments:
            return self._drop(DropCause.ABSURD_SIZE)
        if not 0 <= seq < count:
            return self._drop(DropCause.BAD_SEQUENCE)
        key = (sender, size, header.frame)
        body = memoryview(datagram)[size:]
        if count == 1:
            return self._single(key, sender, header, body, now_ns)
        if key in self._completed:
            return self._drop(DropCause.LATE_FRAGMENT)
        frame = self._frames.get(key)
        if frame is None:
            frame = self._open(key, header, now_ns)
        elif frame.count != count:
            return self._drop(DropCause.INCONSISTENT)
        if frame.received[seq]:
            return self._drop(DropCause.DUPLICATE)
        refused = frame.store(seq, body, self.max_frame_bytes, self._allocate)
        if refused is not None:
            if frame.buffer is None:  # it will never have one: the frame is lost
                self._forget(key)
            return self._drop(refused)
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
        frame: PartialFrame,
        seq: int,
        sender: Hashable,
    ) -> bool:
        header = read_header(buffer, start, nbytes)
        if not isinstance(header, FragmentHeader):
            return False
        body = nbytes - header.size
        size_ok = (
            body <= frame.fragment_size if seq == frame.count - 1 else body == frame.fragment_size
        )
        return (
            key == (sender, header.size, header.frame)
            and header.packet_len == nbytes
            and header.packet_seq == seq
            and header.packet_count == frame.count
            and size_ok
        )

    def _accept(
        self, key: Hashable, sender: Hashable, frame: PartialFrame, seq: int, now_ns: int
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
        if frame.size > self.max_frame_bytes:
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
        header: FragmentHeader,
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
        return [
            SensorFrame(
                sender,
                header.size,
                header.frame_id,
                header.timestamp_s,
                payload,
                1,
                now_ns,
                now_ns,
            )
        ]

    def _open(self, key: Hashable, header: FragmentHeader, now_ns: int) -> PartialFrame:
        if len(self._frames) >= self.max_frames_in_flight:
            self._forget(next(iter(self._frames)))
            self._drops[DropCause.OVERFLOW] += 1
        frame = PartialFrame(header, now_ns)
        self._frames[key] = frame
        return frame

    def _allocate(self, need: int) -> mmap.mmap | None:
        """A buffer of ``need`` bytes or more within the budget, or None if ``need`` exceeds it.

        The oldest other frames are evicted to make room, and the pool frees idle buffers so
        that they, the frames in flight and the new buffer stay within the budget together.
        """
        budget = self.max_bytes_in_flight
        if need > budget:
            return None
        while self._bytes_in_flight + need > budget:
            # The frame asking has reserved nothing yet: the victims are all other frames.
            victim = next(k for k, f in self._frames.items() if f.reserved)
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

    def _finish(
        self, key: Hashable, sender: Hashable, frame: PartialFrame, now_ns: int
    ) -> SensorFrame:
        self._forget(key)
        self._remember_completed(key, now_ns)
        assert frame.buffer is not None  # a frame of >= 2 fragments has a non-last one
        total = frame.size
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
