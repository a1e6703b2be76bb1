"""The gimbal camera's attitude in body FRD at a capture time, from its recent status samples.

Apart from the pose history (:mod:`.timeline`): a gimbal's status carries no time of its own and
no epoch, so its samples are stamped at arrival and bounded by age and turn rate instead.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Final, NamedTuple

from .geometry import Quat, quat_angle_rad, slerp
from .inputs import GimbalSample

__all__ = ["CameraAttitude", "GimbalTrack"]


class CameraAttitude(NamedTuple):
    """The gimbal camera's attitude in body FRD at a time, with its focal lengths if known."""

    quaternion_wxyz: Quat
    fx_px: float | None
    fy_px: float | None


# A gimbal's zoom changes its focal length by at most this factor's logarithm a second (an
# optical zoom's 1x to 30x takes seconds: ln 30 / 3 s is 1.1)
MAX_ZOOM_RATE: Final = 2.0
# What a status vouches for past itself, and what two statuses vouch for between them, is
# trusted only to this: about a box's noise (1.5 px at 430 px focal length). Red team rt41: a
# gimbal turning at 55°/s, its status at 10 Hz, placed targets 1.5 m off at a claimed σ of
# 0.08 m with the newest status's angles, up to 100 ms old.
MAX_STALE_TURN_DEG: Final = 0.2


