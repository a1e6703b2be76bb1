"""VISION_RESULT v1 codec: the spec's example, round trips, every error path, bit errors."""

import itertools
import random

import crcmod.predefined
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gizmo_host import EncodeError, FrameError, StreamParser, VisionResult, crc16
from gizmo_host.errors import (
    BadPayloadLength,
    BadSync,
    CrcMismatch,
    FrameLengthError,
    TruncatedFrame,
    UnknownMessageType,
    UnsupportedVersion,
)
from gizmo_host.wire.protocol import FIELDS, FRAME, FRAME_LEN
from tests.support.strategies import vision_results

SPEC_EXAMPLE = bytes.fromhex(
    "A5 47 01 60 00 2A 00 18 00 01 01 2A 00 E8 03 00 00 57 05 0C 00 83 FF 36 00 9A 01 68 01 01 "
    "00 00 00 9C D9"
)
crc_oracle = crcmod.predefined.mkPredefinedCrcFun("crc-ccitt-false")


def test_crc_matches_the_standard_check_value_and_the_spec_example():
    assert crc16(b"123456789") == 0x29B1
    assert crc16(SPEC_EXAMPLE[2:33]) == 0xD99C


@given(st.binary(max_size=300))
def test_crc_agrees_with_crcmod_oracle(data):
    assert crc16(data) == crc_oracle(data)


def test_spec_example_frame_decodes_to_the_documented_values():
    result = VisionResult.decode(SPEC_EXAMPLE)
    assert (result.source_id, result.result_type, result.sequence) == (1, 1, 42)
    assert (result.result_sequence, result.timestamp_ms, result.confidence) == (42, 1000, 87)
    assert (result.x, result.y, result.w, result.h, result.id, result.age_ms) == (
        -125,
        54,
        410,
        360,
        1,
        12,
    )
    assert result.tracked and not result.lost and result.relative
    assert result.encode() == SPEC_EXAMPLE


def test_layout_is_35_packed_little_endian_bytes_with_documented_offsets():
    assert FRAME.format.startswith("<") and FRAME.size == FRAME_LEN == 35
    offsets = {f.name: f.offset for f in FIELDS}
    assert offsets["sequence"] == 5 and offsets["payload_len"] == 7
    assert offsets["source_id"] == 9 and offsets["timestamp_ms"] == 13 and offsets["x"] == 21
    assert offsets["aux"] == 31 and offsets["crc"] == 33


@given(vision_results)
def test_every_field_round_trips_over_its_full_range(result):
    frame = result.encode()
    assert len(frame) == 35 and frame[:2] == b"\xa5\x47"
    assert VisionResult.decode(frame) == result
    assert crc_oracle(frame[2:33]) == int.from_bytes(frame[33:], "little")


@given(vision_results)
def test_flags_decode_bits_0_1_2(result):
    assert result.tracked == bool(result.flags & 1)
    assert result.lost == bool(result.flags & 2)
    assert result.relative == bool(result.flags & 4)


def _with(frame: bytes, offset: int, value: bytes) -> bytes:
    return frame[:offset] + value + frame[offset + len(value) :]


@pytest.mark.parametrize(
    ("frame", "error", "words"),
    [
        (SPEC_EXAMPLE[:34], TruncatedFrame, ["expected 35", "got 34"]),
        (b"", TruncatedFrame, ["got 0"]),
        (SPEC_EXAMPLE + b"\x00", FrameLengthError, ["expected 35", "got 36"]),
        (_with(SPEC_EXAMPLE, 0, b"\xa4"), BadSync, ["sync", "a5 47", "a4 47"]),
        (_with(SPEC_EXAMPLE, 2, b"\x02"), UnsupportedVersion, ["version", "expected 1", "got 2"]),
        (_with(SPEC_EXAMPLE, 3, b"\x61"), UnknownMessageType, ["msg_type", "0x60", "0x61"]),
        (_with(SPEC_EXAMPLE, 7, b"\x19\x00"), BadPayloadLength, ["payload_len", "24", "25"]),
        (_with(SPEC_EXAMPLE, 33, b"\x9c\xd8"), CrcMismatch, ["crc", "0xd99c", "0xd89c"]),
    ],
)
def test_decode_names_what_is_wrong(frame, error, words):
    with pytest.raises(error) as info:
        VisionResult.decode(frame)
    assert isinstance(info.value, FrameError)
    for word in words:
        assert word in str(info.value)


def test_crc_mismatch_carries_both_values():
    with pytest.raises(CrcMismatch) as info:
        VisionResult.decode(_with(SPEC_EXAMPLE, 33, b"\x00\x00"))
    assert (info.value.expected, info.value.received) == (0xD99C, 0)


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("sequence", 65536, "0..65535"),
        ("x", -32769, "-32768..32767"),
        ("timestamp_ms", -1, "0..4294967295"),
        ("confidence", 256, "0..255"),
        ("id", 1.5, "-32768"),
    ],
)
def test_encode_names_the_out_of_range_field(field, value, expected):
    with pytest.raises(EncodeError) as info:
        VisionResult(**{field: value}).encode()
    assert field in str(info.value) and expected in str(info.value)


def test_encode_names_the_right_field_when_others_are_numpy_integers():
    import numpy as np

    with pytest.raises(EncodeError, match=r"^confidence"):
        VisionResult(sequence=np.uint16(7), x=np.int16(-3), confidence=300).encode()


BITS = FRAME_LEN * 8


def _flip(frame: bytes, *bits: int) -> bytes:
    out = bytearray(frame)
    for bit in bits:
        out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


def _assert_rejected(frame: bytes) -> None:
    with pytest.raises(FrameError):
        VisionResult.decode(frame)


def test_every_single_bit_error_is_rejected_by_decode_and_by_the_stream_parser():
    for bit in range(BITS):
        bad = _flip(SPEC_EXAMPLE, bit)
        _assert_rejected(bad)
        assert StreamParser().feed(bad) == []


def test_every_two_bit_error_is_rejected():
    for pair in itertools.combinations(range(BITS), 2):
        _assert_rejected(_flip(SPEC_EXAMPLE, *pair))


def test_sampled_three_bit_errors_are_rejected():
    rng = random.Random(3)
    frames = [SPEC_EXAMPLE, VisionResult(sequence=65535, x=-32768, timestamp_ms=2**32 - 1).encode()]
    for _ in range(20000):
        _assert_rejected(_flip(rng.choice(frames), *rng.sample(range(BITS), 3)))


def test_the_declared_fields_are_the_wire_table_in_order():
    """``VisionResult`` declares its fields for type checkers; ``FIELDS`` drives the struct.
    They must be the same names in the same order, every one an int."""
    import typing

    from gizmo_host.wire.protocol import VALUE_FIELDS

    assert VisionResult._fields == tuple(f.name for f in VALUE_FIELDS)
    hints = typing.get_type_hints(VisionResult)
    assert all(hints[f.name] is int for f in VALUE_FIELDS)
    default = VisionResult()
    assert (default.version, default.msg_type, default.payload_len, default.source_id) == (
        1,
        0x60,
        24,
        1,
    )
