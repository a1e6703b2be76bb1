"""The demo's rich table at the terminal widths people have: whole at 80 columns (the lowest
priority columns dropped, a HOLD's reasons stacked under its verdict), everything at 120.

Rendered by rich's recording console, no process, no terminal.
"""

from __future__ import annotations

import pytest
from rich.console import Console

from fusion import TargetState, WorldSnapshot
from fusion.ranging import RangeSource
from fusion.snapshot import VehicleState
from gizmo_core import Decision, HoldReason
from gizmo_host.cli.demo_table import RichView
from gizmo_host.rigs.demo.tally import Tally, TargetTruth

BOARD = {
    "frames": {"written": 1234, "not_detected": 5},
    "faults": {"hangup": {"events": 2}, "garbage": {"bursts": 17}},
}
LINK = {"state": "UP", "frames_ok": 1200, "crc_errors": 3, "header_errors": 1}
HOST = {
    "link": {**LINK, "bytes_discarded": 17880, "disconnects": 2},
    "clock": {"status": "locked"},
    "sources": {"gizmo": {"lost": 999, "duplicates": 0, "resets": 24, "discontinuities": 0}},
}


def target(label: str, verdict: Decision, reasons: tuple[HoldReason, ...]) -> TargetState:
    return TargetState(
        key=f"gizmo:1:{label}", result_type=1, id=11, label=label, confidence=90, tracked=True,
        capture_ns=1, age_ms=1234.0, verdict=verdict, reasons=reasons,
        bearing_camera=(1.0, 0.0, 0.0), bearing_ned=(0.0, -0.7, 0.7), azimuth_deg=271.25,
        elevation_deg=-43.65, angular_size_deg=(2.0, 1.0), position_ned_m=(1.0, 2.0, 0.0),
        range_m=14.41, range_source=RangeSource.GROUND_PLANE,
    )  # fmt: skip


def snapshot() -> WorldSnapshot:
    held = (HoldReason.CLOCK_NOT_LOCKED, HoldReason.POSE_STALE, HoldReason.DEVICE_RESET)
    vehicle = VehicleState(1, 1, 8.0, 0, (9.23, 3.85, -10.0), (1.0, 0.0, 0.0, 0.0), (2.0, 0, 0))
    return WorldSnapshot(
        seq=7, host_ns=1, valid_until_ns=2, verdict=Decision.HOLD, reasons=held,
        selected="gizmo:1:pedestrian", vehicle=vehicle, sources={},
        targets=(target("pedestrian", Decision.HOLD, held), target("car", Decision.PROCEED, ())),
    )  # fmt: skip


def render(width: int) -> list[str]:
    console = Console(record=True, width=width, height=24, color_system=None)
    tally = Tally()
    tally.target_truth["gizmo:1:pedestrian"] = TargetTruth(270.19, -42.88, 14.2, 1.032)
    view = RichView(console, scheduled=frozenset({"hangup"}))
    stats = {"host": HOST, "board": BOARD}
    console.print(view.render(snapshot(), tally, stats, 12.5, "gizmo-host demo · orbit"))
    return console.export_text().splitlines()


def targets_part(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith("Targets"))
    end = next(i for i, line in enumerate(lines) if line.startswith("Vehicle"))
    return lines[start:end]


@pytest.mark.parametrize("width", [80, 120])
def test_the_table_is_whole_at_the_terminal_width(width):
    lines = render(width)
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    assert not any("…" in line for line in lines), [line for line in lines if "…" in line]
    table = "\n".join(targets_part(lines))
    # the first priorities, readable: verdict, bearing error, range and age (with their values)
    for text in ("verdict", "err °", "range m", "age ms", "HOLD", "PROCEED", "1.032", "14.41"):
        assert text in table, (text, table)
    assert "1234" in table  # the age, whole
    for reason in ("clock_not_locked", "pose_stale", "device_reset"):
        assert reason in table, (reason, table)
    assert "disconnects" in "\n".join(lines) and "17880" in "\n".join(lines)


def test_wide_shows_every_column_and_narrow_drops_the_least_important_first():
    wide = "\n".join(targets_part(render(120)))
    columns = ("az °", "el °", "truth az/el °", "range source")
    for text in (*columns, "270.19 / -42.88", "ground_plane"):
        assert text in wide, text
    narrow = "\n".join(targets_part(render(80)))
    assert "truth az/el" not in narrow  # the lowest priority goes first
    assert "az °" in narrow or "range source" not in narrow  # bearing outlives the range source
