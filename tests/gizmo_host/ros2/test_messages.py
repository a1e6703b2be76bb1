"""ROS 2 messages from a world snapshot: CDR bytes pinned, decoded back by rosbags, frames
converted once (NED/FRD -> ENU/FLU), and rmw_zenoh's (Jazzy) keys and attachment."""

from __future__ import annotations

import dataclasses
import math
import struct

import numpy as np
import pytest
import zenoh
import zenoh.ext
from hypothesis import given
from hypothesis import strategies as st

from fusion import WorldSnapshot
from fusion.tracking import TrackStatus
from gizmo_host.ros2 import keys
from gizmo_host.ros2.frames import enu_flu_from_ned_frd, enu_from_ned, line_of_sight
from gizmo_host.ros2.messages import DETECTIONS, POSE, TRACKS, MessageBuilder, Ros2Messages
from gizmo_host.ros2.publication import Ros2Publication
from tests.support.ros2_snapshot import (
    CAPTURE_NS,
    HOST_NS,
    POSE_NS,
    WALL_NS,
    snapshot,
    vision_store,
)

# Pinned: one Detection3DArray (the PROCEED target only) for tests/support/ros2_snapshot.py.
DETECTIONS_HEX = (
    "0001000000a5186a15cd5b07040000006d6170000100000000a5186a1573f904040000006d61700001000000"
    "0b0000005045444553545249414e0000d7a3703d0ad7eb3f0000000000003c40000000000000304000000000"
    "00000000000000000000000000000000000000000f494862133dd43f966d6c139d5bee3f0000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000003c400000000000003040000000000000000000000000"
    "0000000000000000000000000f494862133dd43f966d6c139d5bee3f00000000000000000000000000000000"
    "000000000000000007000000303a353a313100"
)
# The published hashes (the PoseStamped one is ROS 2 Jazzy's, as rmw_zenoh keys show it).
DETECTIONS_HASH = "RIHS01_793f5eab9595ac1c0da07873cc859db42eae51f0ee76056db8562515d830e018"
POSE_HASH = "RIHS01_10f3786d7d40fd2b54367835614bff85d4ad3b5dab62bf8bca0cc232d73b4cd8"
C, S = math.cos(math.pi / 8), math.sin(math.pi / 8)


def test_pose_stamped_is_the_cdr_layout_written_out_by_hand() -> None:
    """76 bytes: encapsulation (CDR LE), stamp, "map", position ENU, orientation FLU in ENU."""
    payload = MessageBuilder().pose_cdr(snapshot())
    sec, nanosec = divmod(POSE_NS + WALL_NS - HOST_NS, 1_000_000_000)
    # NED (10, 20, -30) is ENU (20, 10, 30); nose north-east (FRD yaw 45° in NED) is FLU yaw
    # 45° in ENU (from east towards north): (x, y, z, w) = (0, 0, sin 22.5°, cos 22.5°).
    expected = b"\x00\x01\x00\x00" + struct.pack(
        "<iII4s3d4d", sec, nanosec, 4, b"map\x00", 20.0, 10.0, 30.0, 0.0, 0.0, S, C
    )
    assert payload is not None and len(payload) == 76
    assert payload[:44] == expected[:44]
    got = struct.unpack("<4d", payload[44:])
    assert got == pytest.approx(struct.unpack("<4d", expected[44:]), abs=1e-12)


def test_detection3d_array_matches_its_golden_bytes_and_decodes_with_rosbags() -> None:
    payload = MessageBuilder().detections_cdr(snapshot())
    assert payload.hex() == DETECTIONS_HEX
    message = vision_store().deserialize_cdr(payload, DETECTIONS)
    assert (message.header.stamp.sec, message.header.stamp.nanosec) == divmod(WALL_NS, 10**9)
    assert message.header.frame_id == "map"
    (detection,) = message.detections  # the HOLD target is left out
    assert detection.id == "0:5:11"
    stamp = detection.header.stamp.sec * 10**9 + detection.header.stamp.nanosec
    assert stamp == WALL_NS - (HOST_NS - CAPTURE_NS)  # the capture time on the wall clock
    (result,) = detection.results
    assert result.hypothesis.class_id == "PEDESTRIAN" and result.hypothesis.score == 0.87
    position = result.pose.pose.position
    assert (position.x, position.y, position.z) == (28.0, 16.0, 0.0)  # NED (16, 28, 0)
    # Bearing NED (0.6, 0.8, 0) is ENU (0.8, 0.6, 0): yaw atan2(0.6, 0.8) about z.
    half = math.atan2(0.6, 0.8) / 2
    q = result.pose.pose.orientation
    assert (q.x, q.y, q.z, q.w) == pytest.approx((0.0, 0.0, math.sin(half), math.cos(half)))


