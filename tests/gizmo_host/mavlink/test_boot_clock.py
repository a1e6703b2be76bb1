"""The autopilot's boot stamps as an honest PX4 sends them (red team, rt7): messages stamped with
their sample's time, a late datagram, ``time_boot_ms`` wrapping after 2^32 ms while TIMESYNC's
clock goes on, and a reboot after the wrap. Only a reboot starts an epoch; each of the others
once held the world for good (``clock_not_locked``: a new epoch on every such message).

The session on a manual clock against the stand-in (tests/support/mavlink_wire.py), whose
``time_boot_ms`` is a uint32 as PX4's; the truth is the stand-in's own boot clock."""

from __future__ import annotations

from pymavlink.dialects.v20 import common as mavlink

from gizmo_core.clock import ClockStatus
from tests.support.mavlink_wire import MS, PAIR, S, Wire

WRAP_MS = 2**32


def _locked_throughout(wire: Wire, seconds: float, each=None) -> list[ClockStatus]:
    """Run ``seconds`` in 50 ms steps (``each()`` before every step); the estimator's status
    after each."""
    statuses = []
    for _ in range(round(seconds / 0.05)):
        if each is not None:
            each()
        wire.run(0.05)
        statuses.append(wire.session.estimator.status)
    return statuses


def _placed_right(wire: Wire, poses) -> float:
    """The worst error (ms) of ``poses``' host times against the stand-in's clock."""
    return max(abs(wire.autopilot.clock.host_ns(p.sim_time_ns) - p.host_ns) / MS for p in poses)


def test_a_message_stamped_with_its_sample_time_is_not_a_reboot():
    """ATTITUDE_TARGET at 4 Hz stamped 100 ms before the newest pose (PX4 stamps a setpoint
    with its own time), from the autopilot's address and ids: not a reboot, no new epoch,
    the streams not asked for again, poses placed right throughout."""
    wire = Wire(streams=PAIR)
    wire.run(2.0)
    assert wire.session.locked
    epoch, requests = wire.session.estimator.epoch, wire.session.counts["stream_requests"]
    mav = wire.autopilot.codec.mav
    beat = [0]

    def setpoint() -> None:
        beat[0] += 1
        if beat[0] % 5 == 0:  # every 250 ms
            boot_ms = wire.autopilot.boot_ns(wire.clock.now_ns()) // MS - 100
            msg = mav.attitude_target_encode(boot_ms, 0, [1.0, 0.0, 0.0, 0.0], 0, 0, 0, 0.5)
            wire.inject(wire.autopilot.codec.encode(msg))

    before = len(wire.poses)
    statuses = _locked_throughout(wire, 5.0, setpoint)
    assert beat[0] >= 100 and wire.session.counts["reboots"] == 0
    assert wire.session.estimator.epoch == epoch
    assert set(statuses) == {ClockStatus.LOCKED}
    assert wire.session.counts["stream_requests"] == requests
    poses = wire.poses[before:]
    assert len(poses) >= 200 and {p.epoch for p in poses} == {epoch}
    assert _placed_right(wire, poses) < 0.2


def test_a_late_datagram_is_not_a_reboot_and_two_in_a_row_are():
    """One ATTITUDE_QUATERNION 300 ms late (reordered behind 15 newer ones) is not a reboot;
    the stream stepping back twice in a row, the second not back above its old level, is."""
    wire = Wire(streams=PAIR)
    wire.run(2.0)
    epoch = wire.session.estimator.epoch
    mav = wire.autopilot.codec.mav

    def stale_attitude() -> bytes:
        boot_ms = wire.autopilot.boot_ns(wire.clock.now_ns()) // MS - 300
        msg = mav.attitude_quaternion_encode(boot_ms, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, [0.0] * 4)
        return wire.autopilot.codec.encode(msg)

    wire.inject(stale_attitude())
    statuses = _locked_throughout(wire, 1.0)
    assert wire.session.estimator.epoch == epoch and wire.session.counts["reboots"] == 0
    assert set(statuses) == {ClockStatus.LOCKED}
    wire.inject(stale_attitude())
    wire.inject(stale_attitude())  # no newer attitude between: the autopilot's clock went back
    assert wire.session.estimator.epoch == epoch + 1
    assert wire.session.counts["reboots"] == 1


def test_time_boot_ms_wraps_after_49_7_days_and_the_clock_stays_locked():
    """The stand-in's ``time_boot_ms`` wraps 3 s in (TIMESYNC's clock goes on past 2^32 ms):
    one epoch throughout, locked, every pose placed at its true host time, boot times
    unwrapped past 2^32 ms."""
    wire = Wire(streams=PAIR, boot_at_start_ms=WRAP_MS - 3_000.0)
    wire.run(2.0)
    assert wire.session.locked
    epoch = wire.session.estimator.epoch
    before = len(wire.poses)
    statuses = _locked_throughout(wire, 6.0)
    poses = wire.poses[before:]
    after_wrap = [p for p in poses if p.sim_time_ns >= WRAP_MS * MS]
    assert len(after_wrap) >= 100  # 4 s of 50 Hz pairs past the wrap
    assert wire.session.counts["reboots"] == 0 and wire.session.estimator.epoch == epoch
    assert set(statuses) == {ClockStatus.LOCKED}
    assert {p.epoch for p in poses} == {epoch}
    assert _placed_right(wire, poses) < 0.2
    assert wire.source.counts["unpaired"] == 0


def test_a_reboot_after_the_wrap_is_still_a_reboot():
    """Up 2^32 ms + 60 s (wrapped once), then a reboot to 1.5 s: a new epoch, locked again,
    the new poses placed right."""
    wire = Wire(streams=PAIR, boot_at_start_ms=WRAP_MS + 60_000.0)
    wire.run(2.0)
    assert wire.session.locked
    epoch = wire.session.estimator.epoch
    wire.autopilot.reboot(boot_at_start_ms=1_500.0)
    wire.run(2.0)
    assert wire.session.estimator.epoch > epoch and wire.session.locked
    new = [p for p in wire.poses if p.epoch > epoch and p.host_ns >= wire.clock.now_ns() - S]
    assert len(new) >= 25 and _placed_right(wire, new) < 0.2


def test_a_sample_stamped_setpoint_in_mavlink_1_is_not_a_reboot_either():
    """The same sample-stamped setpoint as MAVLink 1 (no extensions): still not a reboot."""
    wire = Wire(streams=PAIR)
    wire.run(2.0)
    epoch = wire.session.estimator.epoch
    mav = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
    for k in range(40):
        boot_ms = wire.autopilot.boot_ns(wire.clock.now_ns()) // MS - 150
        msg = mav.position_target_local_ned_encode(boot_ms, 1, 0, *([0.0] * 11))
        wire.inject(msg.pack(mav, force_mavlink1=True))
        wire.run(0.05)
        assert wire.session.estimator.status is ClockStatus.LOCKED, k
    assert wire.session.estimator.epoch == epoch
