"""Frame faults applied to encoded frames, sans-I/O: one frame in, the bytes to send out.

``FaultInjector.apply(frame, t_s)`` returns what goes on the wire for one 35-byte frame
produced ``t_s`` after the start: a garbage burst before it, the frame itself (intact,
truncated, short of some bytes or with flipped bits) and maybe a second copy. Every fault is
counted as it is injected, and the arithmetic closes: ``bytes_out == 35 * valid_copies +
garbage bytes + bytes of destroyed frames``. A destroyed frame stays destroyed: flips the CRC
cannot see get one more flip, and a cut that the next frame's first bytes would complete (its
last byte equal to 0xA5, say) cuts one byte more, so the host never finds a frame that the
injector counts as lost (both about 2**-16 per damaged frame).

Each fault draws from its own generator, seeded from the timeline's seed and the fault's place
in it, so the same timeline and seed give the same bytes, and adding a fault does not change
what the others do.
"""

from __future__ import annotations

import random
from typing import Any, NamedTuple

from gizmo_host.errors import FrameError
from gizmo_host.rigs.board.faults import (
    DESTRUCTIVE,
    Fault,
    FaultKind,
    FaultTimeline,
    geometric_gap,
)
from gizmo_host.wire.protocol import (
    CRC_END,
    FRAME_LEN,
    HEADER_LEN,
    MSG_TYPE_VISION_RESULT,
    SYNC,
    VERSION,
    VisionResult,
)

_FRAME_BITS = FRAME_LEN * 8


_NEXT_FRAME = SYNC + bytes([VERSION, MSG_TYPE_VISION_RESULT])  # how the next frame begins


def _decodes(data: bytes) -> bool:
    try:
        VisionResult.decode(data)
    except FrameError:
        return False
    return True


def _completes(damaged: bytes) -> bool:
    """Whether the next frame's first bytes would make ``damaged`` a valid frame again."""
    missing = FRAME_LEN - len(damaged)
    return 0 < missing <= len(_NEXT_FRAME) and _decodes(damaged + _NEXT_FRAME[:missing])


def _not_completed(damaged: bytes) -> bytes:
    """``damaged``, shortened while the next frame's first bytes would complete it (a frame cut
    just before a last byte equal to 0xA5, say): a destroyed frame stays destroyed."""
    while _completes(damaged):
        damaged = damaged[:-1]
    return damaged


def _not_completing(damaged: bytes, burst: bytes) -> bytes:
    """``burst``, its first byte changed while it would complete ``damaged`` (sent just before
    it) into a valid frame: garbage after a cut frame must not mend it (p ~ 1/256 a burst)."""
    missing = FRAME_LEN - len(damaged)
    while 0 < missing <= len(burst) and _decodes(damaged + burst[:missing]):
        burst = bytes([(burst[0] + 1) & 0xFF]) + burst[1:]
    return burst


class FrameOutcome(NamedTuple):
    chunks: tuple[bytes, ...]  # in wire order: garbage bursts, then the frame (and its copy)
    valid_copies: int  # 0: destroyed; 1: intact; 2: intact and duplicated
    destroyed_by: FaultKind | None


class _Window:
    """A frame fault's state: its generator and how many frames it has hit."""

    __slots__ = ("fault", "hits", "rng")

    def __init__(self, fault: Fault, rng: random.Random) -> None:
        self.fault = fault
        self.rng = rng
        self.hits = 0

    def covers(self, t_s: float) -> bool:
        fault = self.fault
        if t_s < fault.at_s:
            return False
        limit = fault.max_frames
        if limit is not None and self.hits >= limit:
            return False
        return fault.duration_s <= 0 or t_s < fault.end_s

    def draw(self, t_s: float) -> bool:
        """Whether this frame is hit (consumes a draw only inside the window)."""
        if not self.covers(t_s):
            return False
        return self.fault.probability >= 1.0 or self.rng.random() < self.fault.probability


