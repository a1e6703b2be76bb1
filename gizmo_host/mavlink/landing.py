"""LANDING_TARGET (149) for the world's selected target, only while it may be acted on.

Sent only while the snapshot's verdict and the target's own verdict are PROCEED, for a
capture not sent before, at most ``rate_hz``, on an UP link with a locked clock: anything
else is a counted hold, never a message. ``time_usec`` is the capture time on the autopilot's
clock (µs). Two profiles (docs/mavlink.md):

- ``ardupilot`` (AC_PrecLand, which takes BODY_FRD angles): frame MAV_FRAME_BODY_FRD, the line
  of sight ``b`` from the camera in the body frame at the capture time, ``angle_x =
  atan2(b_y, b_z)``, ``angle_y = atan2(-b_x, b_z)`` (AC_PrecLand rebuilds
  ``(-tan(angle_y), tan(angle_x), 1)``); nothing when the line is more than 85° from the
  body's down axis (``b_z <= 0`` is above the body's horizon; near it the tangents blow up);
  ``distance`` when a range exists; ``size_x``/``size_y`` the box's angular size;
- ``px4`` (landing_target_estimator, which uses positions only): ``position_valid = 1``,
  MAV_FRAME_LOCAL_NED, ``x``/``y``/``z`` the target's absolute position in the autopilot's
  local frame (the world's, when the world's pose comes from the autopilot); nothing without
  a position.

A tracked target (docs/tracking.md) sends its track's estimate: px4 the filtered position,
ardupilot the line of sight and distance from the camera to the filtered position (not the
raw box's); ``target_num`` is the track id mod 256, ``position_valid`` 1 only while the track
is confirmed (a PROCEED needs that anyway).

A HOLD sends nothing, in either profile: the autopilot stops descending on its own timeout
(PX4's ``LTEST_*``/``PLD_BTOUT``, ArduPilot's ``PLND_TIMEOUT``). A "HOLD" message cannot be
said safely: PX4's MAVLink receiver takes a LANDING_TARGET with ``position_valid = 0`` as an
IR-LOCK report and fuses its ``angle_x``/``angle_y`` as the target's direction, so a HOLD with
zero angles would read as "the target is straight below", and AC_PrecLand uses the angles of
every message whatever ``position_valid`` says.

The capture -> send latency is kept as a distribution (ArduPilot's ``PLND_LAG`` should match it).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import Any, NamedTuple

from fusion.geometry import Quat, Vec3, norm, quat_rotate_inverse, scale, sub
from fusion.snapshot import TargetState, WorldSnapshot
from fusion.tracking import TrackStatus
from gizmo_core import Decision

from . import codec as mc
from .session import AutopilotSession

MIN_DOWN = math.cos(math.radians(85.0))  # a line of sight further from body down: tan() blows up


class Profile(Enum):
    ARDUPILOT = "ardupilot"
    PX4 = "px4"


class Held(Enum):
    NO_TARGET = "no_target"
    NOT_PROCEED = "not_proceed"
    EXPIRED = "expired"  # offered after the snapshot's valid_until_ns: void
    NOT_NEW = "not_new"
    RATE_CAP = "rate_cap"
    LINK_DOWN = "link_down"
    CLOCK_NOT_LOCKED = "clock_not_locked"
    NO_ATTITUDE = "no_attitude"
    NO_BEARING = "no_bearing"
    ABOVE_HORIZON = "above_horizon"
    NO_POSITION = "no_position"
    SEND_FAILED = "send_failed"


class LandingFields(NamedTuple):
    time_usec: int
    frame: int
    angle_x: float = 0.0
    angle_y: float = 0.0
    distance: float = 0.0
    size_x: float = 0.0
    size_y: float = 0.0
    x: float = 0.0
    y: float = 0.0
    z: float = 0.0
    position_valid: int = 0


def line_of_sight(target: TargetState) -> tuple[Vec3, float] | None:
    """The unit line of sight in NED and the distance: from the camera to a track's estimate,
    else the measurement's own bearing and range (0 without one)."""
    position, camera = target.position_ned_m, target.camera_ned_m
    if target.track_id is not None and position is not None and camera is not None:
        to_target = sub(position, camera)
        distance = norm(to_target)
        if distance > 0.0:
            return scale(to_target, 1.0 / distance), distance
    if target.bearing_ned is None:
        return None
    return target.bearing_ned, target.range_m or 0.0


def ardupilot_fields(target: TargetState, q_body: Quat, time_usec: int) -> LandingFields | Held:
    """BODY_FRD angles of the line of sight, with ``q_body`` the attitude at the capture."""
    sight = line_of_sight(target)
    if sight is None:
        return Held.NO_BEARING
    bearing, distance = sight
    bx, by, bz = quat_rotate_inverse(q_body, bearing)
    if bz <= MIN_DOWN:
        return Held.ABOVE_HORIZON
    size = target.angular_size_deg or (0.0, 0.0)
    return LandingFields(
        time_usec,
        mc.FRAME_BODY_FRD,
        angle_x=math.atan2(by, bz),
        angle_y=math.atan2(-bx, bz),
        distance=distance,
        size_x=math.radians(size[0]),
        size_y=math.radians(size[1]),
    )


