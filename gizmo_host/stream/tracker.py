"""Per-source sequence tracking: gaps across the 65535 -> 0 wrap, duplicates, reorderings, resets.

State only, driven by ``observe()`` calls from the I/O shell; it never reads a clock (the host
receive time is passed in). The rules (docs/protocol-decisions.md, Gizmo UART):

- The header ``sequence`` is a uint16 compared modulo 2**16: a forward step of ``d`` frames
  (``1 <= d < 32768``) counts ``d - 1`` frames as lost.
- A frame up to ``reorder_window`` behind the newest one, and not newer on the device clock, is
  a late arrival (it was counted lost when the gap opened, so the loss count is corrected) or,
  if already seen, a duplicate.
- A sequence that falls back by more than the window while the device clock ``timestamp_ms``
  also falls back is a **device reset**: a new epoch, never 65,000 lost frames. "Falls back" is
  judged against the host clock, so the 2**32 ms wrap of ``timestamp_ms`` is not a fall-back.
- A sequence that falls back without the device clock doing so is a discontinuity: counted, and
  tracking restarts from it (no loss is invented). So is one that jumps further ahead than the
  frames the board could have sent in the time its clock moved (``MAX_BURST_LOST`` plus
  ``MAX_LOST_PER_MS`` a millisecond): another voice's sequence, not a loss.
- A sequence that moves forward by at most ``STEP_WINDOW`` frames is no reset when the device
  clock moved by at most ``STEP_MAX_MS`` either way: a restart begins again at 0, and a device
  clock that jumps while the frames keep their order is a clock step (the device clock's
  estimator confirms it). Judged
  on receive times alone, two frames the host read together after a stall of its own (one
  read late, the next on time, with frames lost between) would otherwise look like a restart:
  the emulator, knowing its send times, counted no such reset (issue 29 item 6).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final, NamedTuple

SEQUENCE_MODULUS: Final = 1 << 16
TIMESTAMP_MODULUS: Final = 1 << 32
DEFAULT_REORDER_WINDOW: Final = 16
DEFAULT_MAX_SKEW_PPM: Final = 200.0  # the largest device clock drift believed
_MASK: Final = (1 << 64) - 1
_WINDOW_SLOTS: Final = 64  # >= the largest reorder window
# A copy of a frame comes at once (a link that sends it twice); the same frame this much later
# is a board that restarted and repeats its first life, stamps and scene alike (red team: its
# reset went unseen and the mapping was left 300 ms late, HOLD stale for good).
DUPLICATE_WITHIN_NS: Final = 100_000_000
_SLOT_MASK: Final = _WINDOW_SLOTS - 1
ADVANCE_TOLERANCE_MS: Final = (
    1000.0  # a device clock step this small is an advance, whatever the host
)
STEP_WINDOW: Final = (
    64  # a forward sequence step this small is no restart (0.1% of resets land here)
)
STEP_MAX_MS: Final = 60_000  # ... unless the device clock moved further than this
# A board loses at most this many frames at once plus this many a millisecond of its own
# clock (a 921600 line carries 2.6 frames a ms; one image's results share a stamp). A forward
# step beyond it is no loss but another voice's sequence: a discontinuity (red team rt13: a
# second sender 17 ahead of the board, its clock copied, had its first frame PROCEED).
MAX_BURST_LOST: Final = 2
MAX_LOST_PER_MS: Final = 3


class SequenceEvent(Enum):
    """What one observed frame meant for its source's sequence."""

    FIRST = "first"  # the first frame of a source
    IN_ORDER = "in_order"  # exactly the next sequence
    GAP = "gap"  # ahead of the next sequence: frames were lost
    LATE = "late"  # behind the newest, not seen before: a small reordering
    DUPLICATE = "duplicate"  # seen already (within the window)
    RESET = "reset"  # sequence and device clock both fell back: the board restarted
    DISCONTINUITY = "discontinuity"  # sequence fell back, the device clock did not


_IN_ORDER: Final = SequenceEvent.IN_ORDER
_GAP: Final = SequenceEvent.GAP
_HALF_SEQUENCE: Final = SEQUENCE_MODULUS // 2


