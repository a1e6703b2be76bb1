"""The demo's live table with rich (``pip install 'gizmo-host[demo]'``), refreshed in place.

Imported only when rich is installed. The loop calls :meth:`RichView.show` a few times a
second (no refresh thread: ``auto_refresh`` is off). On a terminal the table is redrawn in
place; into a file or a pipe rich prints the last table once, at the end.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from fusion import Decision, WorldSnapshot
from gizmo_host.app.demo_tally import Tally
from gizmo_host.app.demo_view import (
    fmt_num,
    fmt_reasons,
    host_counters,
    injected_faults,
    summary_text,
    vehicle_row,
)

_LINK_LABELS = (
    ("state", "link state"),
    ("clock", "device clock"),
    ("frames_ok", "frames ok"),
    ("crc_errors", "CRC errors"),
    ("header_errors", "header errors"),
    ("bytes_discarded", "bytes discarded"),
    ("lost", "gaps (frames lost)"),
    ("duplicates", "duplicates"),
    ("resets", "device resets"),
    ("disconnects", "disconnects"),
)


def _verdict(snapshot: WorldSnapshot | None) -> Text:
    if snapshot is None:
        return Text("waiting for the world model", style="yellow")
    if snapshot.verdict is Decision.PROCEED:
        return Text(" PROCEED ", style="bold black on green")
    text = Text(" HOLD ", style="bold white on red")
    text.append(f"  {fmt_reasons(snapshot.reasons)}", style="red")
    return text


def _table(title: str) -> Table:
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, title_style="bold")


def _targets(snapshot: WorldSnapshot | None, tally: Tally) -> Table:
    table = _table("Targets (bearing from the camera, NED)")
    table.add_column("target", no_wrap=True)
    table.add_column("verdict")
    for name in ("az °", "el °", "truth az/el °", "err °", "range m"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("range source")
    table.add_column("age ms", justify="right")
    for target in () if snapshot is None else snapshot.targets:
        truth = tally.target_truth.get(target.key)
        verdict = target.verdict.value
        if target.reasons:
            verdict += f": {fmt_reasons(target.reasons)}"
        table.add_row(
            target.label,
            Text(verdict, style="green" if target.verdict is Decision.PROCEED else "red"),
            fmt_num(target.azimuth_deg, 2),
            fmt_num(target.elevation_deg, 2),
            "-"
            if truth is None
            else f"{fmt_num(truth.azimuth_deg, 2)} / {fmt_num(truth.elevation_deg, 2)}",
            "-" if truth is None else fmt_num(truth.error_deg, 3),
            fmt_num(target.range_m, 2),
            target.range_source.value if target.range_source else "-",
            fmt_num(target.age_ms, 0),
        )
    return table


def _counters(stats: dict[str, Any], scheduled: frozenset[str]) -> Table:
    grid = Table.grid(padding=(0, 2))
    link = _table("Link and parser (host)")
    link.add_column("counter")
    link.add_column("value", justify="right")
    host = host_counters(stats["host"])
    for key, label in _LINK_LABELS:
        link.add_row(label, str(host[key]))
    faults = _table("Board (emulator)")
    faults.add_column("frames and faults injected")
    faults.add_column("count", justify="right")
    board = stats["board"]
    faults.add_row("frames written", str(board["frames"].get("written", 0)))
    faults.add_row("frames not detected", str(board["frames"].get("not_detected", 0)))
    shown = [(k, n) for k, n in injected_faults(board).items() if n or k in scheduled]
    for kind, count in shown:
        faults.add_row(f"fault: {kind}", str(count), style=None if count else "dim")
    if not shown:
        faults.add_row("faults", "none (--faults)", style="dim")
    grid.add_row(link, faults)
    return grid


class RichView:
    """The table, redrawn in place by :meth:`show`."""

    period_s = 0.25

    def __init__(
        self, console: Console | None = None, scheduled: frozenset[str] = frozenset()
    ) -> None:
        """``scheduled``: the fault kinds on the timeline (shown even before they happen)."""
        self.console = console or Console()
        self.scheduled = scheduled
        self._live = Live(console=self.console, auto_refresh=False, transient=False)

    def __enter__(self) -> RichView:
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.stop()

    def show(
        self,
        snapshot: WorldSnapshot | None,
        tally: Tally,
        stats: dict[str, Any],
        elapsed_s: float,
        title: str,
    ) -> None:
        header = Text(f"{title}  {elapsed_s:6.1f} s  ", style="bold")
        header.append_text(_verdict(snapshot))
        vehicle = _table("Vehicle (pose, NED)")
        for name in ("position N E D m", "yaw pitch roll °", "speed m/s", "age ms"):
            vehicle.add_column(name, justify="right")
        vehicle.add_row(*vehicle_row(snapshot))
        counts = Text(
            f"world snapshots {tally.snapshots}: PROCEED {tally.proceed}, HOLD {tally.hold}; "
            f"bearing error p50 {fmt_num(tally.errors.percentile(0.5), 3)}°, "
            f"p95 {fmt_num(tally.errors.percentile(0.95), 3)}° over {tally.errors.count}",
            style="dim",
        )
        body = Group(
            header,
            vehicle,
            _targets(snapshot, tally),
            _counters(stats, self.scheduled),
            counts,
        )
        self._live.update(body, refresh=True)

    def final(self, data: dict[str, Any]) -> None:
        self.console.print()
        for line in summary_text(data):
            self.console.print(line, highlight=False, markup=False)