class GimbalTrack:
    """Recent gimbal statuses: the camera's attitude in body FRD at a capture time.

    Statuses carry no time, so each is stamped at its arrival. One that repeats the one before
    (the same angles and focal lengths) extends a **run**: the gimbal said the same from the
    run's first arrival to its last. Red team rt42: a repeat is no news of stillness by itself,
    as a sender may repeat stale angles (each status twice, or at 30 Hz with angles new at
    10 Hz), and rates measured between repeats made a turning gimbal look still. So:

    - a run **settled** (it lasted ``2·max_age_ms``: a still gimbal) applies through its end
      and ``max_age_ms`` past it;
    - another run applies only while the turn into it (from the run before, at its rate over
      the gap between them) stays within ``MAX_STALE_TURN_DEG`` of it, at most ``max_age_ms``
      past its end; without a run before it within a second, only at its first arrival;
    - between two runs (the later's first arrival at most ``2·max_age_ms`` after the earlier's
      last) the attitude is slerped; an unsettled run's repeats admit two readings (the turn
      began at its last arrival, or its angles were stale since its first), and unless they
      agree within ``MAX_STALE_TURN_DEG`` the attitude is unknown (``None``);
    - a capture past the newest status that it does not cover waits for the next one
      (``must_wait``), else it is unknown; so is one before the oldest run;
    - between two statuses that differ faster than ``max_rate_deg_s``, or that zoom faster
      than ``MAX_ZOOM_RATE`` (the focal lengths' logarithm a second; a status without them has
      the camera's own, ``fx_px``), the attitude is unknown: the arrival jitter times that rate
      would be the bearing's error (red team rt18 alternated 320 and 640 px at 100 Hz, and a
      third of the PROCEEDs were 5 m off).

    A gimbal that turns and comes back between two statuses is taken as still: sampling cannot
    see it (rt42: ±2.75° at 55°/s between 10 Hz statuses, 0.57 m beyond a still gimbal's
    placement).
    """

    def __init__(
        self,
        *,
        max_samples: int = 64,
        max_age_ms: float = 100.0,
        max_rate_deg_s: float = 60.0,
        fx_px: float = 1.0,
    ) -> None:
        self._fx_px = fx_px
        self._max_zoom_rate_ns = MAX_ZOOM_RATE / 1e9
        self._max = max_samples
        self._max_age_ns = round(max_age_ms * 1e6)
        self._max_rate_rad_ns = math.radians(max_rate_deg_s) / 1e9
        self._stale_turn_rad = math.radians(MAX_STALE_TURN_DEG)
        self._firsts: list[int] = []  # each run's first arrival, in order
        self._lasts: list[int] = []  # ... and its last
        self._samples: list[GimbalSample] = []  # each run's status
        self.changes = 0  # adds: a placement's cache key

    def __len__(self) -> int:
        return len(self._samples)

    def add(self, sample: GimbalSample) -> None:
        self.changes += 1
        firsts, lasts, samples, t = self._firsts, self._lasts, self._samples, sample.host_ns
        if firsts and t > lasts[-1]:
            if _same(samples[-1], sample):
                lasts[-1] = t  # a repeat: the run goes on
                return
            i = len(firsts)
        else:
            i = bisect_left(firsts, t)
            if i < len(firsts) and firsts[i] == t:
                samples[i] = sample  # the newer report for the same time
                lasts[i] = max(lasts[i], t)
                return
            if i > 0 and lasts[i - 1] >= t:  # inside a run: a status out of order ends it
                lasts[i - 1] = firsts[i - 1]
        firsts.insert(i, t)
        lasts.insert(i, t)
        samples.insert(i, sample)
        if len(firsts) > self._max:
            del firsts[0], lasts[0], samples[0]

    def at(self, t_ns: int) -> CameraAttitude | None:
        firsts, lasts, samples = self._firsts, self._lasts, self._samples
        i = bisect_left(firsts, t_ns + 1) - 1  # the run begun at or before t_ns
        if i < 0:
            return None  # before the oldest run
        run = samples[i]
        if t_ns > lasts[i]:
            if i + 1 < len(firsts) and firsts[i + 1] - lasts[i] <= 2 * self._max_age_ns:
                return self._between(i, t_ns)
            if t_ns - lasts[i] > self._max_age_ns:
                return None
        return _attitude(run.quaternion_wxyz, run) if t_ns <= self._holds_until(i) else None

    def must_wait(self, t_ns: int) -> bool:
        """Whether a capture at ``t_ns`` is past the newest status, near enough for the next
        one to bracket it, and its attitude unknown without that one."""
        lasts = self._lasts
        return bool(lasts) and 0 < t_ns - lasts[-1] <= self._max_age_ns and self.at(t_ns) is None

    def _settled(self, i: int) -> bool:
        """Run ``i`` lasted ``2·max_age_ms``: a still gimbal, not stale angles between news."""
        return self._lasts[i] - self._firsts[i] >= 2 * self._max_age_ns

    def _holds_until(self, i: int) -> int:
        """The last time run ``i``'s attitude applies: a settled run's ``max_age_ms`` past its
        end; another's while the turn into it, at its rate over the gap before it (its repeats
        vouching for nothing), stays within ``MAX_STALE_TURN_DEG`` of it; without a run before
        it within a second, only at its first arrival."""
        firsts, lasts = self._firsts, self._lasts
        end = lasts[i] + self._max_age_ns
        if self._settled(i):
            return end
        if i == 0 or firsts[i] - lasts[i - 1] > _RATE_SPAN_NS:
            return firsts[i]
        a, b = self._samples[i - 1], self._samples[i]
        span = firsts[i] - lasts[i - 1]
        if self._turning(a, b, span):
            return firsts[i]
        angle = quat_angle_rad(a.quaternion_wxyz, b.quaternion_wxyz)
        if angle * (end - firsts[i]) <= self._stale_turn_rad * span:
            return end
        return firsts[i] + int(self._stale_turn_rad * span / angle)

    def _between(self, i: int, t_ns: int) -> CameraAttitude | None:
        """Slerped from run ``i`` to run ``i + 1``. Unless run ``i`` is settled, its repeats
        admit two readings (the turn began at its last arrival, or its angles were stale since
        its first): unknown unless they agree within ``MAX_STALE_TURN_DEG``."""
        a, b = self._samples[i], self._samples[i + 1]
        first, last, end = self._firsts[i], self._lasts[i], self._firsts[i + 1]
        if self._turning(a, b, end - last):
            return None
        q = slerp(a.quaternion_wxyz, b.quaternion_wxyz, (t_ns - last) / (end - last))
        if last > first and not self._settled(i):
            stale = slerp(a.quaternion_wxyz, b.quaternion_wxyz, (t_ns - first) / (end - first))
            if quat_angle_rad(q, stale) > self._stale_turn_rad:
                return None
        return _attitude(q, a if t_ns - last < end - t_ns else b)

    def _turning(self, a: GimbalSample, b: GimbalSample, span_ns: int) -> bool:
        """Whether the gimbal turned or zoomed faster than its limit from ``a`` to ``b``."""
        span = max(span_ns, 1)
        angle = quat_angle_rad(a.quaternion_wxyz, b.quaternion_wxyz)
        if angle > self._max_rate_rad_ns * span:
            return True
        if a.fx_px == b.fx_px:
            return False
        zoom = abs(math.log((a.fx_px or self._fx_px) / (b.fx_px or self._fx_px)))
        return zoom > self._max_zoom_rate_ns * span


# The turn into a run is measured from a run this recent at most (a status a second old says
# little of how the gimbal turns now).
_RATE_SPAN_NS: Final = 1_000_000_000


def _same(a: GimbalSample, b: GimbalSample) -> bool:
    """A repeat: the same angles and focal lengths."""
    return a.camera_rpy_deg == b.camera_rpy_deg and a.fx_px == b.fx_px and a.fy_px == b.fy_px


def _attitude(q: Quat, sample: GimbalSample) -> CameraAttitude:
    return CameraAttitude(q, sample.fx_px, sample.fy_px)
