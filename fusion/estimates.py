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

from collections.abc import Iterable
from typing import NamedTuple

from gizmo_core import Decision, HoldReason

from .config import WorldConfig
from .snapshot import TargetState
from .targets import Placement, TargetTable
from .tracking import Track, Tracker, TrackStatus
from .tracking.tracker import SAME_IMAGE_NS
from .verdicts import Conditions, ordered, target_reasons

_TRACK_REASONS = {
    TrackStatus.TENTATIVE: HoldReason.TENTATIVE,
    TrackStatus.COASTING: HoldReason.COASTING,
}


class Entry(NamedTuple):
    placement: Placement
    track: Track | None
    # The key's latest measurement, when it arrived after the track's and no track took it
    # (it could not be placed, or came too late): its reasons hold the track too, as they
    # hold the key's target on the per-frame path.
    newer: Placement | None = None


def entries(targets: TargetTable, tracker: Tracker | None, now_ns: int) -> list[Entry]:
    """The targets to show: each key's latest measurement, or its tracks."""
    if tracker is None:
        return [Entry(p, None) for p in targets]
    tracks = tracker.tracks(now_ns)
    newest_fused: dict[str, int] = {}
    for t in tracks:
        newest_fused[t.key] = max(newest_fused.get(t.key, -1), t.placement.arrival)
    unfused = {
        p.obs.key: p
        for p in targets
        if p.arrival > newest_fused.get(p.obs.key, -1) and not _repeats(p, tracks)
    }
    out = [Entry(p, None) for p in unfused.values()]
    for t in tracks:
        newer = unfused.get(t.key)
        out.append(Entry(t.placement, t, newer))
    return out


def _repeats(p: Placement, tracks: list[Track]) -> bool:
    """Whether ``p`` is a track's measurement reported again (the tracker counts it as a
    duplicate): the same key and box, its capture within ``SAME_IMAGE_NS``."""
    obs = p.obs
    for t in tracks:
        o = t.placement.obs
        if (
            o.key == obs.key
            and (o.center_x, o.center_y, o.width, o.height)
            == (obs.center_x, obs.center_y, obs.width, obs.height)
            and abs(o.host_capture_ns - obs.host_capture_ns) <= SAME_IMAGE_NS
        ):
            return True
    return False


def target_state(
    entry: Entry,
    c: Conditions,
    targets: TargetTable,
    config: WorldConfig,
    tracker: Tracker | None,
) -> TargetState:
    """One target's line at ``c.now_ns``, with every reason it must HOLD for."""
    placement, track, newer = entry
    obs, g = placement.obs, placement.geometry
    now_ns = c.now_ns
    reasons = _reasons(placement, c, targets, config)
    if newer is not None:
        reasons = ordered({*reasons, *_reasons(newer, c, targets, config)})
    status: TrackStatus | None = None
    if track is not None and tracker is not None:
        status = tracker.lifecycle.status(track, max(c.down_barrier, c.reset_barrier))
        extra = _TRACK_REASONS.get(status)
        if extra is not None:
            reasons = ordered({*reasons, extra})
        elif now_ns - track.time_ns > config.ttl_ns(obs.result_type):
            status = TrackStatus.COASTING  # no update for its TTL (the reason: stale)
    elif tracker is not None and g is not None and g.position_ned_m is not None:
        reasons = ordered({*reasons, HoldReason.TENTATIVE})  # a position no track took
    key, age_ms = obs.key, (now_ns - obs.host_capture_ns) / 1e6
    track_id = None if track is None else track.track_id
    if reasons or g is None:
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


def _reasons(
    placement: Placement, c: Conditions, targets: TargetTable, config: WorldConfig
) -> tuple[HoldReason, ...]:
    obs = placement.obs
    return target_reasons(
        c,
        positive=obs.positive,
        superseded=targets.superseded(placement),
        age_ns=c.now_ns - obs.host_capture_ns,
        ttl_ns=config.ttl_ns(obs.result_type),
        clock_locked=obs.clock_locked,
        arrival=placement.arrival,
        pose_reason=placement.pose_reason,
    )


def deadlines(tracker: Tracker | None, config: WorldConfig, now_ns: int) -> Iterable[int]:
    """When a track's verdict can change with no new input: its measurement's TTL."""
    if tracker is None:
        return ()
    return [
        t.placement.obs.host_capture_ns + config.ttl_ns(t.placement.obs.result_type) + 1
        for t in tracker.tracks(now_ns)
    ]
