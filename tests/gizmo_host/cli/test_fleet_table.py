"""The fleet's live table shows a peer's text as text (red team, rt10): a world line whose
``selected`` was ``"[/x]"`` (rich markup) stopped the table for good, uav1's last PROCEED
standing on the operator's screen after uav1 fell silent; escape sequences from the wire
reached the terminal. Rendered by rich's recording console."""

from __future__ import annotations

from rich.console import Console

from gizmo_host.cli.fleet_table import FleetTable, printable
from gizmo_host.zenoh.fleet_line import WorldLine
from gizmo_host.zenoh.fleet_row import FleetRow


def row(vehicle: str, verdict: str, selected: str, state: str = "fresh") -> FleetRow:
    line = WorldLine(7, 1, None, 250_000_000, verdict, (), selected, (1.0, 2.0, -3.0), None)
    return FleetRow(
        vehicle,
        state,
        verdict,
        None,
        12.0,
        None,
        0,
        None,
        line,
        "UP",
        0,
        None,
        "peer",
        1,
        0,
        {},
        None,
    )  # type: ignore[arg-type]


def test_markup_and_escapes_from_a_peer_are_shown_as_text_and_the_table_goes_on():
    table = FleetTable()
    assert table.live is not None, "rich is installed with the project"
    table.update([row("uav1", "PROCEED", "gizmo:1:car")])
    table.update([row("evil", "HOLD", "[/x]"), row("esc\x1b[2J", "HOLD", "[bold]x\x07")])
    table.update([row("uav1", "HOLD", "gizmo:1:car", state="stale")])  # after the markup
    console = Console(record=True, width=200, color_system=None)
    console.print(table._render())
    text = console.export_text()
    assert "[/x]" in text and "[bold]x\\x07" in text and "esc\\x1b[2J" in text
    assert "\x1b" not in text and "\x07" not in text
    uav1 = next(line for line in text.splitlines() if "uav1" in line)
    assert "stale" in uav1 and "HOLD" in uav1 and "PROCEED" not in uav1


def test_printable_escapes_only_what_a_terminal_would_act_on():
    assert printable("gizmo:1:car") == "gizmo:1:car"
    assert printable("a\x1b[31mb") == "a\\x1b[31mb"
    assert printable("\u2028") == "\\x2028" and printable(3.5) == "3.5"
