"""LANDING_TARGET fields of each profile against the truth computed here (scipy's rotations,
not the code under test), and the rules: nothing in HOLD, only new captures, the rate cap."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from fusion import TargetState, WorldSnapshot
from fusion.tracking import TrackStatus
from gizmo_core import Decision, HoldReason
from gizmo_host.mavlink import Held, LandingFields, LandingTargetSender, Profile
from gizmo_host.mavlink.landing import MIN_DOWN, ardupilot_fields, px4_fields
from gizmo_host.timing import ManualScheduler
from tests.support.mavlink_wire import (
    MS,
    Wire,
)


def target(
    capture_ns: int,
    *,
    bearing_ned=(0.0, 0.0, 1.0),
    position=(1.0, 2.0, 0.0),
    verdict=Decision.PROCEED,
    range_m: float | None = 10.0,
) -> TargetState:
    hold = verdict is not Decision.PROCEED
    return TargetState(
        key="1:1:1", result_type=1, id=1, label="pad", confidence=90, tracked=True,
        capture_ns=capture_ns, age_ms=30.0, verdict=verdict,
        reasons=(HoldReason.CLOCK_NOT_LOCKED,) if hold else (),
        bearing_camera=None if hold else (1.0, 0.0, 0.0),
        bearing_ned=None if hold else bearing_ned,
        azimuth_deg=None, elevation_deg=None,
        angular_size_deg=None if hold else (4.0, 3.0),
        position_ned_m=None if hold else position,
        range_m=None if hold else range_m, range_source=None,
    )  # fmt: skip


def snapshot(now_ns: int, t: TargetState, verdict: Decision | None = None) -> WorldSnapshot:
    verdict = verdict or t.verdict
    return WorldSnapshot(
        seq=1, host_ns=now_ns, valid_until_ns=t.capture_ns + 250_000_000, verdict=verdict,
        reasons=t.reasons, selected=t.key,
        vehicle=None, sources={}, targets=(t,),
    )  # fmt: skip


unit = st.floats(-1.0, 1.0, allow_nan=False)


@given(
    st.tuples(unit, unit, unit).filter(lambda v: np.linalg.norm(v) > 0.1),
    st.tuples(unit, unit, unit, unit).filter(lambda q: np.linalg.norm(q) > 0.1),
)
def test_ardupilot_angles_rebuild_the_body_line_of_sight(bearing, q):
    q_xyzw = np.array(q[1:] + q[:1]) / np.linalg.norm(q)
    bearing_ned = tuple(np.array(bearing) / np.linalg.norm(bearing))
    q_wxyz = (q_xyzw[3], q_xyzw[0], q_xyzw[1], q_xyzw[2])
    los = Rotation.from_quat(q_xyzw).inv().apply(bearing_ned)  # the truth, in body FRD
    fields = ardupilot_fields(target(0, bearing_ned=bearing_ned), q_wxyz, 123)
    if abs(los[2] - MIN_DOWN) < 1e-9:
        return  # on the boundary: either answer is right
    if los[2] < MIN_DOWN:  # more than 85° from body down, or above the body's horizon
        assert fields is Held.ABOVE_HORIZON
        return
    assert isinstance(fields, LandingFields)
    assert fields.frame == 12 and fields.position_valid == 0 and fields.time_usec == 123
    # AC_PrecLand (PLND_ORIENT down): the line of sight is (-tan(angle_y), tan(angle_x), 1).
    rebuilt = np.array([-math.tan(fields.angle_y), math.tan(fields.angle_x), 1.0])
    assert np.allclose(rebuilt / np.linalg.norm(rebuilt), los, atol=1e-9)
    assert fields.size_x == pytest.approx(math.radians(4.0))
    assert fields.size_y == pytest.approx(math.radians(3.0))
    assert fields.distance == 10.0


def test_px4_sends_the_absolute_position_and_nothing_without_one():
    fields = px4_fields(target(0, position=(3.0, -4.0, 0.5)), 77)
    assert isinstance(fields, LandingFields)
    assert (fields.frame, fields.position_valid, fields.time_usec) == (1, 1, 77)
    assert (fields.x, fields.y, fields.z) == (3.0, -4.0, 0.5)
    assert px4_fields(target(0, verdict=Decision.HOLD), 77) is Held.NO_POSITION


@pytest.mark.parametrize("profile", list(Profile))
def test_nothing_is_sent_in_hold_and_the_rate_is_capped(profile):
    wire = Wire(boot_at_start_ms=50_000.0, skew_ppm=40.0)
    wire.run(2.0)
    assert wire.session.locked
    sender = LandingTargetSender(
        wire.session, profile, attitude_at=wire.source.attitude_at, rate_hz=20.0
    )
    clock = wire.clock
    for _ in range(200):  # 2 s of HOLD snapshots at 100 Hz
        clock.advance(10 * MS)
        now = clock.now_ns()
        assert sender.offer(snapshot(now, target(now - 30 * MS, verdict=Decision.HOLD)), now) is (
            Held.NOT_PROCEED
        )
    clock.advance(20 * MS)
    assert not wire.autopilot.landing_targets and sender.sent == 0
    # A PROCEED offered after its valid_until_ns (a snapshot delivered late) is void too.
    now = clock.now_ns()
    late = snapshot(now - 300 * MS, target(now - 330 * MS))
    assert now > late.valid_until_ns and sender.offer(late, now) is Held.EXPIRED
    captures = {}  # time_usec -> host capture time
    for _ in range(200):  # 2 s of PROCEED snapshots, a new capture at 100 Hz
        clock.advance(10 * MS)
        now = clock.now_ns()
        outcome = sender.offer(snapshot(now, target(now - 30 * MS)), now)
        if isinstance(outcome, LandingFields):
            captures[outcome.time_usec] = now - 30 * MS
    clock.advance(20 * MS)
    received = list(wire.autopilot.landing_targets)
    assert 39 <= len(received) <= 41  # 20 Hz over 2 s
    gaps = np.diff([r.host_ns for r in received])
    assert gaps.min() >= 50 * MS - 1
    assert sender.held["rate_cap"] >= 150
    for r in received:  # time_usec: the capture on the autopilot's own clock, within 50 µs
        capture_ns = captures[r.fields["time_usec"]]
        assert abs(r.fields["time_usec"] - wire.autopilot.boot_ns(capture_ns) / 1000) < 50
    assert sender.stats()["latency_ms"]["p50"] == pytest.approx(30.0, abs=0.5)


def test_the_same_capture_is_sent_once_and_a_down_link_or_unlocked_clock_holds():
    wire = Wire()
    sender = LandingTargetSender(wire.session, "px4")
    now = wire.clock.now_ns()
    assert sender.offer(snapshot(now, target(now)), now) is Held.LINK_DOWN
    wire.run(0.15)  # heartbeat heard, clock not yet locked
    now = wire.clock.now_ns()
    assert sender.offer(snapshot(now, target(now)), now) is Held.CLOCK_NOT_LOCKED
    wire.run(2.0)
    now = wire.clock.now_ns()
    t = target(now - 30 * MS)
    assert isinstance(sender.offer(snapshot(now, t), now), LandingFields)
    assert sender.offer(snapshot(now + 10 * MS, t), now + 10 * MS) is Held.NOT_NEW


def tracked(capture_ns: int, position, camera, *, track_id: int = 300) -> TargetState:
    """A confirmed track's target: its estimate, the camera at the capture, and the raw
    measurement's bearing (straight down) that the estimate corrected."""
    return dataclasses.replace(
        target(capture_ns, position=position),
        velocity_ned_m_s=(0.5, 0.0, 0.0),
        covariance_ned=tuple(np.eye(6).ravel() * 1e-3),
        track_id=track_id,
        track_state=TrackStatus.CONFIRMED,
        camera_ned_m=camera,
    )


