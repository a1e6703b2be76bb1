"""The fleet view's judgement, on the viewer's own clock: fresh, stale, and what may be shown."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from gizmo_host.cli.main import main
from gizmo_host.timing import ManualScheduler, settle
from gizmo_host.zenoh.fleet import FleetRow, FleetView
from gizmo_host.zenoh.watch import FleetWatch
from tests.support.fleet_peers import world_line
from tests.support.schemas import validate_message

MS = 1_000_000
TTL = 250 * MS
HOST = "a1"  # the vehicle's own publisher (a Zenoh identity)
WALL = 1_780_000_000 * 10**9


def world(seq: int, verdict: str = "PROCEED", valid_ms: int = 200, **fields: Any) -> bytes:
    """A world line as its host wrote it: its own clock (host_ns) means nothing here."""
    host_ns = 9_000_000_000_000 + seq * 20 * MS
    line = world_line(seq, host_ns, WALL + seq * 20 * MS, verdict, valid_ms)
    return json.dumps({**line, **fields}).encode()


def test_a_vehicle_turns_stale_after_its_ttl_with_nothing_arriving() -> None:
    view = FleetView(TTL)
    view.on_world("uav1", HOST, world(1), rx_ns=1000 * MS)
    assert view.row("uav1", 1000 * MS + TTL).state == "fresh"
    stale = view.row("uav1", 1000 * MS + TTL + 1)
    assert (stale.state, stale.verdict, stale.reason) == ("stale", "HOLD", "stale")
    assert stale.line.verdict == "PROCEED"  # the last line is kept, never shown as current
    validate_message(stale.to_dict())


def test_a_proceed_expires_by_its_own_validity_counted_from_its_arrival() -> None:
    view = FleetView(TTL)
    view.on_world("uav1", HOST, world(1, valid_ms=100), rx_ns=0)
    row = view.row("uav1", 40 * MS)
    assert (row.verdict, row.valid_ms) == ("PROCEED", 60.0)
    assert view.row("uav1", 100 * MS).verdict == "PROCEED"
    row = view.row("uav1", 100 * MS + 1)
    assert (row.state, row.verdict, row.reason, row.valid_ms) == ("fresh", "HOLD", "expired", None)


def test_a_hold_line_is_shown_as_hold_without_a_reason_of_the_view() -> None:
    view = FleetView(TTL)
    view.on_world("uav1", HOST, world(1, verdict="HOLD"), rx_ns=0)
    row = view.row("uav1", 0)
    assert row[1:4] == ("fresh", "HOLD", None) and row.to_dict()["reasons"] == ["stale"]


def test_a_tracked_targets_speed_is_in_its_row() -> None:
    """The selected target's velocity (issue 27) reaches the row with its norm; a velocity
    out of range or malformed makes the line invalid, counted, not shown."""
    line = json.loads(world(3))
    line["targets"][0]["velocity_ned_m_s"] = [3.0, -4.0, 0.0]
    view = FleetView(TTL)
    view.on_world("uav1", HOST, json.dumps(line).encode(), rx_ns=0)
    row = view.row("uav1", 0).to_dict()
    validate_message(row)
    assert row["target"]["velocity_ned_m_s"] == [3.0, -4.0, 0.0]
    assert row["target"]["speed_m_s"] == 5.0
    line["seq"] = 4
    line["targets"][0]["velocity_ned_m_s"] = [1e9, 0.0, 0.0]
    view.on_world("uav1", HOST, json.dumps(line).encode(), rx_ns=MS)
    assert view.row("uav1", MS).dropped["invalid"] == 1


def test_the_row_is_compact_and_says_what_the_line_said() -> None:
    view = FleetView(TTL)
    view.on_world("uav1", HOST, world(7), rx_ns=0, rx_wall_ns=WALL + 7 * 20 * MS + 3 * MS)
    row = view.row("uav1", 10 * MS).to_dict()
    validate_message(row)
    assert row["seq"] == 7 and row["said"] == "PROCEED" and row["delay_ms"] == 3.0
    assert row["position_ned_m"] == [10.0, 20.0, -30.0] and row["selected"] == "1:5:11"
    assert row["target"] == {
        "key": "1:5:11", "label": "PEDESTRIAN", "position_ned_m": [16.0, 28.0, 0.0],
        "azimuth_deg": 53.13, "elevation_deg": -0.5, "range_m": 10.0,
        "velocity_ned_m_s": None, "speed_m_s": None,
    }  # fmt: skip
    assert (row["publisher"], row["publishers"], row["handovers"]) == (HOST, 1, 0)
    assert len(json.dumps(row)) < 700  # not the world line (1.6 kB here, 30 kB with 64 targets)


def test_the_next_deadline_is_the_earliest_change_without_input() -> None:
    view = FleetView(TTL)
    view.on_world("a", HOST, world(1, valid_ms=100), rx_ns=0)  # PROCEED until 100 ms
    view.on_world("b", HOST, world(1, verdict="HOLD"), rx_ns=50 * MS)  # stale after 300 ms
    assert view.next_deadline_ns() == 100 * MS + 1
    assert view.due(100 * MS) == []
    assert view.due(100 * MS + 1) == ["a"]
    assert view.next_deadline_ns() == TTL + 1
    assert view.due(TTL + 1) == ["a"]
    assert view.next_deadline_ns() == 50 * MS + TTL + 1
    assert view.due(10**12) == ["b"] and view.next_deadline_ns() is None


def test_changes_are_reported_once_and_lost_lines_counted() -> None:
    view = FleetView(TTL)
    view.on_world("uav1", HOST, world(1), rx_ns=0)
    view.on_world("uav2", HOST, world(1), rx_ns=0)
    assert view.changed("uav3", 0) is None  # unknown
    row = view.changed("uav1", 0)
    assert row is not None
    view.mark(row)
    assert view.changed("uav1", 0) is None
    view.on_world("uav1", HOST, world(2), rx_ns=20 * MS)
    assert view.changed("uav1", 20 * MS) is None  # same verdict, same target: nothing to say
    view.on_world("uav1", HOST, world(5, verdict="HOLD"), rx_ns=40 * MS)
    row = view.changed("uav1", 40 * MS)
    assert row is not None and (row.verdict, row.lost) == ("HOLD", 2)


def test_lines_arriving_regularly_but_late_are_fresh_by_receive_time_alone() -> None:
    """Receive time cannot see a transport delay: a publisher delayed 300 ms in transit but
    steady looks fresh. The wall clocks can, when the operator vouches for them."""
    late = WALL + 20 * MS + 300 * MS  # world(1)'s wall_ns + 300 ms
    blind = FleetView(TTL)
    blind.on_world("uav1", HOST, world(1), rx_ns=0, rx_wall_ns=late)
    row = blind.row("uav1", 0)
    assert (row.state, row.verdict, row.delay_ms) == ("fresh", "PROCEED", 300.0)

    seeing = FleetView(TTL, max_clock_error_ns=20 * MS)
    seeing.on_world("uav1", HOST, world(1), rx_ns=0, rx_wall_ns=late)
    row = seeing.row("uav1", 0)
    assert (row.state, row.verdict, row.reason, row.age_ms) == ("stale", "HOLD", "stale", 280.0)
    # Within the bound the clocks are not believed over the receive time.
    seeing.on_world("uav1", HOST, world(2), rx_ns=10 * MS, rx_wall_ns=WALL + 40 * MS + 15 * MS)
    assert seeing.row("uav1", 10 * MS)[1:5] == ("fresh", "PROCEED", None, 0.0)
    # 100 ms late, 80 ms beyond the bound: it turns stale 80 ms before its TTL.
    seeing.on_world("uav1", HOST, world(3), rx_ns=20 * MS, rx_wall_ns=WALL + 60 * MS + 100 * MS)
    assert seeing.row("uav1", 20 * MS + TTL - 80 * MS).state == "fresh"
    assert seeing.row("uav1", 20 * MS + TTL - 80 * MS + 1).state == "stale"


def test_delayed_publisher_goes_stale_on_time_and_fresh_again_on_its_next_line() -> None:
    """A publisher whose lines stop arriving (a delay, an outage): the watch reports it stale
    exactly at TTL after its last line, with no input, then fresh at the next line; its
    PROCEED is HOLD while stale. Manual clock: the times are exact."""

    async def main() -> None:
        clock = ManualScheduler(start_ns=0)
        reported: list[tuple[int, FleetRow]] = []
        watch = FleetWatch(
            FleetView(TTL),
            lambda rows: reported.extend((clock.now_ns(), r) for r in rows),
            refresh_s=10.0,
            scheduler=clock,
            clock=clock.now_ns,
        )
        for seq in range(1, 6):  # 50 Hz for 100 ms
            watch.offer("gizmo/uav1/world", HOST, world(seq), clock.now_ns(), 0)
            watch.drain()
            clock.advance(20 * MS)
        last_rx = 80 * MS
        clock.advance(1000 * MS)  # the publisher is delayed for a second
        await settle()
        stale = [(t, r) for t, r in reported if r.state == "stale"]
        assert stale and stale[0][0] == last_rx + TTL + 1
        assert stale[0][1].verdict == "HOLD" and stale[0][1].age_ms <= (TTL + 100 * MS) / 1e6
        watch.offer("gizmo/uav1/world", HOST, world(60), clock.now_ns(), 0)
        watch.drain()
        _, row = reported[-1]
        assert (row.state, row.verdict, row.lost) == ("fresh", "PROCEED", 54)
        watch.offer("gizmo/uav1/link", HOST, b'{"type":"link","state":"UP"}', clock.now_ns(), 0)
        watch.offer("gizmo/uav1/world", HOST, b"not json", clock.now_ns(), 0)
        watch.drain()
        stats = watch.stats()
        assert (stats["samples"], stats["dropped"], stats["invalid"], stats["vehicles"]) == (
            8, 0, 1, 1,
        )  # fmt: skip
        assert watch.view.row("uav1", clock.now_ns()).link == "UP"

    asyncio.run(main())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ttl-ms", "soon"], "gizmo-host fleet: --ttl-ms: expected milliseconds"),
        (["--ttl-ms", "0"], "gizmo-host fleet: --ttl-ms: expected milliseconds"),
        (["--conflict-ms", "0"], "gizmo-host fleet: --conflict-ms: expected milliseconds"),
        (["--conflict-ms", "200"], "gizmo-host fleet: --conflict-ms: expected at least --ttl"),
        (["--max-line-bytes", "10"], "gizmo-host fleet: --max-line-bytes: expected an integer"),
        (["--duration", "-1"], "gizmo-host fleet: --duration: expected seconds > 0"),
        (["--connect", "127.0.0.1:7447"], "gizmo-host fleet: --connect: expected endpoints"),
        (["--mode", "client"], "gizmo-host fleet: --connect: expected a router's endpoint"),
        (["--max-clock-error-ms", "-1"], "gizmo-host fleet: --max-clock-error-ms: expected"),
        (["--zenoh-config", "/nonexistent.json5"], "gizmo-host fleet: --zenoh-config: cannot"),
    ],
)
def test_a_bad_fleet_option_is_one_line_and_status_2(capsys, args, message) -> None:
    assert main(["fleet", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_a_zenoh_config_file_that_zenoh_refuses_is_one_line(capsys, tmp_path) -> None:
    path = tmp_path / "zenoh.json5"
    path.write_text("{ mode: 'client', no_such_key: 1 }")
    assert main(["fleet", "--zenoh-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gizmo-host fleet: --zenoh-config: cannot use") and "no_such_key" in err
    assert err.count("\n") == 1


def test_demo_zenoh_options_are_checked(capsys) -> None:
    assert main(["demo", "--vehicles", "3"]) == 2
    assert "--vehicles: only with --zenoh" in capsys.readouterr().err
    assert main(["demo", "--zenoh", "--vehicles", "99"]) == 2
    assert "--vehicles: expected an integer 1..20" in capsys.readouterr().err
