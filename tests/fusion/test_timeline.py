"""Pose history: bracket edges, gaps, epochs, bounds, extrapolation."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion import geometry as g
from fusion.timeline import Added, PoseHistory, Where
from tests.support.fusion_inputs import MS, pose, yaw_quat


def history(times_ms, *, yaw_rate_deg_s=90.0, speed_m_s=2.0, **kw):
    h = PoseHistory(**kw)
    for t in times_ms:
        h.add(
            pose(
                t * MS,
                position=(speed_m_s * t / 1000, 0.0, -10.0),
                q=yaw_quat(yaw_rate_deg_s * t / 1000),
                velocity=(speed_m_s, 0.0, 0.0),
            )
        )
    return h


def yaw_deg(q):
    return math.degrees(g.quat_to_euler_zyx(q)[2])


def test_exactly_on_a_pose_returns_that_pose():
    h = history([0, 10, 20])
    for t in (0, 10, 20):
        at = h.interpolate(t * MS)
        assert at.position_ned_m == pytest.approx((0.002 * t, 0.0, -10.0))
        assert yaw_deg(at.quaternion_wxyz) == pytest.approx(0.09 * t)
        assert at.extrapolated_ns == 0
        assert h.where(t * MS) is Where.INSIDE


def test_edges_of_the_bracket():
    """One nanosecond inside either edge is inside; one outside the history is not."""
    h = history([0, 10, 20])
    assert h.where(-1) is Where.BEFORE
    assert h.where(20 * MS + 1) is Where.NEWER
    assert h.interpolate(20 * MS + 1) is None
    assert h.interpolate(-1) is None
    assert yaw_deg(h.interpolate(1).quaternion_wxyz) == pytest.approx(0.0, abs=1e-6)
    assert yaw_deg(h.interpolate(20 * MS - 1).quaternion_wxyz) == pytest.approx(1.8, abs=1e-6)


@given(st.integers(0, 20 * MS))
def test_interpolation_is_linear_in_position_and_slerp_in_attitude(t_ns):
    h = history([0, 10, 20])
    at = h.interpolate(t_ns)
    assert at.position_ned_m[0] == pytest.approx(2.0 * t_ns / 1e9, abs=1e-12)
    assert yaw_deg(at.quaternion_wxyz) == pytest.approx(90.0 * t_ns / 1e9, abs=1e-9)
    assert at.velocity_ned_m_s == pytest.approx((2.0, 0.0, 0.0))


def test_a_gap_wider_than_max_gap_brackets_nothing():
    h = history([0, 10, 200, 210], max_gap_ms=50.0)
    assert h.where(100 * MS) is Where.GAP
    assert h.interpolate(100 * MS) is None
    assert h.where(200 * MS) is Where.INSIDE  # on a pose at the gap's edge
    assert h.where(205 * MS) is Where.INSIDE


def test_a_new_epoch_clears_the_history_and_an_older_epoch_is_dropped():
    h = history([0, 10, 20])
    assert h.add(pose(30 * MS, epoch=1)) is Added.NEW_EPOCH
    assert len(h) == 1 and h.epoch == 1
    assert h.where(15 * MS) is Where.BEFORE
    assert h.add(pose(40 * MS, epoch=0)) is Added.OLD_EPOCH
    assert len(h) == 1


def test_out_of_order_poses_are_put_in_place_and_duplicates_dropped():
    h = history([0, 20])
    assert h.add(pose(10 * MS, position=(5.0, 0.0, 0.0))) is Added.INSERTED
    assert h.interpolate(10 * MS).position_ned_m == (5.0, 0.0, 0.0)
    assert h.add(pose(10 * MS, position=(5.0, 0.0, 0.0))) is Added.DUPLICATE
    assert h.add(pose(10 * MS)) is Added.CONFLICT  # another pose for a held instant
    assert len(h) == 3


def test_the_history_is_bounded():
    h = history(range(0, 1000, 10), max_samples=16)
    assert len(h) == 16
    assert h.oldest.host_ns == 840 * MS and h.newest.host_ns == 990 * MS


def test_extrapolation_uses_velocity_and_the_imu_rate():
    h = history([0, 10])
    at = h.extrapolate(15 * MS, (0.0, 0.0, math.radians(90.0)))
    assert at.extrapolated_ns == 5 * MS
    assert at.position_ned_m[0] == pytest.approx(0.03)
    assert yaw_deg(at.quaternion_wxyz) == pytest.approx(1.35)


def test_extrapolation_without_imu_continues_the_last_two_poses():
    h = history([0, 10], speed_m_s=2.0)
    h2 = PoseHistory()
    for p in (h.oldest, h.newest):
        h2.add(pose(p.host_ns, position=p.position_ned_m, q=p.quaternion_wxyz, velocity=None))
    at = h2.extrapolate(15 * MS)
    assert at.position_ned_m[0] == pytest.approx(0.03)
    assert yaw_deg(at.quaternion_wxyz) == pytest.approx(1.35)
    assert at.velocity_ned_m_s == pytest.approx((2.0, 0.0, 0.0))


def test_motion_is_the_velocity_and_rate_between_the_poses_around_a_time():
    """The pose's rates at a capture (what an error in the capture time costs): a vehicle
    turning about a fixed NED axis at a constant rate while it flies a straight line."""
    rate_ned = (0.3, -0.2, 1.0)  # rad/s about north, east, down
    velocity = (2.0, -1.0, 0.5)
    start = g.quat_from_euler_zyx(0.1, -0.2, 0.4)
    h = PoseHistory(max_gap_ms=50.0)
    for t_ms in (0, 20, 40, 60, 200):
        t = t_ms / 1000
        turn = g.quat_from_rotvec(g.scale(rate_ned, t))
        position = (velocity[0] * t, velocity[1] * t, -10.0 + velocity[2] * t)
        h.add(pose(t_ms * MS, position=position, q=g.quat_multiply(turn, start), velocity=None))
    for t_ms in (-5, 0, 7, 20, 33, 60):  # before, on and between poses
        motion = h.motion(t_ms * MS)
        assert motion is not None
        assert motion.velocity_ned_m_s == pytest.approx(velocity, abs=1e-9)
        assert motion.angular_rate_ned_rad_s == pytest.approx(rate_ned, abs=1e-9)
    assert h.motion(100 * MS) is None  # 60 -> 200 ms is a gap: nothing to difference
    assert PoseHistory().motion(0) is None
    # Past the newest, the IMU's body rate (FRD) when there is one, in NED axes.
    h.clear()
    h.add(pose(0, q=start))
    h.add(pose(20 * MS, q=start))
    body_rate = (0.5, 0.0, -0.25)
    motion = h.motion(30 * MS, body_rate)
    assert motion is not None
    assert motion.angular_rate_ned_rad_s == pytest.approx(g.quat_rotate(start, body_rate))
    assert h.motion(10 * MS, body_rate).angular_rate_ned_rad_s == pytest.approx((0, 0, 0))
