"""Reassembler properties: any order, loss, duplicates, interleaving, both headers, bounds."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from rfly_link import DropCause, Reassembler
from rfly_link.reassembly import fragment_payload

SENDER_A = ("192.168.1.10", 40000)
SENDER_B = ("192.168.1.11", 40000)
MS = 1_000_000

payloads = st.binary(min_size=0, max_size=400)
fragment_sizes = st.integers(1, 64)
headers = st.sampled_from([24, 32])


def feed_all(r: Reassembler, datagrams: list[tuple[bytes, object]], now_ns: int = 0) -> list:
    frames = []
    for data, sender in datagrams:
        frames.extend(r.feed(data, sender, now_ns))
    return frames


@settings(max_examples=150, deadline=None)
@given(
    payload=payloads,
    size=fragment_sizes,
    header=headers,
    sdk_empty_last=st.booleans(),
    data=st.data(),
)
def test_any_order_with_duplicates_gives_exactly_one_frame(
    payload: bytes, size: int, header: int, sdk_empty_last: bool, data: st.DataObject
) -> None:
    datagrams = fragment_payload(
        payload, header_size=header, frame_id=9, timestamp_s=1.5, fragment_size=size,
        sdk_empty_last=sdk_empty_last,
    )  # fmt: skip
    dupes = data.draw(st.lists(st.sampled_from(datagrams), max_size=5))
    order = data.draw(st.permutations(datagrams + dupes))
    r = Reassembler()
    frames = feed_all(r, [(d, SENDER_A) for d in order])
    assert len(frames) == 1
    (frame,) = frames
    assert bytes(frame.payload) == payload
    assert frame.fragment_count == len(datagrams)
    assert frame.frame_id == (9 if header == 32 else None)
    assert frame.timestamp_s == 1.5
    dropped = r.drops(DropCause.DUPLICATE) + r.drops(DropCause.LATE_FRAGMENT)
    assert dropped == len(dupes)
    assert r.stats.frames_in_flight == 0


def test_sdk_empty_last_fragment_is_accepted_and_we_never_emit_one() -> None:
    payload = bytes(range(256)) * 4  # 1024 B, an exact multiple of 256
    sdk = fragment_payload(payload, fragment_size=256, sdk_empty_last=True)
    ours = fragment_payload(payload, fragment_size=256)
    assert len(sdk) == 5 and len(sdk[-1]) == 32  # header only
    assert len(ours) == 4 and all(len(d) > 32 for d in ours)
    for datagrams in (sdk, ours, list(reversed(sdk))):
        (frame,) = feed_all(Reassembler(), [(d, SENDER_A) for d in datagrams])
        assert bytes(frame.payload) == payload


@settings(max_examples=100, deadline=None)
@given(payload=st.binary(min_size=2, max_size=300), size=st.integers(1, 40), data=st.data())
def test_loss_never_completes_and_times_out(payload: bytes, size: int, data: st.DataObject) -> None:
    datagrams = fragment_payload(payload, fragment_size=size, frame_id=3)
    if len(datagrams) < 2:
        return
    kept = data.draw(st.lists(st.sampled_from(datagrams), max_size=len(datagrams) - 1, unique=True))
    r = Reassembler(timeout_ns=100 * MS)
    assert feed_all(r, [(d, SENDER_A) for d in kept], now_ns=0) == []
    assert r.stats.frames_in_flight == (1 if kept else 0)
    assert r.expire(now_ns=100 * MS) == 0  # not yet: the timeout is inclusive
    assert r.expire(now_ns=100 * MS + 1) == (1 if kept else 0)
    assert r.drops(DropCause.TIMEOUT) == (1 if kept else 0)
    assert r.stats.frames_in_flight == 0


@settings(max_examples=100, deadline=None)
@given(a=payloads, b=payloads, size=fragment_sizes, header=headers, data=st.data())
def test_two_senders_interleaved_with_the_same_key_stay_apart(
    a: bytes, b: bytes, size: int, header: int, data: st.DataObject
) -> None:
    # Same frame_id and timestamp: the SDK would stitch these into one mixed frame.
    da = [(d, SENDER_A) for d in fragment_payload(a, header_size=header, fragment_size=size)]
    db = [(d, SENDER_B) for d in fragment_payload(b, header_size=header, fragment_size=size)]
    order = data.draw(st.permutations(da + db))
    frames = feed_all(Reassembler(), order)
    assert sorted((f.sender, bytes(f.payload)) for f in frames) == sorted(
        [(SENDER_A, a), (SENDER_B, b)]
    )


@settings(max_examples=80, deadline=None)
@given(a=payloads, b=payloads, size=fragment_sizes, data=st.data())
def test_both_header_types_on_one_socket(
    a: bytes, b: bytes, size: int, data: st.DataObject
) -> None:
    d24 = fragment_payload(a, header_size=24, timestamp_s=2.0, fragment_size=size)
    d32 = fragment_payload(b, header_size=32, frame_id=1, timestamp_s=2.0, fragment_size=size)
    order = data.draw(st.permutations(d24 + d32))
    frames = feed_all(Reassembler(), [(d, SENDER_A) for d in order])
    assert sorted((f.header_size, bytes(f.payload)) for f in frames) == [(24, a), (32, b)]


def test_consecutive_frames_from_one_sender() -> None:
    r = Reassembler()
    out = []
    for frame_id in range(20):
        payload = bytes([frame_id]) * 100
        for d in fragment_payload(payload, frame_id=frame_id, fragment_size=30):
            out.extend(r.feed(d, SENDER_A, frame_id * MS))
    assert [f.payload[0] for f in out] == list(range(20))
    assert r.stats.frames_completed == 20 and not r.stats.drops


def test_late_fragment_after_completion_is_counted_not_reopened() -> None:
    r = Reassembler(timeout_ns=50 * MS)
    datagrams = fragment_payload(b"x" * 100, frame_id=5, fragment_size=40)
    assert len(feed_all(r, [(d, SENDER_A) for d in datagrams])) == 1
    assert r.feed(datagrams[1], SENDER_A, 10 * MS) == []
    assert r.drops(DropCause.LATE_FRAGMENT) == 1
    assert r.stats.frames_in_flight == 0
    # After the timeout the key may be reused (a restarted simulator counts from 0 again).
    frames = feed_all(r, [(d, SENDER_A) for d in datagrams], now_ns=200 * MS)
    assert len(frames) == 1


def test_frames_in_flight_are_bounded_and_overflow_is_counted() -> None:
    r = Reassembler(max_frames_in_flight=3)
    for frame_id in range(10):
        first = fragment_payload(b"y" * 50, frame_id=frame_id, fragment_size=10)[0]
        r.feed(first, SENDER_A, 0)
    assert r.stats.frames_in_flight == 3
    assert r.drops(DropCause.OVERFLOW) == 7
    # The newest frames survive and can still complete.
    rest = fragment_payload(b"y" * 50, frame_id=9, fragment_size=10)[1:]
    assert len(feed_all(r, [(d, SENDER_A) for d in rest])) == 1


def test_size_limits_reject_before_allocating() -> None:
    r = Reassembler(max_frame_bytes=1000, max_fragments=50)
    big = struct.pack("<6id", 1234567893, 32 + 100, 0, 12, 1, 0, 0.0) + bytes(100)
    assert r.feed(big, SENDER_A, 0) == []  # at least 11 x 100 B (last may be empty) > 1000 B
    assert r.drops(DropCause.FRAME_TOO_LARGE) == 1
    absurd = struct.pack("<6id", 1234567893, 32, 0, 2**31 - 1, 1, 0, 0.0)
    assert r.feed(absurd, SENDER_A, 0) == []
    assert r.drops(DropCause.ABSURD_SIZE) == 1
    single = fragment_payload(bytes(1001), fragment_size=2000)[0]
    assert r.feed(single, SENDER_A, 0) == []
    assert r.drops(DropCause.FRAME_TOO_LARGE) == 2
    assert r.stats.frames_in_flight == 0


def test_frame_limit_applies_to_the_data_not_to_count_times_fragment_size() -> None:
    # 1000 B in 300 B fragments is 4 fragments (1200 B of room) and must fit a 1000 B limit,
    # as must the SDK's exact multiple with its empty last fragment; 1001 B must not.
    r = Reassembler(max_frame_bytes=1000)
    exact = fragment_payload(bytes(range(200)) * 5, fragment_size=300)
    sdk = fragment_payload(bytes(1000), frame_id=1, fragment_size=500, sdk_empty_last=True)
    assert len(exact) == 4 and len(sdk) == 3
    assert [bytes(f.payload) for f in feed_all(r, [(d, SENDER_A) for d in exact])] == [
        bytes(range(200)) * 5
    ]
    assert len(feed_all(r, [(d, SENDER_A) for d in reversed(sdk)])) == 1
    over = fragment_payload(bytes(1001), frame_id=2, fragment_size=500)
    assert feed_all(r, [(d, SENDER_A) for d in over + over[:1]]) == []
    assert r.stats.drops == {"frame_too_large": 1, "late_fragment": 1}
    assert r.stats.frames_in_flight == 0 and r.stats.bytes_in_flight == 0


def test_malformed_headers_are_counted_by_cause() -> None:
    r = Reassembler()
    good = fragment_payload(b"abcdef" * 10, fragment_size=20, frame_id=1)
    assert r.feed(b"short", SENDER_A, 0) == []
    assert r.feed(struct.pack("<i", 1234567893) + bytes(24), SENDER_A, 0) == []  # 28 B, 32-hdr
    assert r.feed(b"\x01" * 40, SENDER_A, 0) == []
    assert r.feed(good[0] + b"!", SENDER_A, 0) == []  # packet_len disagrees
    bad_seq = bytearray(good[0])
    struct.pack_into("<i", bad_seq, 8, 7)
    assert r.feed(bytes(bad_seq), SENDER_A, 0) == []
    other_count = bytearray(good[1])
    struct.pack_into("<i", other_count, 12, 9)
    r.feed(good[0], SENDER_A, 0)
    assert r.feed(bytes(other_count), SENDER_A, 0) == []
    wrong_size = fragment_payload(b"z" * 60, fragment_size=25, frame_id=1)[1]
    assert r.feed(wrong_size, SENDER_A, 0) == []
    assert r.stats.drops == {
        "short": 2,
        "unknown_checksum": 1,
        "wrong_length": 1,
        "bad_sequence": 1,
        "inconsistent": 2,
    }
    assert len(feed_all(r, [(d, SENDER_A) for d in good[1:]])) == 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=80), max_size=20), st.integers(0, 10**10))
def test_random_datagrams_never_raise(datagrams: list[bytes], now_ns: int) -> None:
    r = Reassembler(max_frames_in_flight=4)
    for i, d in enumerate(datagrams):
        for frame in r.feed(d, SENDER_A, now_ns + i):
            assert isinstance(bytes(frame.payload), bytes)
    stats = r.stats
    assert stats.datagrams == len(datagrams)
    assert stats.frames_in_flight <= 4


def feed_like_the_reader(
    r: Reassembler, data: bytes, sender: object, now_ns: int, discard: bool = False
) -> list:
    """What the endpoint's reader thread does: receive into the offered slot when there is one."""
    slot = r.receive_slot()
    if slot is None:
        return [] if discard else r.feed(data, sender, now_ns)
    overflow = memoryview(bytearray(65536))
    landed = min(len(data), len(slot))
    slot[:landed] = data[:landed]
    overflow[: len(data) - landed] = data[landed:]
    if discard:
        r.cancel_in_place()
        return []
    return r.feed_in_place(len(data), overflow, sender, now_ns)