class SourceStats(NamedTuple):
    """Counters for one source_id; ``lost`` is net of late arrivals that filled a gap."""

    received: int
    lost: int
    duplicates: int
    reordered: int
    resets: int
    discontinuities: int
    last_sequence: int | None
    epoch: int  # incremented on every device reset


def clock_step_ms(previous_ms: int, current_ms: int) -> int:
    """The device clock's move as the shorter way round the uint32 circle (either sign)."""
    forward = (current_ms - previous_ms) % TIMESTAMP_MODULUS
    return forward if forward < TIMESTAMP_MODULUS // 2 else forward - TIMESTAMP_MODULUS


def is_clock_step(step: int, previous_ms: int, current_ms: int) -> bool:
    """Frames that kept their order (``step``: the sequence's forward distance) while the
    device clock moved by at most ``STEP_MAX_MS``: a clock step, never a restart."""
    return 0 < step <= STEP_WINDOW and abs(clock_step_ms(previous_ms, current_ms)) <= STEP_MAX_MS


def implausible_gap(step: int, advance: int | None) -> bool:
    """A forward step of ``step`` frames further than the board could have sent while its
    clock moved ``advance`` ms (``MAX_BURST_LOST`` plus ``MAX_LOST_PER_MS`` a millisecond):
    another voice's sequence, not a loss."""
    return step - 1 > MAX_BURST_LOST + MAX_LOST_PER_MS * max(advance or 0, 0)


def is_device_reset(
    step: int, advance: int | None, reorder_window: int, *, clock_step: bool = False
) -> bool:
    """The reset rule for a frame after the source's previous one: ``step`` is the sequence's
    forward distance modulo 2**16, ``advance`` what ``device_clock_advance_ms`` made of the
    device clock (None: it fell back or moved beyond what the host's clock allows),
    ``clock_step`` what :func:`is_clock_step` says. Frames behind by at most
    ``reorder_window`` are late arrivals or duplicates, never resets."""
    if advance is None:
        return not clock_step
    if 0 < step < SEQUENCE_MODULUS // 2:
        return False
    behind = (SEQUENCE_MODULUS - step) % SEQUENCE_MODULUS
    return not (behind <= reorder_window and advance <= 0) and advance < 0


def device_clock_advance_ms(
    previous_ms: int,
    current_ms: int,
    host_elapsed_ns: int,
    *,
    max_skew_ppm: float = DEFAULT_MAX_SKEW_PPM,
    tolerance_ms: float = ADVANCE_TOLERANCE_MS,
) -> int | None:
    """How far the uint32 device clock moved, or None when it fell back (a reset).

    The forward distance modulo 2**32 is accepted when it agrees with the host clock's elapsed
    time (within ``tolerance_ms`` plus the skew bound), so a 2**32 wrap is an advance while a
    restart to 0 is not, whatever the uptime. A small step back (a reordered frame, at most
    ``tolerance_ms``) is returned as a negative advance. A forward step of at most
    ``tolerance_ms`` is always an advance.
    """
    forward = (current_ms - previous_ms) % TIMESTAMP_MODULUS
    if forward <= tolerance_ms:  # the usual small step forward, whatever the host clock says
        return forward
    host_ms = max(host_elapsed_ns, 0) / 1e6
    allowed = host_ms * (1.0 + max_skew_ppm * 1e-6) + tolerance_ms
    if forward <= allowed:
        return forward
    backward = TIMESTAMP_MODULUS - forward
    if backward <= tolerance_ms and host_ms <= tolerance_ms:
        return -backward
    return None


@dataclass(slots=True)
class _SourceState:
    last_sequence: int
    last_timestamp_ms: int
    last_host_ns: int
    seen_mask: int  # bit i set: sequence (last_sequence - i) was received
    timestamps: list[int]  # timestamp_ms of the frames in the window, by sequence % 64
    frames: list[object]  # the frames themselves (a copy is the same frame, whole)
    received_ns: list[int]  # when each was read
    span: int = 1  # how many of those bits are known (positions since the first frame)
    received: int = 1
    lost: int = 0
    duplicates: int = 0
    reordered: int = 0
    resets: int = 0
    discontinuities: int = 0
    epoch: int = 0

    def stats(self) -> SourceStats:
        return SourceStats(
            self.received,
            self.lost,
            self.duplicates,
            self.reordered,
            self.resets,
            self.discontinuities,
            self.last_sequence,
            self.epoch,
        )


