"""The clock core's vocabulary: one status, the events, the late policy, what a sample gives."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class ClockStatus(Enum):
    """The one clock status of every mapped clock (the JSON Lines ``clock`` field)."""

    CONVERGING = "converging"  # the first epoch is settling: nothing it maps is to be used yet
    RESYNC = "resync"  # a later epoch is settling (a reset, a reconnect, a step): not yet
    LOCKED = "locked"  # the mapping is trusted
    JUMPED = "jumped"  # samples arrive later than the mapping allows, or the clock stepped back
    OUTLIER = "outlier"  # this sample is early beyond the tolerance: not used, until confirmed

    @property
    def settling(self) -> bool:
        """A new epoch whose mapping is not trusted yet."""
        return self is ClockStatus.CONVERGING or self is ClockStatus.RESYNC


class ClockEvent(Enum):
    """What one sample changed (set on that sample's reading)."""

    DEVICE_RESET = "device_reset"  # the remote clock restarted: the adapter opened an epoch
    PHASE_ERROR = "phase_error"  # a sample arrived before the mapping says it was sent
    CLOCK_JUMP = "clock_jump"  # late samples for the confirmation span, or a step back: JUMPED
    NEW_EPOCH = "new_epoch"  # a jump confirmed by a run of consistent samples opened an epoch
    ON_TIME = "on_time"  # on time again for the confirmation span: LOCKED, the same epoch


class LatePolicy(Enum):
    """What a run of late samples (no step seen in the remote stamps) leads to.

    With one-way stamps a latency rise and a remote clock stepping back look the same, and
    following either would present old data as young; a two-way exchange measures the offset.
    """

    HOLD = "hold"  # JUMPED until the samples are on time again; the mapping stays
    ACCEPT = "accept"  # JUMPED, then a consistent run opens an epoch that keeps the mapping
    FOLLOW = "follow"  # a consistent run opens an epoch at its level (two-way samples)


class ClockReading(NamedTuple):
    """What the core made of one sample."""

    offset_ns: float  # host minus remote for this sample: the published line, or lower
    epoch: int
    status: ClockStatus  # this sample's: OUTLIER for an early one awaiting confirmation
    event: ClockEvent | None
    jump_ns: float  # the event's size: its run's offset less the published one (0: none)


class ClockCounts(NamedTuple):
    """Counters of one clock (the adapters' ``stats``)."""

    status: ClockStatus
    epoch: int
    skew_ppm: float
    samples: int
    phase_errors: int  # early samples that started a candidate jump
    outliers: int  # early samples that were not confirmed
    jumps: int  # late runs confirmed, and steps back seen
    epochs: int  # epochs opened by a confirmed jump (resets and reconnects not included)
    recoveries: int  # JUMPED -> LOCKED in the same epoch
