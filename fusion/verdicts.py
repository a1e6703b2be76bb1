"""PROCEED or HOLD per target, with every reason that applies.

A target may be acted on (PROCEED) only when it is tracked and not lost, fresh within its TTL
of capture, the link is UP, the device clock is locked, no device reset is being held and, when
a pose source is configured, the vehicle's pose at the capture time is known, its clock is
locked and it is neither in conflict nor jumping. Anything else is HOLD with all applicable
reasons, in the fixed order of :class:`HoldReason`. Nothing received before the latest link
DOWN or device reset may justify PROCEED: those barriers are arrival counts, so they hold
whatever the clock mapping did.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

from gizmo_core import HoldReason, LinkState

# A reason's place in the order of :class:`HoldReason` (a dict's own lookup, reached by none
# else: faster as a sort key than a mapping proxy's)
_RANK: Final[Callable[[HoldReason], int]] = {
    reason: index for index, reason in enumerate(HoldReason)
}.__getitem__

LINK_REASONS: Final[Mapping[LinkState, HoldReason]] = MappingProxyType(
    {
        LinkState.DOWN: HoldReason.LINK_DOWN,
        LinkState.CONNECTING: HoldReason.LINK_DOWN,
        LinkState.SYNCING: HoldReason.LINK_DOWN,
        LinkState.SILENT: HoldReason.LINK_SILENT,
    }
)


def ordered(reasons: set[HoldReason]) -> tuple[HoldReason, ...]:
    """Reasons in the fixed order of :class:`HoldReason`."""
    if len(reasons) < 2:
        return tuple(reasons)
    return tuple(sorted(reasons, key=_RANK))


class Conditions(NamedTuple):
    """What holds for every target at one ``now_ns``, computed once per snapshot."""

    now_ns: int
    link_reason: HoldReason | None  # LINK_DOWN, LINK_SILENT or None (UP)
    reset_held: bool
    clock_jump: bool  # only when a pose is required
    pose_clock_locking: bool  # the pose stream's clock mapping is in its lock period
    pose_conflict: bool  # a pose conflict is being held
    pose_jump: bool  # a pose jump is being held
    pose_required: bool
    pose_now: HoldReason | None  # NO_POSE (none in this epoch), POSE_STALE (too old) or None
    pose_link_down: bool  # the pose source's own link (the autopilot's) is down
    down_barrier: int  # arrivals up to this count came before the latest link DOWN
    silent_barrier: int  # ... before the latest link SILENT (the port open, no frame)
    reset_barrier: int  # ... before the latest device reset
    model_fault: bool  # the model failed on an input, and took no board result since


def global_reasons(c: Conditions) -> set[HoldReason]:
    """Reasons that apply to any target, even one that does not exist (``no_data``)."""
    reasons: set[HoldReason] = set()
    if c.link_reason is not None:
        reasons.add(c.link_reason)
    if c.reset_held:
        reasons.add(HoldReason.DEVICE_RESET)
    if c.model_fault:
        reasons.add(HoldReason.MODEL_FAULT)
    if c.pose_required:
        if c.clock_jump:
            reasons.add(HoldReason.CLOCK_JUMP)
        if c.pose_clock_locking:
            reasons.add(HoldReason.CLOCK_NOT_LOCKED)
        if c.pose_conflict:
            reasons.add(HoldReason.POSE_CONFLICT)
        if c.pose_jump:
            reasons.add(HoldReason.POSE_JUMP)
        if c.pose_now is not None:
            reasons.add(c.pose_now)
        if c.pose_link_down:
            reasons.add(HoldReason.LINK_DOWN)
    return reasons


def target_reasons(
    c: Conditions,
    common: frozenset[HoldReason] | set[HoldReason],
    positive: bool,
    superseded: HoldReason | None,
    age_ns: int,
    ttl_ns: int,
    clock_locked: bool,
    arrival: int,
    pose_reason: HoldReason | None,
) -> set[HoldReason]:
    """Every reason one target must HOLD for (a new set: the caller adds its own, then
    orders them once, ``ordered``); empty means PROCEED.

    ``common``: ``global_reasons(c)``, worked out once for the many targets judged at one
    time. ``superseded``: why a later frame of its source ends it (it reported nothing
    tracked: ``lost``; or the link withheld it), ``None`` when none came.
    ``pose_reason``: why its measurement has no pose at capture time (``None`` when it has
    one).
    """
    reasons = set(common)
    if not positive:
        reasons.add(HoldReason.LOST)
    if superseded is not None:
        reasons.add(superseded)
    if age_ns > ttl_ns:
        reasons.add(HoldReason.STALE)
    if arrival <= c.down_barrier:
        reasons.add(HoldReason.LINK_DOWN)
    if arrival <= c.silent_barrier:
        reasons.add(HoldReason.LINK_SILENT)
    if arrival <= c.reset_barrier:
        reasons.add(HoldReason.DEVICE_RESET)
    if not clock_locked:
        reasons.add(HoldReason.CLOCK_NOT_LOCKED)
    if c.pose_required and pose_reason is not None:
        reasons.add(pose_reason)
    return reasons
