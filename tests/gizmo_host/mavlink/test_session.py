"""The autopilot session on a manual clock, against the stand-in over an in-memory link whose
delays the test sets per direction: the clock mapping (offset, skew, a round-trip spike, a
reboot), TIMESYNC answered in the autopilot's clock, stream requests, link loss, and
foreign or malformed traffic counted and ignored."""

from __future__ import annotations

import pytest
from pymavlink.dialects.v20 import common as mavlink

from fusion.geometry import quat_angle_rad
from gizmo_core.clock import ClockStatus
from gizmo_host.mavlink import AutopilotSession
from gizmo_host.mavlink.session import DEFAULT_STREAMS
from gizmo_host.timing import ManualScheduler
from tests.support.mavlink_rig import circling
from tests.support.mavlink_wire import (
    MS,
    PAIR,
    S,
    Wire,
    _v2,
)


def test_locks_and_maps_the_autopilot_clock_under_offset_and_skew():
    wire = Wire(skew_ppm=150.0, boot_at_start_ms=123_456.0)
    wire.run(1.0)
    assert wire.session.locked
    errors = []
    for _ in range(30):
        wire.run(1.0)
        errors.append(abs(wire.mapping_error_ms()))
    # Symmetric 1 ms each way: the midpoint is exact; the skew costs at most a sample period.
    assert max(errors) < 0.1
    skew = wire.session.stats(wire.clock.now_ns())["timesync"]["skew_ppm"]
    assert skew == pytest.approx(150.0, abs=5.0)


@pytest.mark.parametrize(("down_ms", "up_ms"), [(40.0, 1.0), (8.0, 1.0)], ids=["41ms", "9ms"])
def test_an_asymmetric_round_trip_spike_does_not_move_the_mapping(down_ms, up_ms):
    """41 ms is past the estimator's bound; 9 ms is within it but 3.5 ms asymmetric, which
    the session's least-round-trip filter drops before the estimator could take it."""
    wire = Wire(skew_ppm=-80.0)
    wire.run(3.0)
    before = wire.mapping_error_ms()
    wire.down_ms, wire.up_ms = down_ms, up_ms
    wire.run(2.0)
    stats = wire.session.stats(wire.clock.now_ns())
    assert stats["timesync"]["rejected_rtt"] >= 15
    assert abs(wire.mapping_error_ms() - before) < 0.5
    wire.down_ms = 1.0
    wire.run(2.0)
    assert abs(wire.mapping_error_ms()) < 0.1


def test_a_lasting_slower_link_is_followed_after_the_filter_window():
    wire = Wire(skew_ppm=60.0)
    wire.run(3.0)
    wire.down_ms = wire.up_ms = 3.0  # symmetric, so still exact once accepted
    wire.run(10.0)
    accepted = wire.session.stats(wire.clock.now_ns())["timesync"]["accepted"]
    wire.run(2.0)
    assert wire.session.stats(wire.clock.now_ns())["timesync"]["accepted"] >= accepted + 15
    assert abs(wire.mapping_error_ms()) < 0.1


def test_a_slow_link_whose_every_round_trip_is_over_10_ms_still_locks_within_its_bound():
    """8-16 ms each way, TIMESYNC included: no round trip is under PX4's 10 ms, so a fixed gate
    would never lock. The gate follows the least round trip (bounded), keeps the fastest
    answers, and the mapping stays within half the gate's width above that least."""
    wire = Wire(skew_ppm=120.0)
    wire.down_ms = wire.up_ms = (8.0, 16.0)
    wire.run(10.0)
    assert wire.session.locked
    errors = []
    for _ in range(40):
        wire.run(0.5)
        errors.append(wire.mapping_error_ms())
    ts = wire.session.stats(wire.clock.now_ns())["timesync"]
    # The window's least round trip is 16-22 ms (the draws decide): the gate 21-28 ms.
    assert 16.0 <= ts["min_rtt_ms"] < 18.0 and ts["rtt_gate_ms"] < 28.5
    assert ts["rejected_rtt"] > ts["accepted"]
    bound_ms = (ts["rtt_gate_ms"] - ts["min_rtt_ms"]) / 2 + 0.5
    assert max(abs(e) for e in errors) < bound_ms
    errors.sort(key=abs)
    print(f"slow link: mapping error p95 {abs(errors[int(0.95 * len(errors))]):.2f} ms")