def tracked_snapshot() -> WorldSnapshot:
    """The fixture's PROCEED target as a confirmed track: velocity NED (1, 2, 0), a
    covariance with n-e and n-d correlations, written out here."""
    cov = np.diag([0.04, 0.09, 0.01, 0.25, 0.36, 0.0001])
    cov[0, 1] = cov[1, 0] = 0.02
    cov[0, 2] = cov[2, 0] = 0.005
    base = snapshot()
    target = dataclasses.replace(
        base.targets[0], velocity_ned_m_s=(1.0, 2.0, 0.0), covariance_ned=tuple(cov.ravel()),
        track_id=9, track_state=TrackStatus.CONFIRMED,
    )  # fmt: skip
    return dataclasses.replace(base, targets=(target, base.targets[1]))


def test_a_track_carries_its_covariance_in_enu_and_its_velocity_beside_it() -> None:
    builder = MessageBuilder()
    messages = builder.build(tracked_snapshot())
    assert messages.detections is not None and len(messages.tracks) == 1
    store = vision_store()
    (detection,) = store.deserialize_cdr(messages.detections, DETECTIONS).detections
    assert detection.id == "0:5:11/9"
    covariance = detection.results[0].pose.covariance.reshape(6, 6)
    # ENU (x, y, z) = NED (e, n, -d): var e, var n, var d; cov(e, n) = cov(n, e); cov(x, z) =
    # cov(e, -d) = 0; cov(y, z) = cov(n, -d) = -0.005.
    assert covariance[:3, :3].tolist() == [
        [0.09, 0.02, 0.0], [0.02, 0.04, -0.005], [0.0, -0.005, 0.01]
    ]  # fmt: skip
    assert covariance[3:, 3:].tolist() == np.diag([1e6] * 3).tolist()
    assert not covariance[:3, 3:].any()
    odometry = store.deserialize_cdr(messages.tracks[0], TRACKS)
    assert odometry.header.frame_id == "map" and odometry.child_frame_id == "0:5:11/9"
    assert odometry.header.stamp == detection.header.stamp  # the capture, on the wall clock
    v = odometry.twist.twist.linear
    assert (v.x, v.y, v.z) == (2.0, 1.0, 0.0)  # NED (1, 2, 0)
    twist_cov = odometry.twist.covariance.reshape(6, 6)
    assert np.diag(twist_cov).tolist() == [0.36, 0.25, 0.0001, 1e6, 1e6, 1e6]
    assert odometry.pose.covariance.tolist() == detection.results[0].pose.covariance.tolist()
    publication = Ros2Publication("bridge", "uav1", builder=builder)
    samples = publication.samples(tracked_snapshot(), WALL_NS)
    assert [s.key for s in samples] == [
        "gizmo/uav1/detections", "gizmo/uav1/pose", "gizmo/uav1/tracks"
    ]  # fmt: skip


def test_rosbags_hashes_are_the_published_ones() -> None:
    builder = MessageBuilder()
    assert builder.hash_rihs01(DETECTIONS) == DETECTIONS_HASH
    assert builder.hash_rihs01(POSE) == POSE_HASH


def test_no_wall_clock_no_message_and_no_vehicle_no_pose() -> None:
    builder = MessageBuilder()
    assert builder.build(snapshot(wall_ns=None)) == Ros2Messages(None, None)
    alone = dataclasses.replace(snapshot(), vehicle=None)
    assert builder.build(alone).pose is None and builder.build(alone).detections is not None
    publication = Ros2Publication("bridge", "uav1", builder=builder)
    assert publication.samples(snapshot(wall_ns=None), 0) == []
    assert publication.skipped == 1


def test_frames_convert_axes_and_attitudes() -> None:
    assert enu_from_ned((1.0, 2.0, 3.0)) == (2.0, 1.0, -3.0)
    # Level, nose north: FLU's x is ENU's y, a yaw of +90°.
    w, x, y, z = enu_flu_from_ned_frd((1.0, 0.0, 0.0, 0.0))
    assert (w, x, y, z) == pytest.approx((math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)))
    # Nose east, pitched up 10° (NED: pitch +10°): in ENU yaw 0, pitch -10° (REP 103: nose up
    # is a negative rotation about FLU's y... about ENU y with x east, z up: up is -pitch).
    p = math.radians(10) / 2
    ned = (math.cos(math.pi / 4) * math.cos(p), -math.sin(math.pi / 4) * math.sin(p),
           math.cos(math.pi / 4) * math.sin(p), math.sin(math.pi / 4) * math.cos(p))  # fmt: skip
    w, x, y, z = enu_flu_from_ned_frd(ned)
    assert (w, x, y, z) == pytest.approx((math.cos(p), 0.0, -math.sin(p), 0.0), abs=1e-12)
    # A line of sight straight down.
    w, x, y, z = line_of_sight((0.0, 0.0, -1.0))
    assert (w, x, y, z) == pytest.approx((math.sqrt(0.5), 0.0, math.sqrt(0.5), 0.0))


