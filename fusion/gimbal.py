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
# A status applies at a capture it does not bracket only if the gimbal, turning on at the rate
# it was last heard turning, stays within this of it: about a box's noise (1.5 px at 430 px
# focal length). Red team rt41: a gimbal turning at 55°/s, its status at 10 Hz, placed targets
# 1.5 m off at a claimed σ of 0.08 m with the newest status's angles, up to 100 ms old.
MAX_STALE_TURN_DEG: Final = 0.2


class GimbalTrack:
    """Recent gimbal samples: the camera's attitude in body FRD at a capture time.

    Between two samples no more than ``2·max_age_ms`` apart the attitude is slerped; otherwise
    the nearest sample applies when it is within ``max_age_ms``; else it is unknown (``None``).
    Samples are stamped at their arrival (the status carries no time), so a gimbal turning
    faster than ``max_rate_deg_s`` between the two samples used is unknown too: the arrival
    jitter times that rate would be the bearing's error. So is one zooming faster than
    ``MAX_ZOOM_RATE`` (its focal lengths' logarithm a second; a sample without them has the
    camera's own, ``fx_px``): red team rt18 alternated 320 and 640 px at 100 Hz, and a third
    of the PROCEEDs were 5 m off. The nearest sample alone applies only where the gimbal, at
    the rate it was heard turning there (from its neighbour), stays within
    ``MAX_STALE_TURN_DEG`` of it until the capture: a capture after the newest sample of a
    turning gimbal waits for the next one (``must_wait``), else it is unknown.
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
        times = self._times
        if not times:
            return None
        i = bisect_left(times, t_ns)
        after = self._samples[i] if i < len(times) else None
        before = self._samples[i - 1] if i > 0 else None
        if after is not None and after.host_ns == t_ns:
            before = None
        if before is not None and after is not None:
            span = after.host_ns - before.host_ns
            if span <= 2 * self._max_age_ns:
                if self._turning(before, after):
                    return None
                f = (t_ns - before.host_ns) / span
                near = before if f < 0.5 else after
                q = slerp(before.quaternion_wxyz, after.quaternion_wxyz, f)
                return CameraAttitude(q, near.fx_px, near.fy_px)
        candidates = [s for s in (before, after) if s is not None]
        nearest = min(candidates, key=lambda s: abs(s.host_ns - t_ns))
        gap_ns = abs(nearest.host_ns - t_ns)
        if gap_ns > self._max_age_ns:
            return None
        if gap_ns and not self._still_for(nearest, t_ns):
            return None  # turning there: where it pointed at the capture is unknown
        return CameraAttitude(nearest.quaternion_wxyz, nearest.fx_px, nearest.fy_px)

    def must_wait(self, t_ns: int) -> bool:
        """Whether a capture at ``t_ns`` is after the newest sample, near enough for the next
        one to bracket it, and its attitude unknown without that one."""
        times = self._times
        return bool(times) and 0 < t_ns - times[-1] <= self._max_age_ns and self.at(t_ns) is None

    def _still_for(self, sample: GimbalSample, t_ns: int) -> bool:
        """Whether the gimbal stays within ``MAX_STALE_TURN_DEG`` of ``sample`` until ``t_ns``
        at the rate it turned between ``sample`` and its neighbour on ``t_ns``'s side (the
        other side's at the ends: the newest sample's last-heard rate), a rate known only from
        a neighbour near enough and not turning or zooming too fast."""
        times = self._times
        j = bisect_left(times, sample.host_ns)
        toward = j + 1 if t_ns > sample.host_ns else j - 1
        k = toward if 0 <= toward < len(times) else 2 * j - toward
        if not 0 <= k < len(times):
            return False  # one sample: how it turns is unknown
        other = self._samples[k]
        a, b = (other, sample) if k < j else (sample, other)
        span = b.host_ns - a.host_ns
        if span > 2 * self._max_age_ns or self._turning(a, b):
            return False
        angle = quat_angle_rad(a.quaternion_wxyz, b.quaternion_wxyz)
        return angle * abs(t_ns - sample.host_ns) <= self._stale_turn_rad * span

    def _turning(self, a: GimbalSample, b: GimbalSample) -> bool:
        """Whether the gimbal turned or zoomed faster than its limit from ``a`` to ``b``."""
        span = max(b.host_ns - a.host_ns, 1)
        angle = quat_angle_rad(a.quaternion_wxyz, b.quaternion_wxyz)
        if angle > self._max_rate_rad_ns * span:
            return True
        if a.fx_px == b.fx_px:
            return False
        zoom = abs(math.log((a.fx_px or self._fx_px) / (b.fx_px or self._fx_px)))
        return zoom > self._max_zoom_rate_ns * span
