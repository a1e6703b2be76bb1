"""The fleet view attacked, on a manual clock: forged publishers, replays, restarts, lines that
are not what they claim, floods, and more vehicles than an output can take. Each truth is the
test's own: who sent what, when."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gizmo_host.publish.lines import encode_line
from gizmo_host.timing import ManualScheduler, settle
from gizmo_host.zenoh.fleet import MAX_VOICES, FleetRow, FleetView, LineJson
from gizmo_host.zenoh.fleet_line import BadLine, parse_world
from gizmo_host.zenoh.watch import FleetWatch
from tests.support.fleet_peers import world_line
from tests.support.schemas import validate_message

MS = 1_000_000
TTL = 250 * MS
W = 1000 * MS  # the conflict window
HOST, FORGER, RESTARTED = "a1", "f0", "b2"
BOOT = 9_000_000_000_000  # the host's CLOCK_MONOTONIC at seq 0
WALL = 1_780_000_000 * 10**9


def world(seq: int, verdict: str = "PROCEED", boot: int = BOOT, **fields: Any) -> bytes:
    """Line ``seq`` of a host at 50 Hz whose clocks started at ``boot`` (and WALL)."""
    host_ns = boot + seq * 20 * MS
    line = world_line(seq, host_ns, WALL + (host_ns - BOOT), verdict, 200)
    return json.dumps({**line, **fields}).encode()


def test_a_second_publisher_makes_the_row_conflict_until_it_has_been_gone_for_the_window() -> None:
    view = FleetView(TTL, conflict_ns=W)
    view.on_world("uav1", HOST, world(1, "HOLD"), rx_ns=0)
    t = 0
    for i in range(10):  # the host says HOLD at 50 Hz; a forger PROCEED at 10 Hz, seq ahead
        t = (i + 1) * 20 * MS
        view.on_world("uav1", HOST, world(2 + i, "HOLD"), rx_ns=t)
        if i % 5 == 0:
            began = view.on_world("uav1", FORGER, world(500 + i), rx_ns=t + 1)
            assert began == (i == 0)  # the row changed: print it
        row = view.row("uav1", t + 1)
        assert (row.verdict, row.reason, row.publisher) == ("CONFLICT", "publishers", HOST)
        assert row.line.verdict == "HOLD"  # the forger's lines are never taken
    forged_last = 5 * 20 * MS + 20 * MS + 1
    row = view.row("uav1", t)
    assert row.dropped["foreign"] == 2 and row.publishers == 2
    # It ends exactly W after the forger's last line, with the host speaking all along.
    for i in range(60):
        t += 20 * MS
        view.on_world("uav1", HOST, world(12 + i, "HOLD"), rx_ns=t)
    assert view.row("uav1", forged_last + W).verdict == "CONFLICT"
    assert view.row("uav1", forged_last + W + 1)[2:4] == ("HOLD", None)
    assert forged_last + W + 1 in _deadlines(view, forged_last, forged_last + W + 1)


def _deadlines(view: FleetView, start: int, end: int) -> list[int]:
    """The times ``view`` asks to be looked at again, from ``start`` up to ``end``."""
    out = []
    now = start
    while (due := view.next_deadline_ns()) is not None and due <= end:
        out.append(due)
        now = max(now, due)
        view.due(now)
    return out


@pytest.mark.parametrize(
    ("seq", "host_offset_ms"), [(10, 0), (9, 0), (11, -20), (3, -200)], ids=str
)
def test_a_line_of_the_publisher_that_does_not_go_forward_is_a_replay(seq, host_offset_ms) -> None:
    view = FleetView(TTL, conflict_ns=W)
    for i in range(1, 11):
        view.on_world("uav1", HOST, world(i), rx_ns=i * 20 * MS)
    assert view.row("uav1", 200 * MS).verdict == "PROCEED"
    replay = json.loads(world(seq))
    replay["host_ns"] = BOOT + 10 * 20 * MS + host_offset_ms * MS  # not after line 10's
    replay["valid_until_ns"] = replay["host_ns"] + 200 * MS
    view.on_world("uav1", HOST, json.dumps(replay).encode(), rx_ns=205 * MS)
    row = view.row("uav1", 205 * MS)
    assert (row.verdict, row.reason, row.line.seq) == ("CONFLICT", "replay", 10)
    assert row.dropped["replayed"] == 1
    view.on_world("uav1", HOST, world(11), rx_ns=220 * MS)  # the host goes on
    assert view.row("uav1", 205 * MS + W - 1).verdict == "CONFLICT"
    view.on_world("uav1", HOST, world(12), rx_ns=205 * MS + W)
    assert view.row("uav1", 205 * MS + W).verdict == "PROCEED"


def test_a_forger_copying_the_publishers_identity_is_a_conflict_at_once_or_at_the_next_line() -> (
    None
):
    """Zenoh identities are claims: a forger can stamp its samples with the host's. A line
    whose host clock ran ahead of ours by more than the window is refused at once; one just
    ahead is taken, and the host's next line, behind it, is the conflict. Either way the
    conflict ends at most 2 windows after the forger stops. Only the router's access control
    keeps such a forger out (docs/zenoh.md)."""
    for lead_ms, seen_at_ms in ((5000, 110), (500, 120)):
        view = FleetView(TTL, conflict_ns=W)
        for i in range(1, 6):
            view.on_world("uav1", HOST, world(i, "HOLD"), rx_ns=i * 20 * MS)
        forged = world(100, boot=BOOT + lead_ms * MS - 100 * 20 * MS + 5 * 20 * MS)
        view.on_world("uav1", HOST, forged, rx_ns=110 * MS)
        t = 120 * MS
        view.on_world("uav1", HOST, world(6, "HOLD"), rx_ns=t)  # the host's next line
        row = view.row("uav1", seen_at_ms * MS)
        assert (row.verdict, row.reason) == ("CONFLICT", "replay"), lead_ms
        seq = 6
        while view.row("uav1", t)[2:4] != ("HOLD", None):  # the host goes on at 50 Hz
            assert view.row("uav1", t).verdict != "PROCEED"
            seq += 1
            t += 20 * MS
            view.on_world("uav1", HOST, world(seq, "HOLD"), rx_ns=t)
            assert t <= 110 * MS + 2 * W + 40 * MS, "the conflict did not end"


def test_a_restarted_host_takes_its_vehicle_over_once_the_old_session_is_silent() -> None:
    view = FleetView(TTL, conflict_ns=W)
    view.on_world("uav1", HOST, world(1), rx_ns=0)
    # Back within W (a new session: a new identity): a conflict until W after the old line.
    view.on_world("uav1", RESTARTED, world(1, boot=BOOT + 500 * MS), rx_ns=500 * MS)
    assert view.row("uav1", 500 * MS).verdict == "CONFLICT"
    view.on_world("uav1", RESTARTED, world(30, boot=BOOT + 500 * MS), rx_ns=W + 1)
    row = view.row("uav1", W + 1)
    assert (row.verdict, row.publisher, row.handovers, row.line.seq) == (
        "PROCEED", RESTARTED, 1, 30,
    )  # fmt: skip


def test_a_stopped_hosts_lines_replayed_by_anyone_are_refused_and_it_stays_stale() -> None:
    view = FleetView(TTL, conflict_ns=W)
    for i in range(1, 51):
        view.on_world("uav1", HOST, world(i), rx_ns=i * 20 * MS)
    stop = 50 * 20 * MS
    t = stop
    for i in range(1, 151):  # 3 s of its own lines again, from another session
        t += 20 * MS
        view.on_world("uav1", FORGER, world(1 + i % 50), rx_ns=t)
        row = view.row("uav1", t)
        assert row.verdict != "PROCEED" and row.line.seq == 50
        assert row.state == ("fresh" if t - stop <= TTL else "stale")
    assert row.dropped["replayed"] + row.dropped["foreign"] == 150
    assert row.dropped["replayed"] > 0 and (row.verdict, row.reason) == ("HOLD", "stale")


def line_at(seq: int, host_ns: int, wall_ns: int | None, verdict: str = "PROCEED") -> bytes:
    return json.dumps(world_line(seq, host_ns, wall_ns, verdict, 200)).encode()


def fly_25_s(view: FleetView, vehicle: str = "uav1") -> list[bytes]:
    """A host's 25 s of PROCEED lines at 50 Hz, each taken as it arrives; the lines."""
    lines = [line_at(i, BOOT + i * 20 * MS, WALL + i * 20 * MS) for i in range(1, 1251)]
    for i, line in enumerate(lines, 1):
        view.on_world(vehicle, HOST, line, rx_ns=i * 20 * MS)
    return lines


