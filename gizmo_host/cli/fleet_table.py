"""The fleet's live table (``gizmo-host fleet``, ``gizmo-host demo --vehicles N --zenoh``):
one row per vehicle, rich when installed, else one plain line per change."""

from __future__ import annotations

from typing import Any


class FleetTable:
    """The live table (rich), or one plain line per change without rich."""

    def __init__(self) -> None:
        self.rows: dict[str, Any] = {}
        try:
            from rich.live import Live  # noqa: PLC0415 - the demo extra

            self.live: Any = Live(self._render(), refresh_per_second=4)
        except ImportError:
            self.live = None

    def __enter__(self) -> None:
        if self.live is not None:
            self.live.__enter__()

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def update(self, rows: list[Any]) -> None:
        for row in rows:
            self.rows[row.vehicle] = row
            if self.live is None:
                print(" ".join(printable(c) for c in _cells(row)), flush=True)
        if self.live is not None:
            self.live.update(self._render())

    def _render(self) -> Any:
        from rich.table import Table  # noqa: PLC0415
        from rich.text import Text  # noqa: PLC0415

        table = Table(title="gizmo-host fleet")
        for name in ("vehicle", "state", "verdict", "target", "az/el °", "speed m/s",
                     "position NED m", "age ms", "link", "lost"):  # fmt: skip
            table.add_column(name)
        for row in self.rows.values():
            cells = _cells(row)
            style = (
                "green" if row.verdict == "PROCEED"
                else "yellow" if row.state == "fresh" and row.verdict == "HOLD"
                else "red"
            )  # fmt: skip
            # Text, never markup: a peer's "[/x]" once stopped the table for good, its
            # last PROCEED standing on the operator's screen (red team, rt10).
            table.add_row(*[Text(printable(c)) for c in cells], style=style)
        return table


def _cells(row: Any) -> list[Any]:
    line = row.line
    target = line.target or {}
    bearing = "-"
    if target.get("azimuth_deg") is not None and target.get("elevation_deg") is not None:
        bearing = f"{target['azimuth_deg']:.1f}/{target['elevation_deg']:.1f}"
    position = line.position_ned_m
    where = "-" if position is None else ",".join(f"{v:.1f}" for v in position)
    verdict = row.verdict + (f" ({row.reason})" if row.reason else "")
    speed = target.get("speed_m_s")
    return [row.vehicle, row.state, verdict, line.selected or "-", bearing,
            "-" if speed is None else f"{speed:.1f}", where, f"{row.age_ms:.0f}",
            row.link or "-", row.lost]  # fmt: skip


def printable(value: object) -> str:
    """A cell's text as a terminal shows it: control characters (a peer's escape sequences,
    which would move the cursor or recolour the screen) written as escapes."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
