"""The fleet view's memory of a vehicle's newest clocks, poisoned (issue 28, red team round 3).

A new publisher must be later than every line the view took for the vehicle, so that old
lines replayed are refused. Before the fix one forged line dated far ahead (a century, or one
plausible day), taken while nobody spoke for the vehicle, refused the real host's every line
for as long as the view ran: 0 PROCEED rows in 15 s while the host said PROCEED 672 times.
A host whose wall clock was wrong once was locked out the same way after its next restart.
Each truth here is the test's own: who sent what, when, and what this view's clock read.
"""

from __future__ import annotations

import json

import pytest

from gizmo_host.zenoh.fleet import WALL_AHEAD_NS, FleetView
from tests.support.fleet_peers import world_line

MS = 1_000_000
TTL = 250 * MS
W = 1000 * MS  # the conflict window
HOST, FORGER, RESTARTED = "a1", "f0", "b2"
BOOT = 9_000_000_000_000  # the host's CLOCK_MONOTONIC at its first line
VIEW_WALL = 1_780_000_000 * 10**9  # this view's wall clock at rx_ns 0
DAY_NS = 86_400 * 10**9


def line(seq: int, host_ns: int, wall_ns: int | None, verdict: str = "PROCEED") -> bytes:
    return json.dumps(world_line(seq, host_ns, wall_ns, verdict, 200)).encode()


def host_flies(view: FleetView, start_ns: int, seconds: float, publisher: str = HOST) -> int:
    """An honest host, its wall clock on the view's, PROCEED at 50 Hz from ``start_ns`` (the
    view's monotonic clock); returns the PROCEED rows the view showed."""
    proceeds = 0
    for i in range(1, round(seconds * 50) + 1):
        rx = start_ns + i * 20 * MS
        payload = line(i, BOOT + i * 20 * MS, VIEW_WALL + rx - MS)  # 1 ms in transit
        view.on_world("uav1", publisher, payload, rx_ns=rx, rx_wall_ns=VIEW_WALL + rx)
        proceeds += view.row("uav1", rx).verdict == "PROCEED"
    return proceeds


@pytest.mark.parametrize(
    ("wall_ns", "host_ns"),
    [
        (2**63 - 1, BOOT),  # a century ahead
        (VIEW_WALL + DAY_NS, BOOT),  # a plausible date, a day ahead
        (None, 2**63 - 1 - 10**9),  # no wall clock, the largest monotonic clock
    ],
    ids=["century", "day", "host_ns"],
)
def test_one_line_dated_ahead_before_the_host_starts_locks_it_out_for_at_most_the_bound(
    wall_ns, host_ns
) -> None:
    view = FleetView(TTL, conflict_ns=W)
    view.on_world("uav1", FORGER, line(1, host_ns, wall_ns), rx_ns=0, rx_wall_ns=VIEW_WALL)
    assert view.row("uav1", 0).publisher == FORGER  # nobody spoke for it: taken
    start = 100 * MS  # the real host starts while the forger's line is still present
    proceeds = host_flies(view, start, 15.0)
    row = view.row("uav1", start + 15 * 10**9)
    assert (row.verdict, row.publisher, row.handovers) == ("PROCEED", HOST, 1)
    # Locked out at most until the window has passed and the remembered date is behind it.
    assert proceeds >= 50 * (15 - (W + WALL_AHEAD_NS) / 1e9) - 1


def test_a_second_identity_dated_a_day_ahead_that_wins_a_restart_gap_gives_the_vehicle_back():
    """The red team's "gap": a forger speaking for uav1 dated a day ahead (a CONFLICT while
    the host speaks), wins the vehicle in the host's 2.3 s restart gap, then stops."""
    view = FleetView(TTL, conflict_ns=W)
    host_flies(view, 0, 5.0)
    stop = 5 * 10**9
    for i in range(1, 200):  # the forger at 50 Hz from 1 s before the stop to 3 s after
        rx = stop - W + i * 20 * MS
        forged = line(i, BOOT, VIEW_WALL + rx + DAY_NS)
        view.on_world("uav1", FORGER, forged, rx_ns=rx, rx_wall_ns=VIEW_WALL + rx)
    assert view.row("uav1", stop + 3 * 10**9).publisher == FORGER
    back = stop + 2300 * MS + W  # the host restarts (a new session)
    proceeds = host_flies(view, back, 10.0, publisher=RESTARTED)
    row = view.row("uav1", back + 10 * 10**9)
    assert (row.verdict, row.publisher) == ("PROCEED", RESTARTED)
    assert proceeds >= 50 * (10 - (W + WALL_AHEAD_NS) / 1e9) - 1


def test_a_host_whose_clock_was_a_day_ahead_once_is_taken_back_after_its_restart() -> None:
    view = FleetView(TTL, conflict_ns=W)
    for i in range(1, 251):  # 5 s with its wall clock a day ahead (no NTP yet)
        rx = i * 20 * MS
        ahead = line(i, BOOT + rx, VIEW_WALL + rx + DAY_NS)
        view.on_world("uav1", HOST, ahead, rx_ns=rx, rx_wall_ns=VIEW_WALL + rx)
    restart = 5 * 10**9 + 30 * 10**9  # it restarts 30 s later, its clock now right
    proceeds = host_flies(view, restart, 5.0, publisher=RESTARTED)
    assert view.row("uav1", restart + 5 * 10**9).publisher == RESTARTED
    assert proceeds == 250  # the remembered date was at most WALL_AHEAD_NS ahead: long past


@pytest.mark.parametrize("max_clock_error_ms", [None, 50])
def test_old_lines_replayed_are_still_refused_with_the_memory_bounded(max_clock_error_ms):
    """The memory's purpose is kept: the host's own lines, replayed by a new session 12 s
    after it stopped, are refused; its wall clock is on the view's (within the bound)."""
    error_ns = None if max_clock_error_ms is None else max_clock_error_ms * MS
    view = FleetView(TTL, error_ns, conflict_ns=W)
    sent = []
    for i in range(1, 1251):
        rx = i * 20 * MS
        payload = line(i, BOOT + rx, VIEW_WALL + rx - MS)
        sent.append(payload)
        view.on_world("uav1", HOST, payload, rx_ns=rx, rx_wall_ns=VIEW_WALL + rx)
    t = 25 * 10**9 + 12 * 10**9
    for payload in sent[-400:]:  # its newest 8 s of lines, from another session
        t += 20 * MS
        view.on_world("uav1", FORGER, payload, rx_ns=t, rx_wall_ns=VIEW_WALL + t)
        row = view.row("uav1", t)
        assert (row.verdict, row.publisher, row.handovers) == ("HOLD", HOST, 0)
    assert row.dropped["replayed"] == 400


def test_a_huge_host_ns_on_a_line_with_a_wall_clock_refuses_no_publisher_without_one() -> None:
    """Lines with a wall clock are judged by wall clocks only, so their ``host_ns`` (a forger's
    2**63 - 1) is not remembered against a later publisher whose lines carry none (an offline
    replay of a capture without a wall clock)."""
    view = FleetView(TTL, conflict_ns=W)
    forged = line(1, 2**63 - 1, VIEW_WALL)
    view.on_world("uav1", FORGER, forged, rx_ns=0, rx_wall_ns=VIEW_WALL)
    t = W + 1
    view.on_world("uav1", RESTARTED, line(1, BOOT, None), rx_ns=t, rx_wall_ns=VIEW_WALL + t)
    assert view.row("uav1", t).publisher == RESTARTED