# Before the fix (red team FAIL 3, f02_replay.py phase d): 17-25 s old PROCEED lines replayed
# by a new session 12 s after the host stopped were taken over (handovers 1) and shown PROCEED.
@pytest.mark.parametrize("silent_s", [12, 600])
def test_old_lines_replayed_after_any_silence_are_never_current(silent_s) -> None:
    view = FleetView(TTL, conflict_ns=W)
    lines = fly_25_s(view)
    t = 1250 * 20 * MS + silent_s * 10**9
    for line in lines[:400]:  # its lines of 17-25 s before it stopped, from a new session
        t += 20 * MS
        view.on_world("uav1", FORGER, line, rx_ns=t)
        row = view.row("uav1", t)
        assert (row.state, row.verdict, row.publisher, row.handovers) == (
            "stale", "HOLD", HOST, 0,
        )  # fmt: skip
    assert row.dropped["replayed"] == 400 and row.line.seq == 1250


def test_a_host_restarted_with_a_later_wall_clock_is_taken_back_at_once() -> None:
    """A new boot (its monotonic clock starts again, below every line it sent before), a new
    session, and its wall clock later than its last line's: its first line is taken."""
    view = FleetView(TTL, conflict_ns=W)
    fly_25_s(view)
    t = 1250 * 20 * MS + 40 * 10**9  # it rebooted: 40 s later
    line = line_at(1, 30 * 10**9, WALL + 1250 * 20 * MS + 40 * 10**9)
    view.on_world("uav1", RESTARTED, line, rx_ns=t)
    row = view.row("uav1", t)
    assert (row.state, row.verdict, row.publisher, row.handovers) == (
        "fresh", "PROCEED", RESTARTED, 1,
    )  # fmt: skip