class SequenceTracker:
    """Tracks every source_id seen on one link. Bounded: at most 256 sources (uint8 ids)."""

    __slots__ = ("_max_skew_ppm", "_reorder_window", "_sources")

    def __init__(
        self,
        *,
        reorder_window: int = DEFAULT_REORDER_WINDOW,
        max_skew_ppm: float = DEFAULT_MAX_SKEW_PPM,
    ) -> None:
        if not 0 <= reorder_window <= 64:
            raise ValueError(f"reorder_window: expected 0..64, got {reorder_window!r}")
        self._reorder_window = reorder_window
        self._max_skew_ppm = max_skew_ppm
        self._sources: dict[int, _SourceState] = {}

    def observe(
        self,
        source_id: int,
        sequence: int,
        timestamp_ms: int,
        host_ns: int,
        frame: object = None,
    ) -> SequenceEvent:
        """Account for one valid frame of ``source_id`` received at host time ``host_ns``.
        ``frame``: the frame itself (any value equal to its copies): a DUPLICATE is a frame
        equal to the one kept for its sequence and time, read within
        :data:`DUPLICATE_WITHIN_NS` of it, not one that merely shares them."""
        state = self._sources.get(source_id)
        if state is None:
            timestamps = [0] * _WINDOW_SLOTS
            timestamps[sequence & _SLOT_MASK] = timestamp_ms
            frames: list[object] = [None] * _WINDOW_SLOTS
            frames[sequence & _SLOT_MASK] = frame
            received = [0] * _WINDOW_SLOTS
            received[sequence & _SLOT_MASK] = host_ns
            self._sources[source_id] = _SourceState(
                sequence, timestamp_ms, host_ns, 1, timestamps, frames, received
            )
            return SequenceEvent.FIRST
        state.received += 1
        step = (sequence - state.last_sequence) % SEQUENCE_MODULUS
        ahead_ms = (timestamp_ms - state.last_timestamp_ms) % TIMESTAMP_MODULUS
        # the usual small step forward; else the host clock decides
        advance = (
            ahead_ms
            if ahead_ms <= ADVANCE_TOLERANCE_MS
            else device_clock_advance_ms(
                state.last_timestamp_ms,
                timestamp_ms,
                host_ns - state.last_host_ns,
                max_skew_ppm=self._max_skew_ppm,
            )
        )
        if advance is None and not is_clock_step(step, state.last_timestamp_ms, timestamp_ms):
            # The device clock restarted, wherever the sequence went (unless it kept order).
            return self._restart(state, sequence, timestamp_ms, host_ns, reset=True, frame=frame)
        if 0 < step < _HALF_SEQUENCE:
            if implausible_gap(step, advance):
                return self._restart(
                    state, sequence, timestamp_ms, host_ns, reset=False, frame=frame
                )
            if step != 1:
                state.lost += step - 1
            state.seen_mask = ((state.seen_mask << step) | 1) & _MASK
            if state.span < _WINDOW_SLOTS:
                span = state.span + step
                state.span = span if span < _WINDOW_SLOTS else _WINDOW_SLOTS
            slot = sequence & _SLOT_MASK
            state.timestamps[slot] = timestamp_ms
            state.frames[slot] = frame
            state.received_ns[slot] = host_ns
            state.last_sequence = sequence
            state.last_timestamp_ms = timestamp_ms
            state.last_host_ns = host_ns
            return _IN_ORDER if step == 1 else _GAP
        assert advance is not None  # a forward step took every None above
        behind = (SEQUENCE_MODULUS - step) % SEQUENCE_MODULUS
        if behind <= self._reorder_window and advance <= 0:  # late frames are older
            bit = 1 << behind
            slot = sequence & _SLOT_MASK
            if state.seen_mask & bit:
                if (
                    state.timestamps[slot] == timestamp_ms
                    and state.frames[slot] == frame
                    and host_ns - state.received_ns[slot] <= DUPLICATE_WITHIN_NS
                ):
                    state.duplicates += 1
                    state.received -= 1
                    return SequenceEvent.DUPLICATE
                # Same sequence, another time or content: a board that reset within the
                # window (a boot loop; a deterministic boot repeats the stamps, not what it
                # sees), not a copy of a frame we have.
                return self._restart(
                    state, sequence, timestamp_ms, host_ns, reset=True, frame=frame
                )
            state.seen_mask |= bit
            state.timestamps[slot] = timestamp_ms
            state.frames[slot] = frame
            state.received_ns[slot] = host_ns
            state.reordered += 1
            if behind < state.span:  # it was counted lost when the gap opened
                state.lost -= 1
            return SequenceEvent.LATE
        return self._restart(state, sequence, timestamp_ms, host_ns, reset=advance < 0, frame=frame)

    @staticmethod
    def _advance(state: _SourceState, sequence: int, timestamp_ms: int, host_ns: int) -> None:
        state.last_sequence = sequence
        state.last_timestamp_ms = timestamp_ms
        state.last_host_ns = host_ns

    def _restart(
        self,
        state: _SourceState,
        sequence: int,
        timestamp_ms: int,
        host_ns: int,
        *,
        reset: bool,
        frame: object,
    ) -> SequenceEvent:
        if reset:
            state.resets += 1
            state.epoch += 1
        else:
            state.discontinuities += 1
        state.seen_mask = state.span = 1
        state.timestamps[sequence & _SLOT_MASK] = timestamp_ms
        state.frames[sequence & _SLOT_MASK] = frame
        state.received_ns[sequence & _SLOT_MASK] = host_ns
        self._advance(state, sequence, timestamp_ms, host_ns)
        return SequenceEvent.RESET if reset else SequenceEvent.DISCONTINUITY

    def stats(self) -> dict[int, SourceStats]:
        """Counters per source_id."""
        return {source_id: state.stats() for source_id, state in sorted(self._sources.items())}

    def forget(self) -> None:
        """Drop all sources (a different board may be plugged in next)."""
        self._sources.clear()


