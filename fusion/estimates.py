"""What each target of a snapshot says, and its verdict: a measurement, or a track's estimate.

Without tracking, a target is its key's latest measurement, placed on its own (the per-frame
path). With tracking (:mod:`fusion.tracking`), a target is a track: its position and velocity
are the estimate at ``capture_ns`` (its latest hit's capture), with their covariance, and it
may PROCEED only while the track is ``confirmed``; every rule of the per-frame path still
applies to its latest measurement. A key's latest measurement that no track took (it could
not be placed, or it came too late to be fused; not a repeat of one a track took) is listed
too, and never PROCEEDs with a position. The fields of a HOLD target that a consumer could
act on are ``null``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

from gizmo_core import Decision, HoldReason

from .snapshot import TargetState
from .targets import ImageEdges, Placement, TargetTable, cut_off
from .tracking import Track, Tracker, TrackStatus
from .tracking.history import SAME_IMAGE_NS
from .verdicts import Conditions, ordered, target_reasons

_TRACK_REASONS: Final = {
    TrackStatus.TENTATIVE: HoldReason.TENTATIVE,
    TrackStatus.COASTING: HoldReason.COASTING,
}
_new_tuple: Final = tuple.__new__  # builds a NamedTuple without its Python-level __new__
_TRUNCATED: Final = HoldReason.TRUNCATED
_NONE_FUSED: Final[Mapping[str, int]] = MappingProxyType({})  # ``unfused`` without tracking
_NONE_NEWER: Final[Mapping[str, Placement]] = MappingProxyType({})  # ``listed`` with none alone


class Entry(NamedTuple):
    placement: Placement
    track: Track | None
    # The key's latest measurement, when it arrived after the track's and no track took it
    # (it could not be placed, or came too late): its reasons hold the track too, as they
    # hold the key's target on the per-frame path.
    newer: Placement | None = None


class Context(NamedTuple):
    """What judging every target at one time shares."""

    c: Conditions
    common: frozenset[HoldReason]  # the reasons that hold any target (``global_reasons``)
    targets: TargetTable
    ttl_ns: Callable[[int], int]  # a result type's TTL
    tracker: Tracker | None
    edges: ImageEdges  # where a box is cut off by the image's edge (``truncated``)


def entries(targets: TargetTable, tracks: list[Track] | None) -> list[Entry]:
    """The targets to show: each key's latest measurement, or (``tracks``: the tracker's
    live tracks) its tracks. A key with a track confirmed once (confirmed or coasting) shows
    only those: its tentative tracks (a gated-out noise tail, a glitch, a manoeuvre's first
    frames) are kept, and may be confirmed or take a coasting track's number, but a consumer
    sees one ``track_id`` per target, not one per rejected measurement."""
    fused = _NONE_FUSED if tracks is None else fused_arrivals(tracks)
    return listed(unfused(targets, tracks, fused), tracks)


def fused_arrivals(tracks: list[Track]) -> dict[str, int]:
    """Per key, the newest arrival count of a measurement its live tracks took: the latest
    hit's, or a late measurement's fused in its place (``Track.fused_arrival``). A late
    measurement a track took is no measurement "no track took": it must not hold the key's
    tracks (as ``stale``, say) when the in-order run would not; the track's own age stays
    its latest capture's."""
    newest: dict[str, int] = {}
    for t in tracks:
        arrival = t.fused_arrival
        if arrival > newest.get(t.key, -1):
            newest[t.key] = arrival
    return newest


def unfused(
    targets: TargetTable, tracks: list[Track] | None, fused: Mapping[str, int]
) -> list[Placement]:
    """The keys' latest measurements listed apart from the tracks, in the table's order:
    every one without tracking (``tracks`` None); with it (``fused``:
    ``fused_arrivals(tracks)``), those newer than what the key's tracks hold and not a
    repeat of a track's."""
    if tracks is None:
        return list(targets)
    alone = []
    for p in targets:
        if p.arrival > fused.get(p.obs.key, -1) and not _repeats(p, tracks):
            alone.append(p)
    return alone


def listed(alone: list[Placement], tracks: list[Track] | None) -> list[Entry]:
    """The entries of ``alone`` (``unfused``) and of ``tracks``: those of a key's tracks
    confirmed once, or all of a key's tentative ones; each with its key's measurement in
    ``alone`` as ``newer``."""
    out = [_new_tuple(Entry, (p, None, None)) for p in alone] if alone else []
    if not tracks:
        return out
    newer = {p.obs.key: p for p in alone} if alone else _NONE_NEWER
    established: set[str] | None = None  # the keys with a track confirmed once
    for t in tracks:
        if not t.confirmed:
            if established is None:
                established = {u.key for u in tracks if u.confirmed}
            if t.key in established:
                continue
        out.append(_new_tuple(Entry, (t.placement, t, newer.get(t.key))))
    return out


