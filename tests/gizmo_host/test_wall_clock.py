"""The host-to-wall clock mappings behind the world line's ``wall_ns``."""

from __future__ import annotations

import time

from gizmo_host.app.offline_replay import recorded_wall_clock
from gizmo_host.timing import realtime_of


def test_live_mapping_lands_between_two_reads_of_the_wall_clock() -> None:
    before = time.time_ns()
    wall_ns = realtime_of(time.monotonic_ns())
    after = time.time_ns()
    assert before <= wall_ns <= after + 1_000_000  # the two reads are not atomic: 1 ms slack


def test_a_capture_maps_with_its_one_recorded_offset() -> None:
    clock = recorded_wall_clock(
        {"monotonic_ns_at_start": "5000", "wall_clock_ns_at_start": "1700000000000000000"}
    )
    assert clock(5000) == 1_700_000_000_000_000_000
    assert clock(7500) == 1_700_000_000_000_002_500


def test_a_capture_without_a_wall_clock_gives_null_not_a_guess() -> None:
    assert recorded_wall_clock({})(5000) is None
    assert (
        recorded_wall_clock({"monotonic_ns_at_start": "x", "wall_clock_ns_at_start": "1"})(0)
        is None
    )