SEQUENCE_CONFLICT_HOLD_NS: Final = 500_000_000  # two signs this close: a conflict, this long after


class SequenceConflicts:
    """The sources whose sequence went back lately without a reset (a ``DISCONTINUITY``, or a
    ``LATE`` frame: a UART delivers one board's frames in order). A board's own sequence does
    not: it is a second voice with the board's source_id, or a broken board, and which frames
    are the board's is unknown. Each such frame is a *sign*, never acted on itself. Two signs
    within ``SEQUENCE_CONFLICT_HOLD_NS`` put the source *in conflict* until that long after
    the latest: none of its results is acted on meanwhile. Counted by time, not by frames in
    order: a second voice can send frames in order as well as the board (red team rt15: three
    spoofed frames in a row settled a source that counted frames, and PROCEEDed on the third,
    28 times in 30). One sign alone (a board that restarts its counter, certify's sequence
    jump near the wrap) costs that frame, not half a second."""

    __slots__ = ("_signs",)

    def __init__(self) -> None:
        self._signs: dict[int, tuple[int, int | None]] = {}  # source -> latest, the one before

    def observe(self, source_id: int, event: SequenceEvent, rx_ns: int) -> bool:
        """Account one frame read at ``rx_ns``; ``True``: it is a sign, or its source is in
        conflict (either way it is not acted on)."""
        if event is SequenceEvent.DISCONTINUITY or event is SequenceEvent.LATE:
            signs = self._signs.get(source_id)
            self._signs[source_id] = (rx_ns, None if signs is None else signs[0])
            return True
        signs = self._signs.get(source_id)
        if signs is None:
            return False
        if rx_ns - signs[0] > SEQUENCE_CONFLICT_HOLD_NS:
            del self._signs[source_id]
            return False
        return self._conflict(signs, rx_ns)

    def active(self, source_id: int | None, now_ns: int) -> bool:
        """A source (``None``: any) in conflict at ``now_ns``."""
        return any(
            self._conflict(signs, now_ns)
            for source, signs in self._signs.items()
            if source_id is None or source == source_id
        )

    @staticmethod
    def _conflict(signs: tuple[int, int | None], now_ns: int) -> bool:
        latest, before = signs
        return (
            before is not None
            and latest - before <= SEQUENCE_CONFLICT_HOLD_NS
            and now_ns - latest <= SEQUENCE_CONFLICT_HOLD_NS
        )
