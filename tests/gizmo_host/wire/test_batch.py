"""decode_capture (numpy) agrees with StreamParser frame for frame."""

import random

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gizmo_host import FRAME_DTYPE, StreamParser, VisionResult, crc16, decode_capture
from gizmo_host.wire.batch import to_results
from tests.support.strategies import garbage, vision_results


def stream_parse(data: bytes) -> list[VisionResult]:
    return StreamParser().feed(data)


@given(st.lists(st.tuples(garbage, vision_results), max_size=15), garbage)
def test_batch_matches_stream_on_noisy_streams(pairs, tail):
    stream = b"".join(g + r.encode() for g, r in pairs) + tail
    frames, offsets = decode_capture(stream, with_offsets=True)
    assert frames.dtype == FRAME_DTYPE and frames.shape == (len(offsets),)
    assert to_results(frames) == stream_parse(stream)
    for frame, offset in zip(frames, offsets, strict=True):
        assert stream[offset : offset + 35] == frame.tobytes()


@given(vision_results)
def test_vectorised_crc_accepts_every_valid_frame(result):
    frames = decode_capture(result.encode())
    assert to_results(frames) == [result]
    assert int(frames["crc"][0]) == crc16(result.encode()[2:33])


def test_batch_matches_stream_with_5_percent_corruption():
    rng = random.Random(5)
    chunks = []
    for n in range(3000):
        frame = bytearray(
            VisionResult(
                sequence=n & 0xFFFF, x=rng.randrange(-1000, 1000), timestamp_ms=n * 33
            ).encode()
        )
        if rng.random() < 0.05:
            frame[rng.randrange(35)] ^= 1 << rng.randrange(8)
        chunks.append(bytes(frame))
    stream = b"".join(chunks)
    expected = stream_parse(stream)
    assert 2700 < len(expected) < 3000
    assert to_results(decode_capture(stream)) == expected


def test_overlapping_valid_candidates_resolve_like_the_stream_parser():
    # Frame B starts 20 bytes into candidate X; B's timestamp carries X's CRC, so both are valid.
    b_fields = VisionResult(sequence=7, result_sequence=7, x=11)
    b_head = b_fields.encode()[:13]
    x_window = b"\xa5\x47\x01\x60\x00\x01\x00\x18\x00" + bytes(11) + b_head
    x_crc = crc16(x_window[2:33])
    b = b_fields._replace(timestamp_ms=x_crc).encode()
    stream = x_window[:20] + b
    assert decode_capture(stream[:35]).shape == (1,)  # X alone is valid
    expected = stream_parse(stream)
    assert len(expected) == 1 and expected[0].sequence == 1  # X wins, B is skipped
    frames, offsets = decode_capture(stream, with_offsets=True)
    assert to_results(frames) == expected and offsets.tolist() == [0]
    # B after a gap is found again.
    assert to_results(decode_capture(b"\x00" * 3 + b)) == stream_parse(b"\x00" * 3 + b)


def test_short_and_empty_captures():
    assert decode_capture(b"").shape == (0,)
    assert decode_capture(b"\xa5\x47" * 10).shape == (0,)
    frames, offsets = decode_capture(b"\x00" * 10, with_offsets=True)
    assert frames.shape == offsets.shape == (0,)


def test_columns_are_typed_and_little_endian():
    result = VisionResult(sequence=65535, x=-32768, timestamp_ms=2**32 - 1, id=-1)
    frames = decode_capture(bytearray(b"zz" + result.encode()))
    assert frames["x"][0] == -32768 and frames["timestamp_ms"][0] == 2**32 - 1
    assert frames.dtype["sequence"] == np.dtype("<u2")
