"""The verdict's vocabulary: what a verdict decides, why it holds, which targets it is about,
and the states of the link it rests on.

A PROCEED is a promise that the target is real, current and located; anything else is a HOLD
with every :class:`HoldReason` that applies (fusion decides them: ``fusion.verdicts``). The
per-frame pipeline's verdicts (``gizmo_host.stream``) and the world model's speak these same
words, and the serial link's state machine moves through :class:`LinkState`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

# These members are hashed on every verdict check (a verdict's key holds them in a frozenset):
# Enum hashes a member by its name in Python, a call that cost 0.3 us; the members are
# singletons, so their identity is their hash (``object``'s, in C). A set of them has no
# order to keep: a name's hash was never the same from one process to the next either.


class Decision(Enum):
    PROCEED = "PROCEED"
    HOLD = "HOLD"

    __hash__ = object.__hash__


class HoldReason(Enum):
    NO_DATA = "no_data"  # nothing matching the selector
    LOST = "lost"  # not tracked, flagged lost, or a later frame of its source saw nothing
    STALE = "stale"  # older than its TTL since capture
    LINK_DOWN = "link_down"  # a link (the board's, or the pose's: the autopilot's) is not up, or
    # the result came before the board's link went down
    LINK_SILENT = "link_silent"  # the port is open but no valid frame arrives, or the result
    # came before such a silence
    CLOCK_NOT_LOCKED = "clock_not_locked"  # the device clock mapping is not locked
    CLOCK_JUMP = "clock_jump"  # the pose stream arrives later than its clock mapping allows
    DEVICE_RESET = "device_reset"  # a device reset is held, or the result predates it
    NO_POSE = "no_pose"  # a pose source is configured and no pose exists for the capture
    POSE_STALE = "pose_stale"  # the newest pose is too old for the capture, or for now
    POSE_GAP = "pose_gap"  # the capture falls in a gap of the pose history or before it
    POSE_CONFLICT = "pose_conflict"  # two senders, or two different poses for one time
    POSE_JUMP = "pose_jump"  # a pose step its own velocity and rates contradict
    TENTATIVE = "tentative"  # its track is not confirmed (yet), or no track took it
    COASTING = "coasting"  # its track missed its key's latest frame, or is re-acquiring
    MODEL_FAULT = "model_fault"  # the world model failed on an input and dropped what it held;
    # until it takes a board result again
    INVALID_RESULT = "invalid_result"  # the target's newest result has a field off the
    # protocol's scale (a box off the image, a confidence over 100, unknown flag bits)
    SEQUENCE_CONFLICT = "sequence_conflict"  # its source's sequence fell back without a reset
    # (a second voice on the board's link, or a broken board): until 3 frames in order
    TRUNCATED = "truncated"  # the world's: its box reaches the image's edge, so the target is
    # cut off there and the box's centre is not the target's (no position is placed)

    __hash__ = object.__hash__


class LinkState(Enum):
    """The live link's state (the host's serial link uses this very enum)."""

    DOWN = "DOWN"
    CONNECTING = "CONNECTING"
    SYNCING = "SYNCING"
    UP = "UP"
    SILENT = "SILENT"

    __hash__ = object.__hash__


@dataclass(frozen=True, slots=True)
class Selector:
    """Which targets the overall verdict is about (``[verdict] select``); ``None`` matches
    anything. Only results that locate something become targets, so the default selector
    means "any detection"."""

    source_id: int | None = None
    result_type: int | None = None
    id: int | None = None

    def matches(self, source_id: int, result_type: int, ident: int) -> bool:
        return (
            (self.source_id is None or source_id == self.source_id)
            and (self.result_type is None or result_type == self.result_type)
            and (self.id is None or ident == self.id)
        )

    def to_dict(self) -> dict[str, Any]:
        return {"source_id": self.source_id, "result_type": self.result_type, "id": self.id}
