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
# Two statuses within this of each other report the same attitude: about a box's noise (1.5 px
# at 430 px focal length), and a still gimbal's readout noise.
SAME_ATTITUDE_DEG: Final = 0.2
# The turn into the newest status is measured from a status this recent at most.
_RATE_SPAN_NS: Final = 1_000_000_000


class GimbalTrack:
    """Recent gimbal statuses: the camera's attitude in body FRD at a capture time.

    A status carries no time: each is taken as the gimbal's attitude at its arrival. Between
    two statuses at most ``2·max_age_ms`` apart (or any two reporting the same attitude, within
    ``SAME_ATTITUDE_DEG``, at most a second apart) the attitude is slerped. A capture past the
    newest status waits for the next one (``must_wait``; the wait is ``max_age_ms``), which
    will bracket it: red team rt41 showed a turning gimbal's newest status, up to 100 ms old,
    placing targets 2.2 m off at a claimed σ of 0.08 m, and rt43 a still gimbal starting to
    turn just after its status, 5° off. Once that wait is over the newest status applies alone,
    within ``max_age_ms``, only to a gimbal heard still: the statuses agreeing with it span
    ``max_age_ms / 2`` (rt42: a status sent twice 1 ms apart is no stillness). Otherwise, and
    before the oldest status, the attitude is unknown (``None``).

    Between two statuses that differ faster than ``max_rate_deg_s``, or that zoom faster than
    ``MAX_ZOOM_RATE`` (the focal lengths' logarithm a second; a status without them has the
    camera's own, ``fx_px``), the attitude is unknown: the arrival jitter times that rate would
    be the bearing's error (red team rt18 alternated 320 and 640 px at 100 Hz, and a third of
    the PROCEEDs were 5 m off).

    Out of this model, documented: a gimbal that turns and comes back between two statuses is
    taken as still, and a sender that repeats stale angles (sending faster than its angles
    change, rt42 and rt43) is believed: no arrival-stamped reading can tell either from a
    gimbal that paused.
    """

    def __init__(
        self,
        *,
        max_samples: int = 1024,  # a second at 1 kHz (rt57: 64 at 1 kHz were 64 ms, under a
        # board's latency of 100 ms, and every capture HOLD pose_gap for as long as it lasted)
        max_age_ms: float = 100.0,
        max_rate_deg_s: float = 60.0,
        fx_px: float = 1.0,
    ) -> None:
        self._fx_px = fx_px
        self._max_zoom_rate_ns = MAX_ZOOM_RATE / 1e9
        self._max = max_samples
        self._max_age_ns = round(max_age_ms * 1e6)
        self._max_rate_rad_ns = math.radians(max_rate_deg_s) / 1e9
        self._same_rad = math.radians(SAME_ATTITUDE_DEG)
        self._times: list[int] = []
        self._samples: list[GimbalSample] = []
        self.changes = 0  # adds: a placement's cache key

    def __len__(self) -> int:
        return len(self._samples)

    def add(self, sample: GimbalSample) -> None:
        self.changes += 1
        times, t = self._times, sample.host_ns
        i = len(times) if not times or t > times[-1] else bisect_left(times, t)
        if i < len(times) and times[i] == t:
            self._samples[i] = sample  # the newer report for the same time
            return
        times.insert(i, t)
        self._samples.insert(i, sample)
        if len(times) > self._max:
            del times[0], self._samples[0]

    def at(self, t_ns: int) -> CameraAttitude | None:
        times, samples = self._times, self._samples
        i = bisect_left(times, t_ns)
        if i < len(times) and times[i] == t_ns:
            return _attitude(samples[i].quaternion_wxyz, samples[i])
        if i == 0:
            return None  # before the oldest status
        before = samples[i - 1]
        if i < len(times):
            after = samples[i]
            span = after.host_ns - before.host_ns
            if self._turning(before, after, span):
                return None
            if span <= 2 * self._max_age_ns or (
                span <= _RATE_SPAN_NS and self._same(before, after)
            ):
                f = (t_ns - before.host_ns) / span
                q = slerp(before.quaternion_wxyz, after.quaternion_wxyz, f)
                return _attitude(q, before if f < 0.5 else after)
            return None  # a gap too long between two different statuses
        if t_ns - before.host_ns > self._max_age_ns or not self._heard_still(i - 1):
            return None
        return _attitude(before.quaternion_wxyz, before)

    def must_wait(self, t_ns: int) -> bool:
        """Whether a capture at ``t_ns`` is past the newest status: the next one may bracket
        it (every such capture waits, so they are placed in their order: rt43, a still
        gimbal heard at 4 Hz, had the ones waiting superseded by later ones placed at once)."""
        times = self._times
        return bool(times) and t_ns > times[-1]

    def _heard_still(self, j: int) -> bool:
        """Whether the statuses reporting the same attitude as status ``j`` span back
        ``max_age_ms / 2`` from it, none of them zooming."""
        times, samples = self._times, self._samples
        newest, k = samples[j], j
        while k > 0 and self._same(samples[k - 1], newest):
            k -= 1
            if 2 * (times[j] - times[k]) >= self._max_age_ns:
                return True
        return False

    def _same(self, a: GimbalSample, b: GimbalSample) -> bool:
        """Whether ``a`` and ``b`` report the same attitude and focal lengths."""
        return (
            a.fx_px == b.fx_px
            and a.fy_px == b.fy_px
            and quat_angle_rad(a.quaternion_wxyz, b.quaternion_wxyz) <= self._same_rad
        )

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


def _attitude(q: Quat, sample: GimbalSample) -> CameraAttitude:
    return CameraAttitude(q, sample.fx_px, sample.fy_px)