def px4_fields(target: TargetState, time_usec: int) -> LandingFields | Held:
    """The target's absolute position in the local NED frame, ``position_valid = 1``."""
    if target.position_ned_m is None:
        return Held.NO_POSITION
    x, y, z = target.position_ned_m
    sight = line_of_sight(target)
    confirmed = target.track_state in (None, TrackStatus.CONFIRMED)
    return LandingFields(
        time_usec,
        mc.FRAME_LOCAL_NED,
        distance=0.0 if sight is None else sight[1],
        x=x,
        y=y,
        z=z,
        position_valid=int(confirmed),
    )


class Distribution:
    """The last ``size`` values, summarised as p50/p95/max (bounded memory)."""

    def __init__(self, size: int = 1024) -> None:
        self._values: deque[float] = deque(maxlen=size)

    def add(self, value: float) -> None:
        self._values.append(value)

    def summary(self) -> dict[str, float | int | None]:
        values = sorted(self._values)
        if not values:
            return {"n": 0, "p50": None, "p95": None, "max": None}
        n = len(values)
        p50, p95 = values[min(n - 1, n // 2)], values[min(n - 1, int(0.95 * n))]
        return {"n": n, "p50": round(p50, 3), "p95": round(p95, 3), "max": round(values[-1], 3)}


class LandingTargetSender:
    """Offers each world snapshot; sends LANDING_TARGET through the session when it may."""

    def __init__(
        self,
        session: AutopilotSession,
        profile: Profile | str,
        *,
        attitude_at: Callable[[int], Quat | None] | None = None,
        rate_hz: float = 20.0,
        target_num: int = 0,
    ) -> None:
        try:
            self.profile = Profile(profile)
        except ValueError:
            raise ValueError(
                f"landing_target: expected 'ardupilot' or 'px4', got {profile!r}"
            ) from None
        if not (math.isfinite(rate_hz) and rate_hz > 0):
            raise ValueError(f"rate_hz: expected a number > 0, got {rate_hz!r}")
        if self.profile is Profile.ARDUPILOT and attitude_at is None:
            raise ValueError("landing_target 'ardupilot': expected attitude_at (the body pose)")
        self._session = session
        self._attitude_at = attitude_at
        self._min_interval_ns = round(1e9 / rate_hz)
        self._target_num = target_num
        self._last_send_ns: int | None = None
        self._last_capture: tuple[str, int] | None = None
        self.sent = 0
        self.held: dict[str, int] = {h.value: 0 for h in Held}
        self.latency_ms = Distribution()
        self.last: LandingFields | None = None

    def offer(self, snapshot: WorldSnapshot, now_ns: int) -> LandingFields | Held:
        """Send for ``snapshot`` if every rule allows it; what was sent, or why not."""
        outcome = self._decide(snapshot, now_ns)
        if isinstance(outcome, Held):
            self.held[outcome.value] += 1
        return outcome

    def _decide(self, snapshot: WorldSnapshot, now_ns: int) -> LandingFields | Held:
        key = snapshot.selected
        target = None if key is None else snapshot.target(key)
        if key is None or target is None:
            return Held.NO_TARGET
        if not snapshot.proceed or target.verdict is not Decision.PROCEED:
            return Held.NOT_PROCEED
        if now_ns > snapshot.valid_until_ns:  # a late snapshot's PROCEED no longer holds
            return Held.EXPIRED
        last = self._last_capture
        if last is not None and last[0] == key and target.capture_ns <= last[1]:
            return Held.NOT_NEW
        if self._last_send_ns is not None and now_ns - self._last_send_ns < self._min_interval_ns:
            return Held.RATE_CAP
        session = self._session
        if not session.link_up:
            return Held.LINK_DOWN
        capture_autopilot_ns = session.estimator.autopilot_now_ns(target.capture_ns)
        if capture_autopilot_ns is None:
            return Held.CLOCK_NOT_LOCKED
        time_usec = max(0, capture_autopilot_ns // 1000)
        fields: LandingFields | Held
        if self.profile is Profile.ARDUPILOT:
            assert self._attitude_at is not None
            q_body = self._attitude_at(target.capture_ns)
            if q_body is None:
                return Held.NO_ATTITUDE
            fields = ardupilot_fields(target, q_body, time_usec)
        else:
            fields = px4_fields(target, time_usec)
        if isinstance(fields, Held):
            return fields
        number = self._target_num if target.track_id is None else target.track_id % 256
        if not session.send(self._encode(fields, number)):
            return Held.SEND_FAILED
        self.sent += 1
        self.last = fields
        self._last_send_ns = now_ns
        self._last_capture = (key, target.capture_ns)
        self.latency_ms.add((now_ns - target.capture_ns) / 1e6)
        return fields

    def _encode(self, f: LandingFields, target_num: int) -> bytes:
        codec = self._session.codec
        msg = codec.mav.landing_target_encode(
            f.time_usec, target_num, f.frame, f.angle_x, f.angle_y, f.distance,
            f.size_x, f.size_y, f.x, f.y, f.z, (1.0, 0.0, 0.0, 0.0), 0, f.position_valid,
        )  # fmt: skip
        return codec.encode(msg)

    def stats(self) -> dict[str, Any]:
        return {
            "profile": self.profile.value,
            "sent": self.sent,
            "held": {k: n for k, n in self.held.items() if n},
            "latency_ms": self.latency_ms.summary(),
        }