def test_a_vehicle_forgotten_at_the_limit_still_refuses_its_old_lines() -> None:
    """The memory is bounded by the vehicle limit: a vehicle forgotten to make room keeps the
    newest times it was seen at, so its old lines replayed later are still refused."""
    view = FleetView(TTL, conflict_ns=W, max_vehicles=2)
    lines = fly_25_s(view, "uav1")
    t = 1250 * 20 * MS + 5 * 10**9
    view.on_world("uav2", "c3", line_at(1, BOOT, WALL + t), rx_ns=t)
    t += 5 * 10**9  # uav1 is silent past the TTL and the window: forgotten for uav3
    view.on_world("uav3", "d4", line_at(1, BOOT, WALL + t), rx_ns=t)
    assert view.forgotten >= 1 and "uav1" not in view.vehicles
    t += 10**9
    view.on_world("uav1", FORGER, lines[-1], rx_ns=t)  # its newest line, replayed
    assert "uav1" not in view.vehicles  # no row: nothing shown for it
    t += W + 1  # the replayer has been quiet for the window: a restart is taken
    view.on_world("uav1", RESTARTED, line_at(7, 30 * 10**9, WALL + t), rx_ns=t)
    assert view.row("uav1", t).verdict == "PROCEED"


def test_a_host_restarted_with_the_same_pinned_identity_is_back_within_two_windows() -> None:
    """A Zenoh config that pins the session id: the restarted host's seq starts over, which
    looks like a replay until its old lines are W old."""
    view = FleetView(TTL, conflict_ns=W)
    for i in range(1, 101):
        view.on_world("uav1", HOST, world(i), rx_ns=i * 20 * MS)
    last = 100 * 20 * MS
    t, seq = last, 0
    while True:
        t += 20 * MS
        seq += 1
        view.on_world("uav1", HOST, world(seq, boot=BOOT + last + 5 * MS), rx_ns=t)
        row = view.row("uav1", t)
        if row.line.seq == seq and row.verdict == "PROCEED":
            break
        assert row.verdict != "PROCEED" and t - last <= 2 * W + 40 * MS, "it did not end"