def _repeats(p: Placement, tracks: list[Track]) -> bool:
    """Whether ``p`` is a track's measurement reported again (the tracker counts it as a
    duplicate): the same key and box, its capture within ``SAME_IMAGE_NS``."""
    obs = p.obs
    for t in tracks:
        o = t.placement.obs
        if (
            o.key == obs.key
            and o.center_x == obs.center_x
            and o.center_y == obs.center_y
            and o.width == obs.width
            and o.height == obs.height
            and abs(o.host_capture_ns - obs.host_capture_ns) <= SAME_IMAGE_NS
        ):
            return True
    return False


class Judged(NamedTuple):
    """One target's verdict at a time: what a snapshot's target line and a verdict check
    both start from."""

    entry: Entry
    reasons: tuple[HoldReason, ...]
    status: TrackStatus | None  # its track's state (None: no track)
    proceed: bool  # no reason to HOLD, and a geometry to act on

    @property
    def capture_ns(self) -> int:
        return self.entry.placement.obs.host_capture_ns


def judge(entry: Entry, context: Context) -> Judged:
    """One target's verdict at ``context.c.now_ns``, with every reason it must HOLD for."""
    placement, track, newer = entry
    c, tracker = context.c, context.tracker
    reasons = _reasons(placement, context)
    if newer is not None:
        reasons |= _reasons(newer, context)
    status: TrackStatus | None = None
    g = placement.geometry
    if track is not None and tracker is not None:
        barrier = max(c.down_barrier, c.silent_barrier, c.reset_barrier)
        status = tracker.lifecycle.status(track, barrier)
        extra = _TRACK_REASONS.get(status)
        if extra is not None:
            reasons.add(extra)
        elif c.now_ns - track.time_ns > context.ttl_ns(placement.obs.result_type):
            status = TrackStatus.COASTING  # no update for its TTL (the reason: stale)
    elif tracker is not None and g is not None and g.position_ned_m is not None:
        reasons.add(HoldReason.TENTATIVE)  # a position no track took
    if not reasons:
        return _new_tuple(Judged, (entry, (), status, g is not None))
    return _new_tuple(Judged, (entry, ordered(reasons), status, False))


def target_state(judged: Judged, now_ns: int, tracker: Tracker | None) -> TargetState:
    """One target's line at ``now_ns``; a HOLD's actionable fields are ``None``."""
    (placement, track, _), reasons, status, proceed = judged
    obs, g = placement.obs, placement.geometry
    key, age_ms = obs.key, (now_ns - obs.host_capture_ns) / 1e6
    track_id = None if track is None else track.track_id
    if not proceed or g is None:
        return TargetState(
            key, obs.result_type, obs.id, obs.label, obs.confidence, obs.tracked,
            obs.host_capture_ns, age_ms, Decision.HOLD, reasons,
            None, None, None, None, None, None, None, None, None, None, track_id, status,
        )  # fmt: skip
    position, velocity, covariance = g.position_ned_m, None, None
    if track is not None and tracker is not None:
        position, velocity, covariance = tracker.estimate(track)
    camera = None if g.frame is None else g.frame.origin_ned_m
    return TargetState(
        key, obs.result_type, obs.id, obs.label, obs.confidence, obs.tracked,
        obs.host_capture_ns, age_ms, Decision.PROCEED, (),
        g.bearing_camera, g.bearing_ned, g.azimuth_deg, g.elevation_deg, g.angular_size_deg,
        position, g.range_m, g.range_source, velocity, covariance, track_id, status, camera,
    )  # fmt: skip


def _reasons(placement: Placement, context: Context) -> set[HoldReason]:
    obs, c = placement.obs, context.c
    reasons = target_reasons(
        c, context.common, obs.positive, context.targets.superseded(placement),
        c.now_ns - obs.host_capture_ns, context.ttl_ns(obs.result_type), obs.clock_locked,
        placement.arrival, placement.pose_reason,
    )  # fmt: skip
    if cut_off(obs, context.edges):  # a track's newer measurement too: cut off now
        reasons.add(_TRUNCATED)
    return reasons