@settings(max_examples=150, deadline=None)
@given(
    a=payloads,
    b=payloads,
    size=st.integers(1, 64),
    header=headers,
    data=st.data(),
)
def test_receiving_in_place_gives_the_same_result_as_feed(
    a: bytes, b: bytes, size: int, header: int, data: st.DataObject
) -> None:
    da = [(d, SENDER_A) for d in fragment_payload(a, header_size=header, fragment_size=size)]
    db = [
        (d, SENDER_B) for d in fragment_payload(b, header_size=32, frame_id=4, fragment_size=size)
    ]
    junk = [(b"\x00" * 40, SENDER_A), (da[0][0][:-1] if len(da[0][0]) > 33 else b"", SENDER_B)]
    stream = data.draw(st.permutations(da + db + junk))
    stream += data.draw(st.lists(st.sampled_from(da + db), max_size=4))  # late duplicates
    discards = data.draw(st.lists(st.booleans(), min_size=len(stream), max_size=len(stream)))
    in_place, reference = Reassembler(), Reassembler()
    got, want = [], []
    for (d, sender), discard in zip(stream, discards, strict=True):
        got += feed_like_the_reader(in_place, d, sender, 0, discard)
        if not discard:
            want += reference.feed(d, sender, 0)
    assert [(f.sender, f.frame_id, bytes(f.payload)) for f in got] == [
        (f.sender, f.frame_id, bytes(f.payload)) for f in want
    ]
    assert in_place.stats.drops == reference.stats.drops