BAD = {
    "valid_until 1e400": b'"valid_until_ns": 1e400',
    "seq NaN": b'"seq": NaN',
    "host_ns -Infinity": b'"host_ns": -Infinity',
    "seq text": b'"seq": "12"',
    "seq true": b'"seq": true',
    "seq 0": b'"seq": 0',
    "host_ns 2**64": b'"host_ns": 18446744073709551616',
    "valid 2 hours": b'"valid_until_ns": 9007200000000000',
    "valid before host_ns": b'"valid_until_ns": 1',
    "verdict maybe": b'"verdict": "MAYBE"',
    "reasons text": b'"reasons": "stale"',
    "vehicle position inf": b'"vehicle": {"position_ned_m": [1e999, 0, 0]}',
    "vehicle position text": b'"vehicle": {"position_ned_m": ["1", 0, 0]}',
    "vehicle position 2": b'"vehicle": {"position_ned_m": [1, 0]}',
    "target far": b'"targets": [{"key": "1:5:11", "position_ned_m": [1e12, 0, 0]}]',
    "target azimuth": b'"targets": [{"key": "1:5:11", "azimuth_deg": 400}]',
    "long label": b'"targets": [{"key": "1:5:11", "label": "' + b"x" * 200 + b'"}]',
    "a NaN anywhere": b'"sources": {"vision": {"age_ms": NaN}}',
}


@pytest.mark.parametrize("field", BAD.values(), ids=list(BAD))
def test_a_bad_line_is_counted_and_changes_nothing_not_even_the_stale_deadline(field) -> None:
    view = FleetView(TTL, conflict_ns=W)
    view.on_world("uav1", HOST, world(1), rx_ns=0)
    good = world(2).decode()
    key = field.split(b":", 1)[0].decode()
    start = good.index(key)
    end = _value_end(good, start + len(key) + 1)
    bad = (good[:start] + field.decode() + good[end:]).encode()
    with pytest.raises(BadLine):
        parse_world(bad)
    assert not view.on_world("uav1", HOST, bad, rx_ns=10 * MS)
    row = view.row("uav1", 10 * MS)
    assert (row.line.seq, row.dropped["invalid"], row.verdict) == (1, 1, "PROCEED")
    assert view.next_deadline_ns() == 200 * MS + 1  # the first line's validity, unchanged
    assert view.row("uav1", TTL + 1).state == "stale"
    encode_line(row.to_dict())  # the row is printable, always


def _value_end(text: str, start: int) -> int:
    """Where the JSON value starting at ``start`` ends (a test's own scanner)."""
    depth, i, quoted = 0, start, False
    while True:
        c = text[i]
        if quoted:
            quoted = c != '"' or text[i - 1] == "\\"
        elif c == '"':
            quoted = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
        i += 1


@pytest.mark.parametrize(
    "payload",
    [b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe{}", b"", b"1" * 5000, b'"world"', b"null"],
    ids=["deep", "not utf-8", "empty", "5000 digits", "string", "null"],
)
def test_what_is_not_a_world_object_is_invalid(payload) -> None:
    with pytest.raises(BadLine):
        parse_world(payload)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=200),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
FIELDS = ["seq", "host_ns", "wall_ns", "valid_until_ns", "verdict", "reasons", "selected",
          "vehicle", "targets"]  # fmt: skip


@given(st.dictionaries(st.sampled_from(FIELDS), JSON, min_size=1))
def test_any_line_is_either_refused_or_every_number_taken_is_finite_and_in_range(changes) -> None:
    line = {**json.loads(world(3)), **changes}
    payload = json.dumps(line, allow_nan=True).encode()
    try:
        taken = parse_world(payload)
    except BadLine:
        return
    assert type(taken.seq) is int and 1 <= taken.seq < 2**63
    assert type(taken.host_ns) is int and 0 <= taken.host_ns < 2**63
    assert 0 <= taken.validity_ns <= 3600 * 10**9 and taken.verdict in ("PROCEED", "HOLD")
    for value in (*(taken.position_ned_m or ()), *_numbers(taken.target)):
        assert math.isfinite(value) and abs(value) <= 1e7
    row = _row(taken)
    assert row.to_json_line() == encode_line(row.to_dict())  # printable, never NaN