def test_a_fast_link_keeps_a_tight_gate_and_a_spike_still_cannot_open_it():
    """The one round-trip gate (the estimator's): the least round trip plus 1 ms."""
    wire = Wire()
    wire.run(3.0)
    gate = wire.session.estimator.rtt_gate_ns
    assert gate == wire.session.estimator.stats().min_rtt_ns + 1 * MS
    wire.down_ms = 30.0
    wire.run(1.0)  # 1 s of 31 ms round trips: the least of the window is still 2 ms
    assert wire.session.estimator.rtt_gate_ns == gate
    assert abs(wire.mapping_error_ms()) < 0.1


def test_a_reboot_starts_a_new_epoch_relocks_and_requests_the_streams_again():
    wire = Wire(boot_at_start_ms=600_000.0)
    wire.run(2.0)
    assert wire.session.locked and wire.autopilot.rates_hz
    epoch = wire.session.estimator.epoch
    wire.autopilot.reboot(boot_at_start_ms=1_500.0)
    assert not wire.autopilot.rates_hz  # a booted autopilot streams nothing until asked
    wire.run(2.0)
    assert wire.session.estimator.epoch > epoch
    assert wire.session.locked
    assert abs(wire.mapping_error_ms()) < 0.1
    assert set(wire.autopilot.rates_hz) == set(DEFAULT_STREAMS)
    new = [p for p in wire.poses if p.epoch > epoch]
    assert new
    assert all(abs(p.sim_time_ns - wire.autopilot.boot_ns(p.host_ns)) < 0.2 * MS for p in new)


def test_timesync_requests_are_answered_always_in_the_autopilot_clock_once_locked():
    """Before the lock the autopilot's request is answered with its own request time (its
    offset to us is then half the round trip: MAVSDK waits for that answer before it answers
    ours); once locked, in its clock as mapped."""
    wire = Wire(boot_at_start_ms=42_000.0, skew_ppm=50.0)
    wire.run(0.35)
    assert wire.session.counts["timesync_answered_unlocked"] >= 1
    assert not wire.session.locked
    wire.run(10.0)
    assert wire.session.counts["timesync_answered"] >= 90
    # PX4's offset to a companion answering in PX4's own clock stays ~0.
    assert abs(wire.autopilot.px4_offset_ns) < 0.2 * MS


@pytest.mark.parametrize(
    ("streams", "sources"),
    [(DEFAULT_STREAMS, {"odometry", "pair"}), (PAIR, {"pair"})],
    ids=["odom", "pair"],
)
def test_streams_requested_at_50_hz_and_poses_follow_the_truth(streams, sources):
    """With ODOMETRY and the pairs both at 50 Hz, neither serves better: the one that served
    first places every pose, and the other's are counted ``mixed``."""
    wire = Wire(skew_ppm=30.0, boot_at_start_ms=9_000.0, streams=streams, lag_ms=(8.0, 16.0))
    wire.run(3.0)
    assert wire.autopilot.counts["interval_commands"] == len(streams)
    assert wire.autopilot.rates_hz == dict.fromkeys(streams, 50.0)
    rates = wire.session.stats(wire.clock.now_ns())["rates_hz"]
    assert rates["ATTITUDE_QUATERNION"] == pytest.approx(50.0, abs=2.0)
    assert wire.source.stats()["source"] in sources
    assert (wire.source.counts["mixed"] > 100) is (len(sources) == 2)
    locked = [p for p in wire.poses if p.clock_status is ClockStatus.LOCKED]
    assert len(locked) > 100
    for p in locked:
        truth = circling(p.host_ns)
        assert (
            max(abs(a - b) for a, b in zip(p.position_ned_m, truth.position_ned_m, strict=True))
            < 0.005
        )
        assert quat_angle_rad(p.quaternion_wxyz, truth.quaternion_wxyz) < 1e-3
        assert p.velocity_ned_m_s is not None
        assert (
            max(abs(a - b) for a, b in zip(p.velocity_ned_m_s, truth.velocity_ned_m_s, strict=True))
            < 0.01
        )


