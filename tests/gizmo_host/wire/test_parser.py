"""StreamParser: any chunking, garbage anywhere, bounded buffer, exact accounting."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from gizmo_host import FrameError, StreamParser, VisionResult
from gizmo_host.errors import BadSync, CrcMismatch
from gizmo_host.wire.protocol import FRAME_LEN
from tests.support.strategies import HEADER_PREFIX, SPEC_EXAMPLE, garbage, vision_results


def reference_scan(stream: bytes) -> list[VisionResult]:
    """The slow oracle: try a whole-frame decode at every offset; skip 35 after a good frame."""
    out, pos = [], 0
    while pos + FRAME_LEN <= len(stream):
        try:
            out.append(VisionResult.decode(stream[pos : pos + FRAME_LEN]))
        except FrameError:
            pos += 1
        else:
            pos += FRAME_LEN
    return out


def reference_counts(stream: bytes) -> tuple[list[VisionResult], int, int]:
    """The oracle with its counts: frames, header errors (a sync, then a wrong version, type
    or length) and CRC errors (a good header, a wrong CRC), judged where a whole frame fits."""
    out, pos, header_errors, crc_errors = [], 0, 0, 0
    while pos + FRAME_LEN <= len(stream):
        try:
            out.append(VisionResult.decode(stream[pos : pos + FRAME_LEN]))
        except BadSync:
            pos += 1
        except CrcMismatch:
            crc_errors += 1
            pos += 1
        except FrameError:
            header_errors += 1
            pos += 1
        else:
            pos += FRAME_LEN
    return out, header_errors, crc_errors


def feed_in_chunks(parser: StreamParser, stream: bytes, sizes) -> list[VisionResult]:
    out, pos = [], 0
    for size in sizes:
        out += parser.feed(stream[pos : pos + size])
        pos += size
    return out + parser.feed(stream[pos:])


def assert_accounted(parser: StreamParser) -> None:
    s = parser.stats
    assert s.bytes_in == FRAME_LEN * s.frames_ok + s.bytes_discarded + parser.buffered
    assert parser.buffered < FRAME_LEN


def is_subsequence(needles, haystack) -> bool:
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


@given(
    st.lists(st.tuples(garbage, vision_results), max_size=12),
    garbage,
    st.lists(st.integers(1, 80), max_size=30),
)
def test_frames_in_garbage_are_all_recovered_and_nothing_else(pairs, tail, sizes):
    stream = b"".join(g + r.encode() for g, r in pairs) + tail
    parser = StreamParser()
    got = feed_in_chunks(parser, stream, sizes)
    assert got == reference_scan(stream)
    assert is_subsequence([r for _, r in pairs], got)
    assert_accounted(parser)


@given(
    st.lists(
        st.tuples(st.one_of(st.just(b""), st.just(b""), st.just(b""), garbage), vision_results),
        min_size=8,
        max_size=120,
    ),
    st.lists(st.tuples(st.integers(0, 2**32), st.integers(0, 7)), max_size=8),
    st.lists(st.integers(1, 4200), max_size=8),
)
def test_long_runs_with_damage_give_the_oracles_frames_and_counts(pairs, flips, sizes):
    # Reads of many frames back to back (a saturated line, a backlog, a replay) take the
    # parser's run path; a flipped bit anywhere (sync, header, payload, CRC) or garbage between
    # frames ends a run, and the frame-by-frame search must take over exactly there.
    stream = bytearray(b"".join(g + r.encode() for g, r in pairs))
    for at, bit in flips:
        stream[at % len(stream)] ^= 1 << bit
    stream = bytes(stream)
    parser = StreamParser()
    got = feed_in_chunks(parser, stream, sizes)
    frames, header_errors, crc_errors = reference_counts(stream)
    assert got == frames
    stats = parser.stats
    assert (stats.header_errors, stats.crc_errors) == (header_errors, crc_errors)
    assert_accounted(parser)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(200, 700),
    st.lists(st.tuples(st.integers(0, 2**32), st.integers(0, 7)), max_size=10),
    st.integers(0, 34),
)
def test_a_run_longer_than_a_read_gives_the_oracles_frames_and_counts(count, flips, lead):
    # A replayed capture's chunk may hold more frames than a 4 KiB read (the parser keeps
    # the CRC slices of 256 frames and works out a longer run's own), with bit errors in it.
    rng = random.Random(count)
    frames = [
        VisionResult(sequence=n % 65536, result_sequence=n % 65536, result_type=1 + n % 5,
                     id=1, timestamp_ms=n, x=rng.randrange(-1000, 1001), w=20, h=20).encode()
        for n in range(count)
    ]  # fmt: skip
    stream = bytearray(bytes(lead) + b"".join(frames))
    for at, bit in flips:
        stream[at % len(stream)] ^= 1 << bit
    parser = StreamParser()
    got = parser.feed(bytes(stream))
    expected, header_errors, crc_errors = reference_counts(bytes(stream))
    assert got == expected
    assert (parser.stats.header_errors, parser.stats.crc_errors) == (header_errors, crc_errors)
    assert_accounted(parser)


def test_a_frame_cut_short_inside_a_run_gives_way_to_the_frame_that_starts_inside_it():
    # A run of frames back to back with, in the middle, the first 20 bytes of a frame (its
    # header good, its CRC window running into the next frame) and a frame whose payload holds
    # a false sync: the run path must let the search judge what starts inside them.
    frames = [VisionResult(sequence=n, x=n).encode() for n in range(30)]
    false_sync = VisionResult(sequence=99, x=0x47A5, y=0x47A5).encode()  # A5 47 in its payload
    damaged = bytearray(false_sync)
    damaged[30] ^= 0x01  # its CRC window: rejected, its false sync a candidate of its own
    stream = b"".join(frames[:10]) + frames[10][:20] + b"".join(frames[10:20])
    stream += bytes(damaged) + b"".join(frames[20:])
    parser = StreamParser()
    got = parser.feed(stream)
    expected, header_errors, crc_errors = reference_counts(stream)
    assert got == expected and [r.sequence for r in got] == list(range(30))
    assert (parser.stats.header_errors, parser.stats.crc_errors) == (header_errors, crc_errors)
    assert crc_errors >= 2  # the cut frame and the damaged one, at least
    assert_accounted(parser)


@given(st.lists(vision_results, min_size=1, max_size=4))
def test_every_split_point_gives_the_same_frames(results):
    stream = b"".join(r.encode() for r in results)
    for cut in range(len(stream) + 1):
        parser = StreamParser()
        assert parser.feed(stream[:cut]) + parser.feed(stream[cut:]) == results
        assert parser.stats.bytes_discarded == 0


def test_byte_at_a_time_and_whole():
    frames = [VisionResult(sequence=n, x=n - 5).encode() for n in range(10)]
    stream = b"\x00\xa5" + b"\xa5\x47\x02".join(frames) + b"\xa5"
    whole = StreamParser().feed(stream)
    parser = StreamParser()
    single = [r for i in range(len(stream)) for r in parser.feed(stream[i : i + 1])]
    assert whole == single and [r.sequence for r in whole] == list(range(10))
    assert_accounted(parser)


def test_truncated_frame_is_held_until_the_rest_arrives():
    parser = StreamParser()
    assert parser.feed(b"junk" + SPEC_EXAMPLE[:20]) == []
    assert parser.buffered == 20
    assert parser.feed(SPEC_EXAMPLE[20:34]) == []
    assert parser.buffered == 34
    assert parser.feed(SPEC_EXAMPLE[34:]) == [VisionResult.decode(SPEC_EXAMPLE)]
    assert parser.buffered == 0 and parser.stats.bytes_discarded == 4


def test_real_frame_starting_inside_a_false_candidate_is_found():
    # A false header whose 35-byte window swallows the start of a real frame: the search must
    # resume one byte after the false A5, not 35 bytes later.
    false_start = HEADER_PREFIX + b"\x00" * 5
    parser = StreamParser()
    assert parser.feed(false_start + SPEC_EXAMPLE) == [VisionResult.decode(SPEC_EXAMPLE)]
    assert parser.stats.crc_errors == 1 and parser.stats.bytes_discarded == len(false_start)


def test_header_and_crc_errors_are_counted_separately():
    bad_version = SPEC_EXAMPLE[:2] + b"\x02" + SPEC_EXAMPLE[3:]
    bad_type = SPEC_EXAMPLE[:3] + b"\x61" + SPEC_EXAMPLE[4:]
    bad_len = SPEC_EXAMPLE[:7] + b"\x19" + SPEC_EXAMPLE[8:]
    bad_crc = SPEC_EXAMPLE[:34] + b"\x00"
    parser = StreamParser()
    assert parser.feed(bad_version + bad_type + bad_len + bad_crc + SPEC_EXAMPLE) == [
        VisionResult.decode(SPEC_EXAMPLE)
    ]
    stats = parser.stats
    assert (stats.header_errors, stats.crc_errors, stats.frames_ok) == (3, 1, 1)
    assert stats.bytes_discarded == 4 * FRAME_LEN


def test_buffer_stays_bounded_on_endless_garbage():
    parser = StreamParser()
    rng = random.Random(1)
    for _ in range(200):
        parser.feed(rng.randbytes(4096))
        assert parser.buffered < FRAME_LEN
    parser.feed(b"\xa5" * 100_000)
    assert parser.buffered == 1
    assert_accounted(parser)


@given(st.lists(st.binary(max_size=100), max_size=20))
def test_arbitrary_bytes_never_raise_and_are_accounted(chunks):
    parser = StreamParser()
    for chunk in chunks:
        parser.feed(chunk)
    assert_accounted(parser)


def test_reset_discards_the_partial_frame():
    parser = StreamParser()
    parser.feed(SPEC_EXAMPLE[:30])
    parser.reset()
    assert parser.buffered == 0 and parser.feed(SPEC_EXAMPLE[30:]) == []
    assert_accounted(parser)


def test_accepts_bytearray_and_memoryview():
    parser = StreamParser()
    assert parser.feed(bytearray(SPEC_EXAMPLE[:10])) + parser.feed(
        memoryview(SPEC_EXAMPLE)[10:]
    ) == [VisionResult.decode(SPEC_EXAMPLE)]