def _numbers(value: Any) -> list[float]:
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def _row(line: Any) -> FleetRow:
    drops = dict.fromkeys(("replayed", "foreign", "invalid", "oversized", "skipped"), 0)
    return FleetRow(
        "v",
        "fresh",
        "HOLD",
        None,
        0.0,
        None,
        0,
        None,
        line,
        None,
        0,
        None,
        HOST,
        1,
        0,
        drops,
        LineJson(),
    )


def test_many_identities_for_one_vehicle_are_bounded_and_still_a_conflict() -> None:
    view = FleetView(TTL, conflict_ns=W)
    view.on_world("uav1", HOST, world(1), rx_ns=0)
    for i in range(1000):
        view.on_world("uav1", f"forged{i}", world(2 + i), rx_ns=MS + i)
    entry = view._vehicles["uav1"]
    assert len(entry.others) == MAX_VOICES
    assert view.row("uav1", 2 * MS).verdict == "CONFLICT"
    assert view.row("uav1", 2 * MS).dropped["foreign"] == 1000


def test_the_vehicles_are_bounded_and_room_is_made_only_from_silent_ones() -> None:
    view = FleetView(TTL, conflict_ns=W, max_vehicles=100)
    for i in range(100):
        view.on_world(f"v{i}", HOST, world(1), rx_ns=0)
    view.on_world("late", HOST, world(1), rx_ns=10 * MS)  # all 100 speak: refused
    assert view.refused == 1 and "late" not in view.vehicles
    view.on_world("v0", HOST, world(2), rx_ns=2 * W)  # v0 keeps speaking
    view.on_world("late", HOST, world(1), rx_ns=2 * W + 10 * MS)
    assert view.vehicles == sorted(["v0", "late"]) and view.forgotten == 99


def test_a_flood_from_one_publisher_costs_its_own_lines_and_nobody_elses() -> None:
    clock = ManualScheduler(start_ns=0)
    watch = FleetWatch(FleetView(TTL, conflict_ns=W), lambda rows: None, scheduler=clock)
    watch.offer("gizmo/uav2/world", HOST, world(1), 0, 0)
    for i in range(10_000):  # the loop is busy: nothing drained meanwhile
        watch.offer("gizmo/uav1/world", FORGER, world(1 + i), i, 0)
    watch.offer("gizmo/uav1/world", FORGER, None, 10_001, 0)  # over the size limit
    watch.drain()
    view = watch.view
    assert view.row("uav2", 0).line.seq == 1
    row = view.row("uav1", 20_000)
    assert (row.line.seq, row.dropped["skipped"], row.dropped["oversized"]) == (10_000, 9999, 1)


@pytest.mark.parametrize(("vehicles", "rows_per_tick"), [(2000, 10_000), (2000, 150)])
def test_every_vehicle_is_printed_each_refresh_at_the_pace_the_output_takes(
    vehicles, rows_per_tick
) -> None:
    """Each vehicle's line at 2 Hz, an output that takes ``rows_per_tick`` rows per 100 ms
    tick: when it takes them all, every vehicle is printed at least once a second; when it
    cannot (150 rows per tick: 1,500 rows/s for 2,000 vehicles), each is printed in turn,
    none starved, and the output never holds more than its budget."""

    async def main() -> None:
        clock = ManualScheduler(start_ns=0)
        printed: dict[str, list[int]] = {}
        taken = [0]

        def report(rows: list[FleetRow]) -> None:
            for row in rows:
                printed.setdefault(row.vehicle, []).append(clock.now_ns())
            taken[0] += len(rows)

        def room() -> bool:
            return taken[0] < rows_per_tick

        watch = FleetWatch(FleetView(TTL), report, room=room, scheduler=clock, clock=clock.now_ns)
        watch._arm_tick(0)
        seq = 0
        for step in range(50):  # 5 s in 100 ms steps
            now = clock.now_ns()
            if step % 5 == 0:
                seq += 1
                for v in range(vehicles):
                    line = world(seq, "HOLD", boot=BOOT + v)
                    watch.offer(f"gizmo/uav{v}/world", HOST, line, now + v, 0)
                watch.drain()
            taken[0] = 0  # the reader took what it could in the last tick
            clock.advance(100 * MS)
            await settle()
        assert len(printed) == vehicles
        gaps = [b - a for times in printed.values() for a, b in itertools.pairwise(times)]
        first = max(times[0] for times in printed.values())
        if rows_per_tick >= vehicles:
            assert max(gaps) <= 1000 * MS and first <= 100 * MS
        else:
            needed = vehicles / (rows_per_tick * 10) * 1000 * MS  # a turn of the round
            assert max(gaps) <= needed + 200 * MS and first <= needed + 200 * MS

    asyncio.run(main())