def test_link_goes_down_three_seconds_after_the_last_heartbeat_and_comes_back():
    wire = Wire()
    wire.run(2.0)
    assert wire.session.link_up and wire.links[0][0] is True
    wire.cut = True
    cut_at = wire.clock.now_ns()
    wire.run(5.0)
    assert not wire.session.link_up
    down = wire.links[-1]
    assert down[0] is False and "heartbeat" in down[2]
    assert 2 * S < down[1] - cut_at <= 3 * S + 10 * MS  # 3 s after the last heartbeat heard
    wire.cut = False
    wire.run(2.0)
    assert wire.session.link_up and wire.session.counts["link_ups"] == 2


def test_an_autopilot_never_heard_is_a_down_link_in_stats_not_an_error():
    clock = ManualScheduler()
    session = AutopilotSession(lambda data, to: False, clock)
    session.start()
    clock.advance(10 * S)
    stats = session.stats(clock.now_ns())
    assert stats["link"] == "DOWN" and stats["heartbeat_age_ms"] is None
    assert stats["timesync"]["status"] == "converging"
    assert stats["counts"]["send_failures"] >= 100
    session.stop()


def test_foreign_garbage_bad_crc_and_unknown_messages_are_counted_and_ignored():
    wire = Wire()
    wire.run(2.0)
    session = wire.session
    poses = len(wire.poses)
    peer = mavlink.MAVLink(None, srcSystem=2, srcComponent=1)
    foreign = peer.local_position_ned_encode(1, 99.0, 99.0, 99.0, 0.0, 0.0, 0.0).pack(peer)
    camera = mavlink.MAVLink(None, srcSystem=1, srcComponent=100)  # not an autopilot
    heartbeat = camera.heartbeat_encode(30, mavlink.MAV_AUTOPILOT_INVALID, 0, 0, 4).pack(camera)
    good = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
    bad_crc = bytearray(good.heartbeat_encode(2, 12, 0, 0, 4).pack(good))
    bad_crc[-3] ^= 0xFF
    other = ("127.0.0.1", 14999)
    for _ in range(50):
        wire.inject(foreign + heartbeat, other)
        wire.inject(bytes(range(256)) * 2)  # garbage, including stray 0xFD/0xFE bytes
        wire.inject(bytes(bad_crc))
        wire.inject(_v2(60_123, b"\x01" * 20))  # ids no dialect knows
    wire.inject(_v2(60_123, b"\x01" * 20) * 80)  # a datagram full of them
    codec = session.codec.stats()
    assert session.counts["foreign"] >= 100 and session.counts["conflicts"] == 0
    assert codec["bad_data"] >= 50 and codec["unknown"] >= 130 and codec["junk_bytes"] >= 50
    wire.run(1.0)
    assert session.link_up and len(wire.poses) > poses  # the real autopilot still served
    assert all(p.position_ned_m[0] < 50 for p in wire.poses)
    assert not wire.conflicts


def test_messages_before_any_autopilot_heartbeat_are_not_bound():
    clock = ManualScheduler()
    session = AutopilotSession(lambda data, to: True, clock, target_system=0)
    gcs = mavlink.MAVLink(None, srcSystem=255, srcComponent=190)
    session.feed(gcs.heartbeat_encode(6, 8, 0, 0, 4).pack(gcs), clock.now_ns())  # a GCS
    session.feed(gcs.timesync_encode(0, 5).pack(gcs), clock.now_ns())
    assert session.counts["unbound"] == 2 and not session.link_up
