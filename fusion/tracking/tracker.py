"""Placed measurements into tracks, key by key, with late measurements fused exactly.

Pure: measurements carry their host capture times and arrival counts, and nothing here reads
a clock. Tracks are kept per key (``source:type:id``): the board's key constrains every match,
so the keys never interact and each has its own history:

- a **frame** is the measurements of one key with one capture time, plus any frame of its
  source that saw nothing at that time. All of a frame's detections are matched to the key's
  tracks at once (:mod:`fusion.tracking.association`: the χ² gate, the optimal assignment,
  hits, misses, births and succession);
- **late measurements are fused exactly**: the frames of the last ``oosm_window_ms`` are kept
  with the tracks as they were before each one. A measurement older than the newest frame is
  put in its place and the frames from there on are replayed, so the result is the one the
  in-order run gives. One older than the window is counted (``late_dropped``) and dropped.
  A second detection of a frame already fused (two boxes of one key in one image) replays that
  frame the same way; the same box again (a board that reports one image twice) is a counted
  duplicate.

A new track's number is remembered by the measurement that started it
(:mod:`fusion.tracking.association`), so a replay gives it the same number.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict, deque
from collections.abc import Iterator
from functools import partial
from typing import Final, NamedTuple

import numpy as np

from gizmo_core import Selector

from ..camera import CameraModel
from ..ranging import RangeSource
from ..targets import Placement
from . import motion
from .association import Associator
from .config import TrackingConfig
from .history import (
    SAME_IMAGE_NS,
    Detection,
    Frame,
    History,
    detection_order,
    remember,
    repeated,
)
from .noise import PixelScale, covariance_toward, extent_covariance, position_covariance
from .tracks import MISS, Lifecycle, Track

_INF: Final = float("inf")
_NEAR_SPREAD2: Final = 0.01**2  # (σ / range)² below which a fix's noise is evaluated at the fix
_MAX_FRAMES: Final = 4096  # per key, whatever the window: a bound on memory at absurd frame rates
# A late measurement replays the frames after it: at most this many (a board at 30 Hz has 15
# in the window; red team rt19 made a board at 921600 baud replay 1,250 for each, 0.1 s of
# CPU), and at most this many detections in them (rt20: 16 boxes an image, each up to 63
# frames late, cost 0.5-1.1 s of CPU an image): one older than that is counted ``late_dropped``
_MAX_REPLAY: Final = 64
_MAX_REPLAY_DETECTIONS: Final = 128
# One key's detections in one image: a merge replays the image with all of them, so their
# cost grows faster than their number (rt19: 80 boxes of one key cost 1.5 s an image, 16 cost
# 10 ms); more are counted ``crowded``
_MAX_DETECTIONS: Final = 16
_new_tuple: Final = tuple.__new__  # builds a NamedTuple without its Python-level __new__
# The classes it builds each frame, as finals: compiled, a final is a C static, where a
# module-level name is a dictionary lookup at each use.
_DETECTION: Final = Detection


class Estimate(NamedTuple):
    position_ned_m: tuple[float, float, float]
    velocity_ned_m_s: tuple[float, float, float]
    covariance_ned: tuple[float, ...]  # 6×6 row-major: n, e, d, vn, ve, vd


class Tracker:
    """The tracks of every key; ``add`` a placed measurement, read ``tracks``."""

    def __init__(
        self,
        camera: CameraModel,
        config: TrackingConfig | None = None,
        *,
        keep: Selector | None = None,
    ) -> None:
        """``keep``: the verdict's selector, whose tracks are evicted last (``_bound``)."""
        self._config = c = config or TrackingConfig()
        self._keep = None if keep is None or keep == Selector() else keep
        self._noise = c.noise()
        self._gates = {2: c.gate(2), 3: c.gate(3)}
        self._lifecycle = Lifecycle(
            c.confirm_hits,
            c.confirm_window,
            round(c.delete_after_ms * 1e6),
        )
        width, height = camera.config.width_px, camera.config.height_px
        self._scale = PixelScale((width - 1) / 2000, (height - 1) / 2000)
        self._window_ns = round(c.oosm_window_ms * 1e6)
        self._keys: dict[str, History] = {}
        # Counts the changes to any key's frames (and keys forgotten): the last repeat found,
        # its key, box and the captures that would repeat it too, holds while it stays.
        self._version = 0
        self._repeat: tuple[int, str, int, int, int, int, int, int] | None = None
        # ``tracks``' last listing: from when, until when (inclusive) it holds, and the list
        self._listed: tuple[int, float, list[Track]] | None = None
        self._count = 0  # the tracks of every key's history: the sum of len(history.tracks)
        self._estimates: dict[int, tuple[motion.ImmState, Estimate]] = {}
        # Frames that saw nothing (per source) and positives without a position (per key),
        # heard before any track of theirs: a late first detection replays past them.
        self._nothing: OrderedDict[int, deque[int]] = OrderedDict()
        self._blind: OrderedDict[str, deque[int]] = OrderedDict()
        self.counts: dict[str, int] = dict.fromkeys(
            ("tracks_started", "tracks_continued", "late_fused", "late_dropped",
             "replayed_frames", "duplicates", "gated_out", "tracks_evicted", "crowded"),
            0,
        )  # fmt: skip
        self._associator = Associator(c, self._lifecycle, self.counts)

    @property
    def config(self) -> TrackingConfig:
        return self._config

    def restarted(self, camera: CameraModel) -> Tracker:
        """A tracker of this one's settings with no track, its counters and its numbering
        going on (a model fault's, ``Intake.fault``): a track started after it never takes a
        number issued before it, which a consumer would take for the old track."""
        fresh = Tracker(camera, self._config, keep=self._keep)
        fresh.counts.update(self.counts)
        fresh._associator.number_after(self._associator)
        return fresh

    @property
    def lifecycle(self) -> Lifecycle:
        return self._lifecycle

    def __iter__(self) -> Iterator[Track]:
        for history in self._keys.values():
            yield from history.tracks

    def estimate(self, track: Track) -> Estimate:
        """The track's position, velocity and their covariance (36, row-major) as plain
        floats, worked out once per state: every snapshot shows the same few tracks."""
        cache = self._estimates
        found = cache.get(id(track.state))
        if found is not None and found[0] is track.state:
            return found[1]
        mean, cov = motion.estimate(track.state)
        m = mean.tolist()
        flat = cov.ravel().tolist()
        g = track.placement.geometry
        frame = None if g is None else g.frame
        if frame is not None and frame.extent_height_sigma_m is not None and g is not None:
            lift, ray = frame.extent_height_sigma_m, g.bearing_ned
            if lift and ray is not None:  # the plane's point, lifted as its latest fix was
                k = lift / ray[2]
                m[0], m[1], m[2] = m[0] - ray[0] * k, m[1] - ray[1] * k, m[2] - ray[2] * k
            obs, scale = track.placement.obs, self._scale
            bias = extent_covariance(
                g.bearing_camera,
                frame,
                g.range_m or 0.0,  # the lifted point's range: the bias lies about it
                (obs.width * scale.u_px, obs.height * scale.v_px),
            ).tolist()
            for i in range(3):
                row = bias[i]
                for j in range(3):
                    flat[6 * i + j] += row[j]
        value = Estimate((m[0], m[1], m[2]), (m[3], m[4], m[5]), tuple(flat))
        cache[id(track.state)] = (track.state, value)  # the state kept: its id stays its own
        if len(cache) > 2 * self._config.max_tracks:
            del cache[next(iter(cache))]
        return value

    def tracks(self, now_ns: int) -> list[Track]:
        """The tracks not yet deleted at ``now_ns``; a key none of whose tracks is left is
        forgotten once its newest frame is older than the window, or once it holds only the
        frames its source saw nothing in (``_only_misses``): those come for every key the
        source ever had, and kept a board that renumbers its targets and reports them lost
        holding every key it ever named (red team rt57: 3,498 keys after 18 s at 200 new ids
        a second, 13 ms a lost frame, growing for as long as it ran).

        A verdict check lists them after every input, mostly with nothing changed: the last
        listing is reused from its time up to the first at which a listed track ends or a
        key is due to be forgotten (``_listed``; any change to the tracks voids it)."""
        listed = self._listed
        if listed is not None and listed[0] <= now_ns <= listed[1]:
            return list(listed[2])
        alive = self._lifecycle.alive
        delete_ns, window_ns = self._lifecycle.delete_after_ns, self._window_ns
        out: list[Track] = []
        until = _INF  # the last time this listing holds
        for key, history in list(self._keys.items()):
            kept = [t for t in history.tracks if alive(t, now_ns)]
            if kept:
                until = min(until, min(t.time_ns for t in kept) + delete_ns)
            else:
                newest = history.frames[-1].capture_ns
                if newest < now_ns - window_ns or self._only_misses(history):
                    del self._keys[key]
                    self._version += 1
                    self._count -= len(history.tracks)
                else:
                    until = min(until, newest + window_ns)
            out.extend(kept)
        self._listed = (now_ns, until, out)
        return list(out)

    def _only_misses(self, history: History) -> bool:
        """Whether forgetting ``history`` (no track of it alive) changes nothing a late
        measurement would meet: its newest detection is so old that every track of it had
        ended (``delete_after_ms`` after it) before the oldest capture its window still
        takes, and the frames it holds there are its source's that saw nothing, none of its
        own positives without a position. Such a measurement starts the key afresh with
        those frames (``_new_history``: its source's, and its own positives heard while it
        is not held), as the in-order run would have started a track then (red team rt58:
        with its own positives forgotten, a late detection confirmed a track the in-order
        run never did)."""
        oldest_taken_ns = history.times[-1] - self._window_ns
        seen, blind = history.seen_ns, history.blind_ns
        return (seen is None or seen + self._lifecycle.delete_after_ns < oldest_taken_ns) and (
            blind is None or blind < oldest_taken_ns
        )

    def _detection(self, placement: Placement) -> Detection:
        """The measurement a located placement gives (a position, a range and the ray's
        frame: ``add`` tells). Its covariance at the measured range starts a track; a track
        takes it with the covariance where the track predicts the target (``toward``)."""
        g = placement.geometry
        assert g is not None and g.range_m is not None and g.frame is not None
        ground = g.range_source is RangeSource.GROUND_PLANE
        range_m, z = g.range_m, list(g.position_ned_m or ())
        lift = g.frame.extent_height_sigma_m
        if lift and g.bearing_ned is not None:
            # A target that may stand, placed ``lift`` above the plane: the filter takes the
            # plane's point, whose height the view's changes do not move (rt49: a parked car
            # approached at 10 m/s climbed at 0.24 m/s, z-score 26); ``estimate`` lifts it.
            ray = g.bearing_ned
            k = lift / ray[2]
            z = [z[0] + ray[0] * k, z[1] + ray[1] * k, z[2] + ray[2] * k]
            range_m += k
        frame, scale, noise = g.frame, self._scale, self._noise
        r = position_covariance(g.bearing_camera, frame, range_m, ground, scale, noise)
        gate = self._gates[2 if ground else 3]
        obs = placement.obs
        box = (obs.center_x, obs.center_y, obs.width, obs.height)
        r_f: list[list[float]] = r.tolist()
        # Where the noise is evaluated matters as its spread relative to the range (the bias
        # of weighing a fix by its own noise is about 4σ²/range): below 1 % (0.04 % of the
        # range, 4 % of σ), the fix's own covariance, and no second one per track.
        spread2 = r_f[0][0] + r_f[1][1] + r_f[2][2]
        toward = None
        if spread2 > _NEAR_SPREAD2 * range_m * range_m:
            toward = partial(covariance_toward, g.frame, ground, self._scale, self._noise)
        on_plane = lift is not None
        return _new_tuple(
            _DETECTION, (placement, np.array(z), r, gate, z, r_f, box, toward, on_plane)
        )

    # -- inputs ----------------------------------------------------------------------------

    def add(self, placement: Placement) -> None:
        """A positive measurement of its key: with a position (and a capture time the device
        clock vouches for) it is matched to a track; without (no pose, no range, a clock that
        jumped or re-acquires) it is still a frame of its key, where every track misses."""
        obs = placement.obs
        # A capture time the device clock does not vouch for (jumped, re-acquiring after a
        # reset) must not move a filter that lives in time: such a frame is only a miss. One
        # of a first epoch still converging is close: it is used (a PROCEED waits for a lock).
        g = placement.geometry
        located = (
            (obs.clock_locked or obs.clock_converging)
            and g is not None
            and g.position_ned_m is not None
            and g.range_m is not None
            and g.frame is not None
        )  # a position to match: a pose, a range and the ray's frame
        key, t = obs.key, obs.host_capture_ns
        memo = self._repeat
        if (
            located
            and memo is not None
            and memo[0] == self._version
            and memo[1] == key
            and memo[2] <= t <= memo[3]
            and memo[4] == obs.center_x
            and memo[5] == obs.center_y
            and memo[6] == obs.width
            and memo[7] == obs.height
        ):
            self.counts["duplicates"] += 1
            return
        history = self._keys.get(key)
        if history is None:
            if not located:  # no track of this key to miss, yet: remembered
                remember(self._blind, key, t)
                return
            history = self._keys[key] = self._new_history(key, obs.source_id)
            self._listed = None  # a key to forget in its time, whatever ``_insert`` does
        if self._dropped(history, t):
            return
        held = repeated(history, t, obs) if located else None
        if held is not None:
            self.counts["duplicates"] += 1
            times, floor = history.times, history.floor_ns
            low = max(held - SAME_IMAGE_NS, times[-1] - self._window_ns)
            if floor is not None:
                low = max(low, floor + 1)
            self._repeat = (
                self._version, key, low, held + SAME_IMAGE_NS,
                obs.center_x, obs.center_y, obs.width, obs.height,
            )  # fmt: skip
            return
        if not located and (history.blind_ns is None or t > history.blind_ns):
            history.blind_ns = t
        self._insert(history, t, placement if located else None)

    def saw_nothing(self, source_id: int, capture_ns: int) -> None:
        """A frame of ``source_id`` that saw nothing: every track of the source misses."""
        remember(self._nothing, source_id, capture_ns)
        for history in list(self._keys.values()):
            if history.source_id == source_id and not self._dropped(history, capture_ns):
                self._insert(history, capture_ns, None)

    def _new_history(self, key: str, source_id: int) -> History:
        """A key's first history, with the frames without a detection already heard: a late
        first detection must meet them as the in-order run did."""
        history = History(source_id)
        history.times = sorted({*self._nothing.get(source_id, ()), *self._blind.get(key, ())})
        history.frames = [Frame(capture, ()) for capture in history.times]
        history.before = [() for _ in history.frames]
        return history

    def clear(self) -> None:
        self._listed = None
        self._keys.clear()
        self._version += 1
        self._count = 0

    # -- the history -----------------------------------------------------------------------

    def _dropped(self, history: History, capture_ns: int) -> bool:
        """A frame too late for the key's window (counted): at or before a forgotten frame, or
        older than the window before its newest."""
        times, floor = history.times, history.floor_ns
        if (
            (floor is not None and capture_ns <= floor)
            or (times and capture_ns < times[-1] - self._window_ns)
            or (len(times) > _MAX_REPLAY and capture_ns < times[-_MAX_REPLAY])
            or (times and capture_ns < times[-1] and self._replay_too_dear(history, capture_ns))
        ):
            self.counts["late_dropped"] += 1
            return True
        return False

    @staticmethod
    def _replay_too_dear(history: History, capture_ns: int) -> bool:
        """Whether the frames a late measurement would replay hold more than
        ``_MAX_REPLAY_DETECTIONS`` detections."""
        start = bisect_left(history.times, capture_ns)
        detections = 0
        for frame in history.frames[start:]:
            detections += len(frame.detections)
            if detections > _MAX_REPLAY_DETECTIONS:
                return True
        return False

    def _insert(self, history: History, capture_ns: int, placement: Placement | None) -> None:
        """Put a frame of the key in its place (``placement``: its detection; ``None``: a
        frame where every track misses) and run the frames from there on; the caller has
        dropped a late one (``_dropped``) and counted a repeated image (``repeated``)."""
        frames, times = history.frames, history.times
        i = bisect_left(times, capture_ns)
        if i < len(times) and times[i] == capture_ns:
            if placement is None:
                return  # a second "nothing" for a frame already held
            if len(frames[i].detections) >= _MAX_DETECTIONS:
                self.counts["crowded"] += 1
                return
        self._version += 1
        self._listed = None  # the frames and tracks change: ``tracks`` lists afresh
        added = () if placement is None else (self._detection(placement),)
        if added and (history.seen_ns is None or capture_ns > history.seen_ns):
            history.seen_ns = capture_ns
        before = history.before
        merged = i < len(times) and times[i] == capture_ns
        if merged:
            old = frames[i]
            merged_in = sorted((*old.detections, *added), key=detection_order)
            frames[i] = Frame(capture_ns, tuple(merged_in))
        else:
            frames.insert(i, _new_tuple(Frame, (capture_ns, added)))
            times.insert(i, capture_ns)
            before.insert(i, before[i] if i < len(before) else history.tracks)
        late = i < len(frames) - 1
        replay = late or merged  # before the newest, or merged
        self.counts["late_fused"] += late
        if replay:
            self.counts["replayed_frames"] += len(frames) - i
        tracks = before[i]
        process = self._associator.process
        for k in range(i, len(frames)):
            before[k] = tracks
            tracks = process(tracks, frames[k], counted=not replay)
        self._count += len(tracks) - len(history.tracks)
        history.tracks = tracks
        self._forget(history)
        self._bound()

    def _forget(self, history: History) -> None:
        times = history.times
        count = len(times)
        drop = max(bisect_left(times, times[-1] - self._window_ns), count - _MAX_FRAMES)
        drop = min(drop, count - 1)
        if drop > 0:
            history.floor_ns = times[drop - 1]
            del history.frames[:drop]
            del times[:drop]
            del history.before[:drop]

    def _bound(self) -> None:
        """At most ``max_tracks`` (counted). Tracks of keys the verdict does not select go
        first (``keep``): clutter of as many keys as ``max_tracks`` otherwise evicted the
        selected target's new track before it could confirm, for as long as the clutter
        stayed in view. Then tentative tracks: those with the fewest hits, the newest among
        equals, so a newcomer never displaces a track as far along as itself; then the
        confirmed ones least recently hit. With more keys in view than ``max_tracks``, the
        tracks that came first confirm: evicting the least recently hit evicted every track
        before its next hit (red team rt45: 96 keys, ``tentative`` for good)."""
        excess = self._count - self._config.max_tracks
        if excess <= 0:
            return
        every = list(self)
        keep = self._keep
        if keep is None:
            order = sorted(every, key=_eviction_order)
        else:
            order = sorted(every, key=partial(_kept_eviction_order, keep))
        doomed = {id(t) for t in order[:excess]}
        keys = self._keys
        for key in {t.key for t in order[:excess]}:  # not every key's (rt57: 1,000 of them)
            history = keys[key]
            history.tracks = tuple(t for t in history.tracks if id(t) not in doomed)
        self._count -= excess
        self.counts["tracks_evicted"] += excess


def _eviction_order(track: Track) -> tuple[bool, int, int]:
    """First evicted first (see ``Tracker._bound``)."""
    if track.confirmed:
        return (True, 0, track.time_ns)
    return (False, sum(1 for frame in track.window if frame != MISS), -track.track_id)


def _kept_eviction_order(keep: Selector, track: Track) -> tuple[bool, bool, int, int]:
    """``_eviction_order`` after the tracks of keys ``keep`` does not select."""
    obs = track.placement.obs
    return (keep.matches(obs.source_id, obs.result_type, obs.id), *_eviction_order(track))
