from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gizmo_host.stream.tracker import SequenceEvent, SequenceTracker, device_clock_advance_ms

FRAME_NS = 33_333_333


def feed(tracker: SequenceTracker, frames: list[tuple[int, int, int]], source_id: int = 1):
    return [tracker.observe(source_id, seq, ts, host) for seq, ts, host in frames]


def stream(first_seq: int, count: int, *, first_ts: int = 1000, first_host: int = 10**9):
    """Consecutive frames at 30 Hz: (sequence, timestamp_ms, host_ns)."""
    return [
        ((first_seq + i) % 65536, (first_ts + i * 33) % 2**32, first_host + i * FRAME_NS)
        for i in range(count)
    ]


def test_in_order_across_sequence_wrap_counts_no_loss():
    tracker = SequenceTracker()
    events = feed(tracker, stream(65530, 12))
    assert events[0] is SequenceEvent.FIRST
    assert set(events[1:]) == {SequenceEvent.IN_ORDER}
    stats = tracker.stats()[1]
    assert (stats.received, stats.lost, stats.resets, stats.last_sequence) == (12, 0, 0, 5)


def test_gap_across_wrap_counts_exact_loss():
    frames = stream(65533, 10)
    tracker = SequenceTracker()
    events = feed(tracker, frames[:2] + frames[6:])  # drops 65535, 0, 1, 2
    assert SequenceEvent.GAP in events
    assert tracker.stats()[1].lost == 4


def test_duplicate_and_late_frame_correct_the_counts():
    frames = stream(100, 6)
    tracker = SequenceTracker()
    order = [frames[0], frames[1], frames[3], frames[2], frames[3], frames[4], frames[5]]
    events = feed(tracker, order)
    assert events[2] is SequenceEvent.GAP
    assert events[3] is SequenceEvent.LATE
    assert events[4] is SequenceEvent.DUPLICATE
    stats = tracker.stats()[1]
    assert (stats.received, stats.lost, stats.duplicates, stats.reordered) == (6, 0, 1, 1)


def test_device_reset_is_not_loss():
    before = stream(40000, 5, first_ts=5_000_000)
    last_host = before[-1][2]
    after = stream(0, 5, first_ts=120, first_host=last_host + 2 * 10**9)
    tracker = SequenceTracker()
    events = feed(tracker, before + after)
    assert events[5] is SequenceEvent.RESET
    stats = tracker.stats()[1]
    assert (stats.lost, stats.resets, stats.epoch, stats.received) == (0, 1, 1, 10)


def test_reset_after_long_uptime_is_not_mistaken_for_a_timestamp_wrap():
    # 3e9 ms of uptime, then a restart to 50 ms: forward modulo 2**32 looks like +1.29e9 ms,
    # but only 40 ms of host time passed.
    tracker = SequenceTracker()
    host = 10**12
    tracker.observe(1, 5000, 3_000_000_000, host)
    assert tracker.observe(1, 5001, 50, host + 40_000_000) is SequenceEvent.RESET
    assert tracker.stats()[1].lost == 0


def test_timestamp_wrap_is_an_advance_not_a_reset():
    tracker = SequenceTracker()
    events = feed(tracker, stream(7, 10, first_ts=2**32 - 100))
    assert SequenceEvent.RESET not in events
    assert device_clock_advance_ms(2**32 - 10, 23, 33_000_000) == 33


def test_sequence_fallback_without_clock_fallback_is_a_discontinuity():
    tracker = SequenceTracker()
    tracker.observe(1, 30000, 1000, 10**9)
    assert tracker.observe(1, 100, 1033, 10**9 + FRAME_NS) is SequenceEvent.DISCONTINUITY
    stats = tracker.stats()[1]
    assert (stats.lost, stats.resets, stats.discontinuities) == (0, 0, 1)


def test_sources_are_independent():
    tracker = SequenceTracker()
    feed(tracker, stream(10, 3), source_id=1)
    feed(tracker, stream(500, 3)[::2], source_id=2)
    stats = tracker.stats()
    assert stats[1].lost == 0 and stats[2].lost == 1


@settings(max_examples=150, deadline=None)
@given(
    first=st.integers(0, 65535),
    keep=st.lists(st.booleans(), min_size=2, max_size=300),
)
def test_loss_count_equals_frames_dropped(first: int, keep: list[bool]):
    keep[0] = keep[-1] = True
    frames = stream(first, len(keep))
    tracker = SequenceTracker()
    feed(tracker, [f for f, k in zip(frames, keep, strict=True) if k])
    stats = tracker.stats()[1]
    assert stats.lost == keep.count(False)
    assert stats.resets == 0 and stats.received == keep.count(True)


def test_boot_loop_reset_inside_the_reorder_window_is_a_reset_not_duplicates():
    # The board ran 8 frames, then restarted within a second: its sequence is back at 0,
    # inside the 16-frame window, and its boot clock only a little behind.
    before = stream(0, 8, first_ts=200)
    after = stream(0, 8, first_ts=230, first_host=before[-1][2] + 400_000_000)
    tracker = SequenceTracker()
    events = feed(tracker, before + after)
    assert events[8] is SequenceEvent.RESET
    assert set(events[9:]) == {SequenceEvent.IN_ORDER}
    stats = tracker.stats()[1]
    assert (stats.duplicates, stats.resets, stats.lost, stats.received) == (0, 1, 0, 16)


def test_a_boot_loop_that_repeats_its_stamps_is_a_reset_unless_the_frame_is_the_same():
    """A deterministic boot repeats its (sequence, timestamp) pairs: the board restarted 60 ms
    after its 8th frame and stamps its frames exactly as before, but what it sees differs
    (here: "lost"). Same stamps, other content: a reset, not 8 duplicates, which dropped the
    new life's "not detected" frames unseen (red team, rt8). An exact copy is a duplicate."""
    first = stream(0, 8, first_ts=300)
    again = stream(0, 8, first_ts=300, first_host=first[-1][2] + 60_000_000 + FRAME_NS)
    tracker = SequenceTracker()
    for seq, ts, host in first:
        tracker.observe(1, seq, ts, host, ("tracked", seq))
    events = [tracker.observe(1, seq, ts, host, ("lost", seq)) for seq, ts, host in again]
    assert events[0] is SequenceEvent.RESET and SequenceEvent.DUPLICATE not in events
    seq, ts, host = again[-1]
    assert tracker.observe(1, seq, ts, host + 1_000_000, ("lost", seq)) is SequenceEvent.DUPLICATE
    assert tracker.stats()[1].duplicates == 1


def test_a_boot_loop_that_repeats_its_first_life_whole_is_a_reset_not_duplicates():
    """The same stamps and the same scene (a stationary target): the restarted board's frames
    equal the first life's, but come 250 ms and more after them. A copy comes at once; these
    were taken for duplicates, the reset went unseen and the clock's mapping was left 300 ms
    late: HOLD stale for good (red team, rt11)."""
    first = stream(0, 10, first_ts=300)
    restart_ns = first[-1][2] + 250_000_000  # the board's boot
    again = stream(0, 10, first_ts=300, first_host=restart_ns)
    tracker = SequenceTracker()
    for seq, ts, host in first:
        tracker.observe(1, seq, ts, host, ("car", seq))
    events = [tracker.observe(1, seq, ts, host, ("car", seq)) for seq, ts, host in again]
    assert events[0] is SequenceEvent.RESET and SequenceEvent.DUPLICATE not in events
    assert tracker.stats()[1].resets == 1
