"""BoardModel: sequence and device clock, on host times passed in (no clock is read)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gizmo_host.rigs.board import LOST_RELATIVE, BoardModel
from gizmo_host.wire.protocol import VisionResult

MS = 1_000_000


def no_clock() -> int:
    raise AssertionError("the model read the host clock")


def test_construction_reads_no_clock_and_now_ns_drives_the_live_clock():
    model = BoardModel(live_clock=True, clock=no_clock, timestamp_ms=5000)
    first = model.next_result(now_ns=10_000 * MS)
    second = model.next_result(now_ns=10_033 * MS, flags=LOST_RELATIVE)
    assert (first.timestamp_ms, second.timestamp_ms) == (5000, 5033)
    assert (first.sequence, second.sequence) == (0, 1)
    assert second.flags == LOST_RELATIVE
    assert VisionResult.decode(model.next_frame(now_ns=10_100 * MS)).timestamp_ms == 5100


def test_boot_host_ms_anchors_device_time_zero():
    model = BoardModel(live_clock=True, clock=no_clock, boot_host_ms=2_000)
    assert model.next_result(now_ns=2_500 * MS).timestamp_ms == 500


def test_skew_runs_the_device_clock_fast_and_a_change_keeps_it_continuous():
    model = BoardModel(live_clock=True, clock=no_clock, timestamp_ms=0, skew_ppm=1000.0)
    assert model.device_ms(0) == 0
    assert model.device_ms(10_000 * MS) == 10_010  # 1000 ppm over 10 s: 10 ms ahead
    model.set_skew(-1000.0, 10_000 * MS)
    assert model.device_ms(10_000 * MS) == 10_010
    assert model.device_ms(20_000 * MS) == 20_000


def test_jump_and_reset_step_the_live_clock():
    model = BoardModel(live_clock=True, clock=no_clock, timestamp_ms=1000, sequence=7)
    model.next_result(now_ns=0)
    model.jump_clock(-400, now_ns=100 * MS)
    assert model.device_ms(100 * MS) == 700
    model.reset(boot_ms=0, now_ns=200 * MS)
    frame = model.next_result(now_ns=700 * MS)
    assert (frame.sequence, frame.timestamp_ms) == (0, 500)


def test_stepped_clock_advances_by_period_and_jumps():
    model = BoardModel(period_ms=10, timestamp_ms=100)
    assert [model.next_result().timestamp_ms for _ in range(3)] == [100, 110, 120]
    model.jump_clock(1000)
    assert model.next_result().timestamp_ms == 1130


@given(st.integers(0, 65535), st.integers(1, 200))
def test_sequence_wraps_modulo_65536(start, count):
    model = BoardModel(sequence=start, period_ms=1)
    sequences = [model.next_result().sequence for _ in range(count)]
    assert sequences == [(start + i) % 65536 for i in range(count)]


def test_another_source_shares_the_live_clock():
    model = BoardModel(live_clock=True, clock=no_clock, timestamp_ms=3000)
    model.next_result(now_ns=0)
    other = model.another_source(2, result_type=4)
    result = other.next_result(now_ns=50 * MS)
    assert (result.source_id, result.result_type, result.sequence) == (2, 4, 0)
    assert result.timestamp_ms == 3050


def test_the_live_clock_wraps_at_2_32():
    model = BoardModel(live_clock=True, clock=no_clock, timestamp_ms=2**32 - 10)
    model.device_ms(0)
    assert model.device_ms(20 * MS) == 10


@pytest.mark.parametrize("delta_ms", [-5, 5])
def test_jump_on_a_never_read_clock_anchors_it_first(delta_ms):
    model = BoardModel(live_clock=True, clock=no_clock, timestamp_ms=1000)
    model.jump_clock(delta_ms, now_ns=0)
    assert model.device_ms(0) == 1000 + delta_ms
