"""Coordinate-frame conversions checked against rotation matrices, and local odometry epochs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfly_link import coordinates
from rfly_link import messages as m
from rfly_link.errors import DropCause, UnsupportedFrame

finite = st.floats(-1e3, 1e3, allow_nan=False)
vectors = st.tuples(finite, finite, finite)
quats = st.tuples(*[st.floats(-1, 1)] * 4).filter(lambda q: np.linalg.norm(q) > 0.1)

# Axis maps as matrices: world NED -> NWU / ENU, body FRD -> FLU.
R_NWU_NED = np.diag([1.0, -1.0, -1.0])
R_ENU_NED = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
R_FLU_FRD = np.diag([1.0, -1.0, -1.0])


def unit(q: tuple[float, ...]) -> np.ndarray:
    a = np.asarray(q, dtype=float)
    return a / np.linalg.norm(a)


def test_known_values() -> None:
    assert coordinates.ned_to_nwu([1, 2, 3]).tolist() == [1, -2, -3]
    assert coordinates.ned_to_enu([1, 2, 3]).tolist() == [2, 1, -3]
    assert coordinates.nwu_to_enu([1, 2, 3]).tolist() == [-2, 1, 3]
    assert coordinates.frd_to_flu([0.1, 0.2, 0.3]).tolist() == [0.1, -0.2, -0.3]
    # Facing east in NED (yaw +90°) faces east in ENU too: yaw 0 about +z up.
    yaw90 = np.array([np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)])
    np.testing.assert_allclose(coordinates.quat_ned_frd_to_enu_flu(yaw90), [1, 0, 0, 0], atol=1e-12)
    # ... and yaw -90° (pointing west = +y) in NWU.
    np.testing.assert_allclose(
        coordinates.quat_to_matrix(coordinates.quat_ned_frd_to_nwu_flu(yaw90)) @ [1, 0, 0],
        [0, -1, 0],
        atol=1e-12,
    )


@settings(max_examples=100, deadline=None)
@given(vectors)
def test_vector_maps_match_matrices_and_invert(v: tuple[float, float, float]) -> None:
    np.testing.assert_allclose(coordinates.ned_to_nwu(v), R_NWU_NED @ v)
    np.testing.assert_allclose(coordinates.ned_to_enu(v), R_ENU_NED @ v)
    np.testing.assert_allclose(coordinates.enu_to_ned(coordinates.ned_to_enu(v)), v)
    np.testing.assert_allclose(coordinates.enu_to_nwu(coordinates.nwu_to_enu(v)), v)
    np.testing.assert_allclose(
        coordinates.nwu_to_enu(coordinates.ned_to_nwu(v)), coordinates.ned_to_enu(v)
    )
    np.testing.assert_allclose(coordinates.flu_to_frd(coordinates.frd_to_flu(v)), v)


@settings(max_examples=100, deadline=None)
@given(quats)
def test_attitude_maps_are_the_matrix_conjugation(q: tuple[float, ...]) -> None:
    r = coordinates.quat_to_matrix(unit(q))
    nwu = coordinates.quat_to_matrix(coordinates.quat_ned_frd_to_nwu_flu(unit(q)))
    np.testing.assert_allclose(nwu, R_NWU_NED @ r @ R_FLU_FRD.T, atol=1e-9)
    enu = coordinates.quat_to_matrix(coordinates.quat_ned_frd_to_enu_flu(unit(q)))
    np.testing.assert_allclose(enu, R_ENU_NED @ r @ R_FLU_FRD.T, atol=1e-9)
    back = coordinates.quat_enu_flu_to_ned_frd(coordinates.quat_ned_frd_to_enu_flu(unit(q)))
    np.testing.assert_allclose(coordinates.quat_to_matrix(back), r, atol=1e-9)


def odom(cid: int, pos: tuple[float, float, float], flags: int = 0b1111) -> m.OdomReply:
    return m.OdomReply(
        copter_id=cid,
        frame_type=1,
        flags=flags,
        position_ned_m=pos,
        quaternion_wxyz=(1.0, 0.0, 0.0, 0.0),
        velocity_ned_m_s=(1.0, 2.0, 3.0),
        angular_velocity_frd_rad_s=(0.5, 0.25, 0.125),
    )


def test_odometry_conversion_names_its_frame() -> None:
    out = coordinates.odometry_in(odom(1, (1.0, 2.0, -3.0)), coordinates.WorldFrame.ENU)
    assert out.frame == "ENU/FLU"
    assert out.position_m.tolist() == [2.0, 1.0, 3.0]
    assert out.linear_velocity_m_s.tolist() == [2.0, 1.0, -3.0]
    assert out.angular_velocity_rad_s.tolist() == [0.5, -0.25, -0.125]
    assert out.to_dict()["frame"] == "ENU/FLU"


def test_imu_uses_the_same_mapping_for_acceleration_and_rate() -> None:
    acc, rate = coordinates.imu_flu(m.ImuReply(acceleration_frd_m_s2=(1.0, 2.0, -9.75)))
    assert acc.tolist() == [1.0, -2.0, 9.75]  # not the SDK's [-a0, a1, -a2]
    assert rate.tolist() == [0.0, -0.0, -0.0]


def test_local_origin_and_discontinuity_epochs() -> None:
    local = coordinates.LocalOdometry()
    assert local.update(odom(1, (5.0, 5.0, -1.0), flags=0)) is None  # invalid: no origin yet
    first = local.update(odom(1, (10.0, 20.0, -5.0)))
    assert first is not None and first.epoch == 0 and first.position_m.tolist() == [0, 0, 0]
    moved = local.update(odom(1, (11.0, 20.0, -6.0)), coordinates.WorldFrame.NWU)
    assert moved.position_m.tolist() == [1.0, -0.0, 1.0] and moved.frame == "NWU/FLU"
    assert local.update(odom(1, (500.0, 0.0, 0.0), flags=0b101111)) is None
    restarted = local.update(odom(1, (500.0, 0.0, 0.0)))
    assert restarted.epoch == 1 and restarted.position_m.tolist() == [0, 0, 0]
    other = local.update(odom(2, (1.0, 1.0, 1.0)))
    assert other.epoch == 0 and local.epoch(1) == 1
    assert (local.dropped_invalid, local.dropped_discontinuity) == (1, 1)


def test_local_table_is_bounded() -> None:
    local = coordinates.LocalOdometry(max_vehicles=2)
    assert local.update(odom(1, (0, 0, 0))) is not None
    assert local.update(odom(2, (0, 0, 0))) is not None
    assert local.update(odom(3, (0, 0, 0))) is None
    assert local.dropped_table_full == 1


@pytest.mark.parametrize("frame_type", [0, 2, 3, 65535])
def test_odometry_in_another_frame_type_is_rejected_or_counted(frame_type: int) -> None:
    sample = dataclasses.replace(odom(1, (1.0, 2.0, 3.0)), frame_type=frame_type)
    with pytest.raises(UnsupportedFrame, match=f"frame_type: expected 1 .*got {frame_type}") as e:
        coordinates.odometry_in(sample, coordinates.WorldFrame.NWU)
    assert e.value.cause is DropCause.UNSUPPORTED_FRAME
    local = coordinates.LocalOdometry()
    assert local.update(sample) is None and local.dropped_frame_type == 1
    assert local.epoch(1) is None  # no origin was set from a sample of unknown axes


@pytest.mark.parametrize("flags", range(16))
def test_invalid_fields_are_none_by_validity_bits(flags: int) -> None:
    out = coordinates.odometry_in(odom(1, (1.0, 2.0, 3.0), flags=flags), coordinates.WorldFrame.NWU)
    fields = (
        out.position_m,
        out.quaternion_wxyz,
        out.linear_velocity_m_s,
        out.angular_velocity_rad_s,
    )
    assert [f is not None for f in fields] == [bool(flags & (1 << bit)) for bit in range(4)]
    as_dict = out.to_dict()
    keys = ("position_m", "quaternion_wxyz", "linear_velocity_m_s", "angular_velocity_rad_s")
    assert [as_dict[k] is not None for k in keys] == [f is not None for f in fields]
    if flags & 0b1100 == 0b1100:
        assert out.linear_velocity_m_s.tolist() == [1.0, -2.0, -3.0]
        assert out.angular_velocity_rad_s.tolist() == [0.5, -0.25, -0.125]


def test_local_odometry_keeps_pose_but_hides_invalid_rates() -> None:
    local = coordinates.LocalOdometry()
    out = local.update(odom(1, (1.0, 2.0, 3.0), flags=0b0011))  # pose valid, rates not
    assert out is not None and out.position_m.tolist() == [0, 0, 0]
    assert out.linear_velocity_m_s is None and out.angular_velocity_rad_s is None


@pytest.mark.parametrize("q", [(0.0, 0.0, 0.0, 0.0), (2.0, 0.0, 0.0, 0.0), (float("nan"),) * 4])
def test_a_non_unit_quaternion_is_no_attitude_even_when_flagged(q) -> None:
    import dataclasses

    reply = dataclasses.replace(odom(1, (1.0, 2.0, 3.0)), quaternion_wxyz=q)
    out = coordinates.odometry_in(reply, coordinates.WorldFrame.ENU)
    assert out.quaternion_wxyz is None and out.position_m is not None