def test_in_place_is_used_for_in_order_fragments() -> None:
    payload = bytes(range(256)) * 40
    r = Reassembler()
    datagrams = fragment_payload(payload, fragment_size=1000)
    offered = 0
    frames = []
    for d in datagrams:
        offered += r.receive_slot() is not None
        r.cancel_in_place()
        frames += feed_like_the_reader(r, d, SENDER_A, 0)
    assert offered == len(datagrams) - 1  # all but the first land in place
    assert [bytes(f.payload) for f in frames] == [payload]


def first_fragment(frame_id: int, count: int, fragment_size: int) -> bytes:
    """Fragment 0 of a frame claiming ``count`` fragments: a few bytes that reserve a lot."""
    head = struct.pack("<6id", 1234567893, 32 + fragment_size, 0, count, frame_id, 0, 0.0)
    return head + bytes(fragment_size)


def test_bytes_in_flight_are_bounded_by_a_budget() -> None:
    # Each first fragment claims 64 x 8 KiB = 512 KiB; the budget holds two of them.
    r = Reassembler(max_bytes_in_flight=1024 * 1024, max_frames_in_flight=100)
    for frame_id in range(8):
        assert r.feed(first_fragment(frame_id, 64, 8192), SENDER_A, 0) == []
        assert r.stats.bytes_in_flight <= 1024 * 1024
    assert r.stats.bytes_in_flight == 1024 * 1024
    assert r.stats.frames_in_flight == 2  # the newest two; the oldest six were evicted
    assert r.drops(DropCause.BYTES_IN_FLIGHT) == 6
    assert r.stats.drops["bytes_in_flight"] == 6


