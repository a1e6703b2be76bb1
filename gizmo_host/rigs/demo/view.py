"""What ``gizmo-host demo`` shows: the live world model as a plain line (the rich table is the
command's own, ``gizmo_host.cli.demo_table``, drawn from these numbers), or as ``world`` JSON
Lines; and the summary at the end.

Every view reads the same numbers: the newest snapshot and the tally
(:mod:`gizmo_host.rigs.demo.tally`), and the parts' counters (``DemoRig.stats()``), condensed by
:mod:`gizmo_host.rigs.demo.counters`. rich is an optional extra
(``gizmo-host[demo]``); without it the demo prints one line a second.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, TextIO

from fusion import WorldSnapshot
from fusion.geometry import quat_to_euler_zyx
from gizmo_host.rigs.demo.counters import HOST_COUNTERS, host_counters, injected_faults
from gizmo_host.rigs.demo.tally import Tally


def summary(
    tally: Tally, stats: dict[str, Any], *, elapsed_s: float, extra: dict[str, Any]
) -> dict[str, Any]:
    """The end-of-run summary: verdicts, frames, faults against the host's counters, and the
    bearing error against the stand-in's ground truth."""
    host = host_counters(stats["host"])
    board = stats["board"]
    expected = board.get("host", {})
    return {
        "type": "demo_summary",
        **extra,
        "elapsed_s": round(elapsed_s, 3),
        "world": tally.to_dict(),
        "bearing_error_deg": tally.errors.to_dict(),
        "box_centre_bias_deg": tally.box_bias.to_dict(),
        "frames": {
            "board_written": board["frames"].get("written", 0),
            "host_ok": host["frames_ok"],
        },
        "faults": {
            "injected": injected_faults(board),
            "host": {
                name: {"expected": expected.get(name), "counted": host[name]}
                for name in HOST_COUNTERS
            },
        },
    }


def summary_text(data: dict[str, Any]) -> list[str]:
    """The summary as a few lines for a person."""
    world, err = data["world"], data["bearing_error_deg"]
    bias = data["box_centre_bias_deg"]
    reasons = ", ".join(f"{k} x{v}" for k, v in world["hold_reasons"].items()) or "none"
    faults = data["faults"]
    injected = ", ".join(f"{k} {v}" for k, v in faults["injected"].items() if v) or "none"
    counters = ", ".join(
        f"{name} {pair['counted']}" + ("" if pair["expected"] is None else f"/{pair['expected']}")
        for name, pair in faults["host"].items()
    )
    return [
        f"gizmo-host demo: {data['elapsed_s']:.1f} s of {data['scenario']}, first frame after "
        f"{fmt_num(data.get('first_frame_s'), 2)} s, first PROCEED after "
        f"{fmt_num(data.get('first_proceed_s'), 2)} s",
        f"  world snapshots {world['snapshots']}: PROCEED {world['proceed']}, HOLD "
        f"{world['hold']} ({world['hold_episodes']} times after a PROCEED)",
        f"  HOLD reasons seen: {reasons}",
        f"  frames: board wrote {data['frames']['board_written']}, host decoded "
        f"{data['frames']['host_ok']}",
        f"  faults injected: {injected}",
        f"  host counted (board's expectation after /): {counters}",
        f"  bearing error vs ground truth (the line of sight to the target's centre) over "
        f"{err['samples']} captures: p50 "
        f"{fmt_num(err['p50'], 3)}°, p95 {fmt_num(err['p95'], 3)}°, max {fmt_num(err['max'], 3)}°",
        f"  box-centre bias (box centre's ray vs the target's centre): p50 "
        f"{fmt_num(bias['p50'], 3)}°, p95 {fmt_num(bias['p95'], 3)}°, max "
        f"{fmt_num(bias['max'], 3)}°",
    ]


def fmt_num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def fmt_reasons(reasons: tuple[Any, ...]) -> str:
    return ", ".join(r.value for r in reasons)


def status_line(
    snapshot: WorldSnapshot | None, tally: Tally, stats: dict[str, Any], elapsed_s: float
) -> str:
    """One line: the verdict, the selected target, the link and the faults."""
    parts = [f"{elapsed_s:6.1f}s"]
    if snapshot is None:
        parts.append("waiting for the world model")
    else:
        verdict = snapshot.verdict.value
        if snapshot.reasons:
            verdict += f" ({fmt_reasons(snapshot.reasons)})"
        parts.append(verdict)
        for target in snapshot.targets[:2]:
            parts.append(
                f"{target.label} az {fmt_num(target.azimuth_deg)} "
                f"el {fmt_num(target.elevation_deg)} "
                f"range {fmt_num(target.range_m)} m "
                f"({target.range_source.value if target.range_source else '-'}) "
                f"age {fmt_num(target.age_ms, 0)} ms"
            )
    host = host_counters(stats["host"])
    parts.append(
        f"link {host['state']} frames {host['frames_ok']} crc {host['crc_errors']} "
        f"discarded {host['bytes_discarded']} gaps {host['lost']} resets {host['resets']}"
    )
    injected = injected_faults(stats["board"])
    parts.append("faults " + (" ".join(f"{k} {v}" for k, v in injected.items() if v) or "none"))
    return " | ".join(parts)


class View(Protocol):
    """A live view: entered for the run, shown every ``period_s``, then the summary."""

    period_s: float

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> None: ...

    def show(
        self,
        snapshot: WorldSnapshot | None,
        tally: Tally,
        stats: dict[str, Any],
        elapsed_s: float,
        title: str,
    ) -> None: ...

    def final(self, data: dict[str, Any]) -> None: ...


class PlainView:
    """One status line every ``period_s`` (the fallback without rich)."""

    period_s = 1.0

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __enter__(self) -> PlainView:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def show(
        self,
        snapshot: WorldSnapshot | None,
        tally: Tally,
        stats: dict[str, Any],
        elapsed_s: float,
        title: str,
    ) -> None:
        print(status_line(snapshot, tally, stats, elapsed_s), file=self.out, flush=True)

    def final(self, data: dict[str, Any]) -> None:
        for line in summary_text(data):
            print(line, file=self.out, flush=True)


def vehicle_row(snapshot: WorldSnapshot | None) -> list[str]:
    """Position, attitude and speed of the vehicle, as table cells."""
    vehicle = None if snapshot is None else snapshot.vehicle
    if vehicle is None:
        return ["-", "-", "-", "-"]
    n, e, d = vehicle.position_ned_m
    roll, pitch, yaw = (math.degrees(a) for a in quat_to_euler_zyx(vehicle.quaternion_wxyz))
    velocity = vehicle.velocity_ned_m_s
    speed = None if velocity is None else math.sqrt(sum(v * v for v in velocity))
    return [
        f"{n:7.2f} {e:7.2f} {d:7.2f}",
        f"{yaw % 360:6.1f} {pitch:6.1f} {roll:6.1f}",
        fmt_num(speed, 2),
        fmt_num(vehicle.age_ms, 0),
    ]