class FaultInjector:
    """Applies a timeline's frame faults; counts every fault it injects."""

    def __init__(self, timeline: FaultTimeline) -> None:
        self.timeline = timeline
        self._windows: dict[FaultKind, list[_Window]] = {}
        for index, fault in enumerate(timeline.faults):
            rng = random.Random(f"{timeline.seed}:{index}:{fault.kind.value}")
            self._windows.setdefault(fault.kind, []).append(_Window(fault, rng))
        self.frames_in = self.bytes_out = 0
        self.bit_error_frames = self.bits_flipped = 0
        self.drop_frames = self.bytes_dropped = 0
        self.garbage_bursts = self.garbage_bytes = 0
        self.truncated_frames = self.bytes_cut = 0
        self.duplicated_frames = 0
        self.destroyed_bytes_out = 0  # bytes of destroyed frames that still went out
        self._destroyed_tail = b""  # the last chunk out, when it was a destroyed frame

    def apply(self, frame: bytes, t_s: float) -> FrameOutcome:
        self.frames_in += 1
        chunks = [self._garbage(w) for w in self._windows.get(FaultKind.GARBAGE, ()) if w.draw(t_s)]
        if chunks and self._destroyed_tail:
            chunks[0] = _not_completing(self._destroyed_tail, chunks[0])
        damaged: bytes | None = None
        destroyed_by: FaultKind | None = None
        for kind in DESTRUCTIVE:
            for window in self._windows.get(kind, ()):
                if window.draw(t_s):
                    damaged = self._damage(kind, window, frame)
                    if damaged is not None:
                        window.hits += 1
                        destroyed_by = kind
                        break
            if destroyed_by is not None:
                break
        if damaged is not None:
            chunks.append(damaged)
            self.destroyed_bytes_out += len(damaged)
            copies = 0
        else:
            chunks.append(frame)
            copies = 1
            for window in self._windows.get(FaultKind.DUPLICATE, ()):
                if window.draw(t_s):
                    window.hits += 1
                    self.duplicated_frames += 1
                    chunks.append(frame)
                    copies = 2
                    break
        self.bytes_out += sum(map(len, chunks))
        self._destroyed_tail = damaged or b""
        return FrameOutcome(tuple(chunks), copies, destroyed_by)

    def _garbage(self, window: _Window) -> bytes:
        window.hits += 1
        burst = window.rng.randbytes(window.fault.bytes)
        self.garbage_bursts += 1
        self.garbage_bytes += len(burst)
        return burst

    def _damage(self, kind: FaultKind, window: _Window, frame: bytes) -> bytes | None:
        """The damaged frame, or None when the fault left it intact (no bit drawn to flip)."""
        rng, fault = window.rng, window.fault
        if kind is FaultKind.TRUNCATE:
            keep = (
                fault.keep_bytes if fault.keep_bytes is not None else rng.randint(1, FRAME_LEN - 1)
            )
            damaged = _not_completed(frame[:keep])
            self.truncated_frames += 1
            self.bytes_cut += FRAME_LEN - len(damaged)
            return damaged
        if kind is FaultKind.DROP_BYTES:
            gone = set(rng.sample(range(FRAME_LEN), fault.bytes))
            damaged = _not_completed(bytes(b for i, b in enumerate(frame) if i not in gone))
            self.drop_frames += 1
            self.bytes_dropped += FRAME_LEN - len(damaged)
            return damaged
        bits = []
        position = geometric_gap(rng.random(), fault.ber)
        while position < _FRAME_BITS:
            bits.append(position)
            position += 1 + geometric_gap(rng.random(), fault.ber)
        if not bits:
            return None
        out = bytearray(frame)
        for bit in bits:
            out[bit >> 3] ^= 1 << (bit & 7)  # bit i: byte i // 8, LSB first as a UART sends it
        flipped = len(bits)
        while _decodes(bytes(out)) or _completes(bytes(out)):
            # A pattern the CRC cannot see (p ~ 2**-16): one more flip, in the payload.
            bit = rng.randrange(HEADER_LEN * 8, CRC_END * 8)
            out[bit >> 3] ^= 1 << (bit & 7)
            flipped += 1
        self.bit_error_frames += 1
        self.bits_flipped += flipped
        return bytes(out)

    def stats(self) -> dict[str, Any]:
        return {
            "bit_errors": {"frames": self.bit_error_frames, "bits": self.bits_flipped},
            "drop_bytes": {"frames": self.drop_frames, "bytes": self.bytes_dropped},
            "garbage": {"bursts": self.garbage_bursts, "bytes": self.garbage_bytes},
            "truncate": {"frames": self.truncated_frames, "bytes_cut": self.bytes_cut},
            "duplicate": {"frames": self.duplicated_frames},
        }