def test_key_expressions_of_both_styles() -> None:
    topic = keys.topic("uav1", "detections")
    assert topic == "/gizmo/uav1/detections"
    assert keys.key_expr("bridge", topic, DETECTIONS, DETECTIONS_HASH, 0) == "gizmo/uav1/detections"
    assert keys.key_expr("rmw_zenoh", topic, DETECTIONS, DETECTIONS_HASH, 7) == (
        "7/gizmo/uav1/detections/vision_msgs::msg::dds_::Detection3DArray_/" + DETECTIONS_HASH
    )
    with pytest.raises(ValueError, match="style"):
        keys.key_expr("dds", topic, DETECTIONS, DETECTIONS_HASH, 0)


# rmw_zenoh (Jazzy): int64 sequence number, int64 source timestamp, then the gid as zenoh-cpp
# writes a std::array<uint8_t, 16>: its length as LEB128 (0x10), then the 16 bytes.
ATTACHMENT_GOLDEN = bytes.fromhex(
    "050000000000000015cd5b07a5186a1810000102030405060708090a0b0c0d0e0f"
)


def test_rmw_zenoh_attachment_matches_the_golden_vector_and_zenoh_ext() -> None:
    gid = bytes(range(16))
    data = keys.attachment(5, 0x186A18A5075BCD15, gid)
    assert data == ATTACHMENT_GOLDEN and len(data) == 33
    serialized = zenoh.ext.z_serialize(
        (zenoh.ext.Int64(5), zenoh.ext.Int64(0x186A18A5075BCD15), gid)
    )
    assert serialized.to_bytes() == ATTACHMENT_GOLDEN
    assert keys.parse_attachment(ATTACHMENT_GOLDEN) == (5, 0x186A18A5075BCD15, gid)


@given(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**63), 2**63 - 1),
    st.binary(min_size=16, max_size=16),
)
def test_attachment_round_trips_through_zenoh_ext(seq: int, stamp: int, gid: bytes) -> None:
    data = keys.attachment(seq, stamp, gid)
    ext = zenoh.ext
    as_ints = ext.z_deserialize(tuple[ext.Int64, ext.Int64, list[ext.UInt8]], zenoh.ZBytes(data))
    assert as_ints == (seq, stamp, list(gid))  # the gid is a sequence of 16 bytes


@pytest.mark.parametrize("data", [b"", bytes(32), bytes(34), bytes(16) + b"\x0f" + bytes(16)])
def test_an_attachment_of_another_format_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match="attachment"):
        keys.parse_attachment(data)


def test_rmw_zenoh_samples_count_their_own_sequence_and_carry_the_wall_time() -> None:
    publication = Ros2Publication("rmw_zenoh", "uav1", domain=3, session_id="abc")
    first = publication.samples(snapshot(), 111)
    second = publication.samples(snapshot(), 222)
    assert [s.key.split("/")[:4] for s in first] == [
        ["3", "gizmo", "uav1", "detections"], ["3", "gizmo", "uav1", "pose"]
    ]  # fmt: skip
    for before, after, stamp in zip(first, second, (222,) * 2, strict=True):
        seq, wall, gid = keys.parse_attachment(after.attachment or b"")
        assert (seq, wall) == (keys.parse_attachment(before.attachment or b"")[0] + 1, stamp)
        assert gid == keys.parse_attachment(before.attachment or b"")[2]
    assert first[0].key.endswith(DETECTIONS_HASH) and first[1].key.endswith(POSE_HASH)


def test_bridge_samples_are_the_topic_without_its_slash_and_raw_cdr() -> None:
    publication = Ros2Publication("bridge", "uav1")
    detections, pose = publication.samples(snapshot(), 0)
    assert (detections.key, pose.key) == ("gizmo/uav1/detections", "gizmo/uav1/pose")
    assert detections.attachment is None and pose.attachment is None
    assert detections.payload.hex() == DETECTIONS_HEX
