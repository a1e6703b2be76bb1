"""The demo's live table with rich (``pip install 'gizmo-host[demo]'``), refreshed in place.

Imported only when rich is installed. The loop calls :meth:`RichView.show` a few times a
second (no refresh thread: ``auto_refresh`` is off). On a terminal the table is redrawn in
place; into a file or a pipe rich prints the last table once, at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from rich import box
from rich.cells import cell_len
from rich.console import Console, Group, JustifyMethod
from rich.live import Live
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from fusion import TargetState, WorldSnapshot
from gizmo_core import Decision
from gizmo_host.rigs.demo.counters import host_counters, injected_faults
from gizmo_host.rigs.demo.tally import Tally, TargetTruth
from gizmo_host.rigs.demo.view import fmt_num, fmt_reasons, summary_text, vehicle_row

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


class _Column(NamedTuple):
    """A targets column; ``rank`` orders what a narrow terminal drops first (highest first)."""

    header: str
    rank: int
    cell: Callable[[TargetState, TargetTruth | None], str | Text]
    justify: JustifyMethod = "right"


def _verdict_cell(target: TargetState, truth: TargetTruth | None) -> Text:
    verdict = target.verdict.value
    if target.reasons:
        verdict += f": {fmt_reasons(target.reasons)}"
    return Text(verdict, style="green" if target.verdict is Decision.PROCEED else "red")


def _truth_cell(target: TargetState, truth: TargetTruth | None) -> str:
    if truth is None:
        return "-"
    return f"{fmt_num(truth.azimuth_deg, 2)} / {fmt_num(truth.elevation_deg, 2)}"


# In display order. Rank 0 is always shown; then the verdict, the bearing error, range and age
# (rank 1) outlive the bearing (2), the range's source (3) and the truth's own bearing (4).
_TARGET_COLUMNS = (
    _Column("target", 0, lambda t, _: t.label, "left"),
    _Column("verdict", 0, _verdict_cell, "left"),
    _Column("az °", 2, lambda t, _: fmt_num(t.azimuth_deg, 2)),
    _Column("el °", 2, lambda t, _: fmt_num(t.elevation_deg, 2)),
    _Column("truth az/el °", 4, _truth_cell),
    _Column("err °", 1, lambda _, tr: "-" if tr is None else fmt_num(tr.error_deg, 3)),
    _Column("range m", 1, lambda t, _: fmt_num(t.range_m, 2)),
    _Column(
        "range source", 3, lambda t, _: t.range_source.value if t.range_source else "-", "left"
    ),
    _Column("age ms", 1, lambda t, _: fmt_num(t.age_ms, 0)),
)
_VERDICT_MIN_WIDTH = 7  # "PROCEED"; a HOLD's reasons wrap under it (stacked) when narrow
_UNBOUNDED = 10_000  # measure at this width: rich clamps a minimum to the width it is given


def _targets_with(
    columns: Sequence[_Column], snapshot: WorldSnapshot | None, tally: Tally
) -> Table:
    rows = [
        [column.cell(target, tally.target_truth.get(target.key)) for column in columns]
        for target in (() if snapshot is None else snapshot.targets)
    ]
    table = _table("Targets (bearing from the camera, NED)")
    for index, column in enumerate(columns):
        if column.header == "verdict":
            table.add_column(column.header, min_width=_VERDICT_MIN_WIDTH, overflow="fold")
            continue
        # rich measures a no_wrap column by its longest word; its whole width is the minimum
        widest = max(
            [cell_len(column.header)]
            + [cell_len(c) if isinstance(c := row[index], str) else c.cell_len for row in rows]
        )
        table.add_column(column.header, justify=column.justify, no_wrap=True, min_width=widest)
    for row in rows:
        table.add_row(*row)
    return table


def _min_width(console: Console, table: Table) -> int:
    return Measurement.get(console, console.options.update_width(_UNBOUNDED), table).minimum


def targets_table(
    console: Console, width: int, snapshot: WorldSnapshot | None, tally: Tally
) -> Table:
    """The targets table with as many columns as fit ``width``: the lowest-priority columns go
    first, and a HOLD's reasons wrap under its verdict, so no cell is cut to "…"."""
    table = _targets_with(_TARGET_COLUMNS, snapshot, tally)
    for rank in sorted({c.rank for c in _TARGET_COLUMNS}, reverse=True):
        if _min_width(console, table) <= width:
            break
        table = _targets_with([c for c in _TARGET_COLUMNS if c.rank < rank], snapshot, tally)
    return table


def _counters(
    console: Console, width: int, stats: dict[str, Any], scheduled: frozenset[str]
) -> Table:
    """The host's counters beside the board's (stacked when they do not fit side by side)."""
    link = _table("Link and parser (host)")
    link.add_column("counter")
    link.add_column("value", justify="right")
    host = host_counters(stats["host"])
    for key, label in _LINK_LABELS:
        link.add_row(label, str(host[key]))
    faults = _table("Board (emulator)")
    faults.add_column("injected")
    faults.add_column("count", justify="right")
    board = stats["board"]
    faults.add_row("frames written", str(board["frames"].get("written", 0)))
    faults.add_row("frames not detected", str(board["frames"].get("not_detected", 0)))
    shown = [(k, n) for k, n in injected_faults(board).items() if n or k in scheduled]
    for kind, count in shown:
        faults.add_row(f"fault: {kind}", str(count), style=None if count else "dim")
    if not shown:
        faults.add_row("faults", "none (--faults)", style="dim")
    grid = Table.grid(padding=(0, 2))
    grid.add_row(link, faults)
    if _min_width(console, grid) > width:
        grid = Table.grid()
        grid.add_row(link)
        grid.add_row(faults)
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
        self._live.update(self.render(snapshot, tally, stats, elapsed_s, title), refresh=True)

    def render(
        self,
        snapshot: WorldSnapshot | None,
        tally: Tally,
        stats: dict[str, Any],
        elapsed_s: float,
        title: str,
    ) -> Group:
        """The whole view, fitted to the console's width as it is now (terminals get resized)."""
        width = self.console.width
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
        return Group(
            header,
            targets_table(self.console, width, snapshot, tally),
            vehicle,
            _counters(self.console, width, stats, self.scheduled),
            counts,
        )

    def final(self, data: dict[str, Any]) -> None:
        self.console.print()
        for line in summary_text(data):
            self.console.print(line, highlight=False, markup=False)