def test_default_budget_stops_small_datagrams_forcing_huge_allocations() -> None:
    # The review's case: 4096 fragments of 8 KiB claimed = 32 MiB a frame, 8 frames.
    r = Reassembler()
    assert r.max_bytes_in_flight == 64 * 1024 * 1024
    for frame_id in range(8):
        r.feed(first_fragment(frame_id, 4096, 8192), SENDER_A, 0)
    assert r.stats.bytes_in_flight <= 64 * 1024 * 1024
    assert r.drops(DropCause.BYTES_IN_FLIGHT) == 6


def test_a_frame_larger_than_the_budget_is_dropped_and_budget_is_released() -> None:
    r = Reassembler(max_bytes_in_flight=1000, max_frame_bytes=10_000)
    assert r.feed(first_fragment(1, 11, 100), SENDER_A, 0) == []  # 1100 B > 1000 B budget
    assert r.drops(DropCause.BYTES_IN_FLIGHT) == 1
    assert r.stats.frames_in_flight == 0 and r.stats.bytes_in_flight == 0
    # Completion and timeout both give the budget back.
    payload = bytes(range(250))
    assert len(feed_all(r, [(d, SENDER_A) for d in fragment_payload(payload, fragment_size=100)]))
    assert r.stats.bytes_in_flight == 0
    r.feed(first_fragment(2, 5, 100), SENDER_A, 0)
    assert r.stats.bytes_in_flight == 500
    r.expire(10 * r.timeout_ns)
    assert r.stats.bytes_in_flight == 0 and r.drops(DropCause.TIMEOUT) == 1


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(1, 12), st.integers(0, 11), st.integers(1, 60)),
        max_size=40,
    ),
    st.integers(50, 600),
)
def test_bytes_in_flight_never_exceed_the_budget(
    fragments: list[tuple[int, int, int, int]], budget: int
) -> None:
    r = Reassembler(max_bytes_in_flight=budget, max_frames_in_flight=6)
    for frame_id, count, seq, size in fragments:
        head = struct.pack("<6id", 1234567893, 32 + size, seq % count, count, frame_id, 0, 0.0)
        r.feed(head + bytes(size), SENDER_A, 0)
        assert 0 <= r.stats.bytes_in_flight <= budget
    r.expire(10 * r.timeout_ns)
    assert r.stats.bytes_in_flight == 0


def test_fragment_headers_are_read_with_their_frame_name() -> None:
    from rfly_link.reassembly import FragmentHeader, read_header

    (d32,) = fragment_payload(b"abc", header_size=32, frame_id=77, timestamp_s=2.5)
    assert read_header(d32) == FragmentHeader(32, 35, 0, 1, 77, 2.5, 77)
    nan = float("nan")
    (d24,) = fragment_payload(b"abc", header_size=24, timestamp_s=nan)
    h24 = read_header(d24)
    assert isinstance(h24, FragmentHeader) and (h24.size, h24.frame_id) == (24, None)
    assert h24.frame == struct.pack("<d", nan)  # NaN names its frame by its bits
    shifted = read_header(b"\0" + d24, offset=1)
    assert isinstance(shifted, FragmentHeader) and shifted.frame == h24.frame
    assert read_header(d24[:23]) is DropCause.SHORT
    assert read_header(d32[:31]) is DropCause.SHORT  # a 24-byte prefix of a 32-byte header
    assert read_header(d32, length=31) is DropCause.SHORT
    assert read_header(b"\1" * 40) is DropCause.UNKNOWN_CHECKSUM