def test_a_tracked_target_sends_its_estimate_and_its_number():
    """px4: the filtered position; ardupilot: the line of sight from the camera to it (the
    truth here: plain vector arithmetic), never the raw bearing; target_num = id mod 256."""
    camera, position = (0.0, 0.0, -8.0), (1.5, -0.5, 0.0)
    t = tracked(0, position, camera)
    fields = px4_fields(t, 5)
    assert isinstance(fields, LandingFields)
    assert (fields.x, fields.y, fields.z, fields.position_valid) == (*position, 1)
    sight = np.subtract(position, camera)
    assert fields.distance == pytest.approx(float(np.linalg.norm(sight)))
    level = (1.0, 0.0, 0.0, 0.0)
    fields = ardupilot_fields(t, level, 5)
    assert isinstance(fields, LandingFields)
    assert fields.angle_x == pytest.approx(math.atan2(sight[1], sight[2]))
    assert fields.angle_y == pytest.approx(math.atan2(-sight[0], sight[2]))
    assert fields.distance == pytest.approx(float(np.linalg.norm(sight)))
    assert fields.angle_x != 0.0  # not the raw bearing, which was straight down
    wire = Wire()
    wire.run(2.0)
    sender = LandingTargetSender(wire.session, "px4", target_num=7)
    now = wire.clock.now_ns()
    assert isinstance(sender.offer(snapshot(now, tracked(now - 30 * MS, position, camera)), now),
                      LandingFields)  # fmt: skip
    wire.run(0.1)
    (received,) = wire.autopilot.landing_targets
    assert received.fields["target_num"] == 300 % 256
    assert received.fields["position_valid"] == 1


def test_a_bad_profile_or_rate_is_one_line():
    clock = ManualScheduler()
    from gizmo_host.mavlink import AutopilotSession

    session = AutopilotSession(lambda data, to: True, clock)
    for kwargs in ({"profile": "irlock"}, {"profile": "px4", "rate_hz": 0.0}):
        with pytest.raises(ValueError) as caught:
            LandingTargetSender(session, **kwargs)  # type: ignore[arg-type]
        assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="attitude_at"):
        LandingTargetSender(session, "ardupilot")


@pytest.mark.parametrize("profile", list(Profile))
def test_a_hold_after_a_target_sends_nothing_in_either_profile(profile):
    """After a target, 200 ms of HOLD put nothing on the wire: PX4 would fuse a
    ``position_valid = 0`` message's angles as an IR-LOCK report (zero angles: "straight
    below"), and AC_PrecLand uses the angles of every message."""
    wire = Wire()
    wire.run(2.0)
    sender = LandingTargetSender(
        wire.session, profile, attitude_at=wire.source.attitude_at, rate_hz=20.0
    )
    clock = wire.clock
    now = clock.now_ns()
    assert isinstance(sender.offer(snapshot(now, target(now - 30 * MS)), now), LandingFields)
    outcomes = []
    for _ in range(20):  # 200 ms of HOLD, well past the 50 ms rate cap
        clock.advance(10 * MS)
        now = clock.now_ns()
        held = snapshot(now, target(now - 30 * MS, verdict=Decision.HOLD))
        outcomes.append(sender.offer(held, now))
    wire.run(0.1)
    assert outcomes == [Held.NOT_PROCEED] * 20
    received = [r.fields for r in wire.autopilot.landing_targets]
    assert len(received) == 1 and received[0]["position_valid"] == int(profile is Profile.PX4)
    assert sender.sent == 1 and sender.held["not_proceed"] == 20