def test_rows_validate_in_every_state() -> None:
    view = FleetView(TTL, conflict_ns=W)
    view.on_world("uav1", HOST, world(1), rx_ns=0)
    view.on_world("uav1", HOST, b'{"type":"link","state":"UP"}', rx_ns=1)  # invalid world
    view.on_link("uav1", HOST, b'{"type":"link","state":"UP"}', rx_ns=1)
    view.on_world("uav1", FORGER, world(9), rx_ns=2)
    view.on_world("uav2", HOST, world(1, "HOLD", vehicle=None, targets=[]), rx_ns=0)
    view.on_world("uav3", HOST, world(1, selected="1:9:9"), rx_ns=0)  # PROCEED, no such target
    for vehicle in ("uav1", "uav2", "uav3"):
        for now in (2, 100 * MS, 300 * MS, 2 * W):
            row = view.row(vehicle, now)
            validate_message(row.to_dict())
            assert json.loads(row.to_json_line()) == row.to_dict()
            assert row.to_json_line() == encode_line(row.to_dict())  # byte for byte


def test_a_link_line_counts_for_its_own_publisher_only() -> None:
    up, down = b'{"type":"link","state":"UP"}', b'{"type":"link","state":"DOWN"}'
    view = FleetView(TTL, conflict_ns=W)
    assert not view.on_link("uav1", HOST, up, rx_ns=0)  # before its first world line
    view.on_world("uav1", HOST, world(1), rx_ns=MS)
    row = view.row("uav1", MS)
    assert (row.link, row.verdict, row.dropped["foreign"]) == ("UP", "PROCEED", 0)
    assert view.on_link("uav1", FORGER, down, rx_ns=2 * MS)  # a second voice: a conflict
    row = view.row("uav1", 2 * MS)
    assert (row.link, row.verdict, row.dropped["foreign"]) == ("UP", "CONFLICT", 1)
    # The host restarted (a new session) after a silence: its own link state, not the old one.
    view.on_world("uav1", RESTARTED, world(1, boot=BOOT + 3 * W), rx_ns=3 * W)
    row = view.row("uav1", 3 * W)
    assert (row.link, row.publisher, row.handovers) == (None, RESTARTED, 1)


def test_what_waits_for_the_loop_is_bounded_in_bytes_too() -> None:
    clock = ManualScheduler(start_ns=0)
    watch = FleetWatch(FleetView(TTL), lambda rows: None, scheduler=clock)
    big = b"x" * 60_000
    for v in range(1000):  # 60 MB of lines for 1,000 vehicles the loop has not taken yet
        watch.offer(f"gizmo/v{v}/world", HOST, big, v, 0)
    assert watch._pending_bytes <= 32 * 1024 * 1024 and watch.dropped == 1000 - 559
    watch.drain()
    assert watch.view.drops()["invalid"] == 559 and watch._pending_bytes == 0


def test_a_row_says_when_it_was_made_and_until_when_its_proceed_holds() -> None:
    """A consumer that reads a row late (from a pipe, after a pause) must be able to tell: the
    row carries the view's clock at its making and its PROCEED's end on that clock (red team
    rt23: rows that waited 6 s read as fresh PROCEEDs, with nothing in them to say so)."""
    view = FleetView(TTL, conflict_ns=W)
    view.on_world("uav1", HOST, world(1), rx_ns=1_000 * MS)  # valid 200 ms from its arrival
    row = view.row("uav1", 1_050 * MS)
    assert row.verdict == "PROCEED"
    assert (row.host_ns, row.valid_until_ns) == (1_050 * MS, 1_200 * MS)
    assert row.to_dict()["valid_until_ns"] == 1_200 * MS
    assert json.loads(row.to_json_line())["host_ns"] == 1_050 * MS
    held = view.row("uav1", 1_300 * MS)  # expired: HOLD, no end to say
    assert held.verdict == "HOLD" and held.valid_until_ns is None and held.host_ns == 1_300 * MS
