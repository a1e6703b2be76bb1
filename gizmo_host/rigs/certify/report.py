"""The certification report: figures over every run, the verdict, Markdown and JSON.

Percentiles are nearest-rank. The run passes when no PROCEED was wrong, every HOLD came within
its budget, every fault was recovered from (a PROCEED within the recovery window while the
vehicle stayed in view: a HOLD that never ends is a fault too), the verdict was PROCEED at
least ``AVAILABILITY_MIN`` (90%, for the standard matrix: a denser one asks for less) of the
time the vehicle was in view in every scenario, and the host
counted exactly what the emulator injected, in every run.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gizmo_host.rigs.certify.judge import BEARING_BOUND_DEG, RECOVERY_WINDOW_S, RunResult
from gizmo_host.rigs.certify.plan import FAULT_CLASSES, HOLD_BUDGET_S, MUST_HOLD, TTL_S

AVAILABILITY_MIN = 0.9


def percentile(values: Sequence[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def spread(values: Sequence[float]) -> dict[str, float | int | None]:
    finite = [v for v in values if math.isfinite(v)]
    return {
        "n": len(values),
        "p50": _round(percentile(finite, 0.5)),
        "p95": _round(percentile(finite, 0.95)),
        "max": _round(max(values)) if values else None,
    }


def _round(value: float | None, digits: int = 3) -> float | None:
    if value is None:
        return None
    return round(value, digits) if math.isfinite(value) else value


@dataclass(frozen=True, slots=True)
class Setup:
    """What a reader needs to run it again."""

    version: str
    command: str
    scenarios: tuple[str, ...]
    faults: tuple[str, ...]
    seeds: tuple[int, ...]
    spacing_s: float
    parallel: int
    elapsed_s: float
    availability_min: float = AVAILABILITY_MIN


def summarize(results: Sequence[RunResult], setup: Setup) -> dict[str, Any]:
    def pooled(name: str, of: Iterable[RunResult]) -> list[float]:
        return [v for r in of for v in getattr(r, name)]

    def by_class(name: str) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for r in results:
            for cls, values in getattr(r, name).items():
                out.setdefault(cls, []).extend(values)
        return out

    latency = by_class("hold_latency_s")
    over = {c: sum(v > HOLD_BUDGET_S for v in vs) for c, vs in latency.items()}
    wrong = [
        {"scenario": r.scenario, "seed": r.seed, **w._asdict()} for r in results for w in r.wrong
    ]
    mismatches = [
        {"scenario": r.scenario, "seed": r.seed, "counters": r.mismatches}
        for r in results
        if r.mismatches
    ]
    accuracy = {}
    for scenario in setup.scenarios:
        runs = [r for r in results if r.scenario == scenario]
        visible = sum(r.visible_s for r in runs)
        accuracy[scenario] = {
            "bearing_deg": spread(pooled("bearing_deg", runs)),
            "beyond_bias_deg": spread(pooled("beyond_bias_deg", runs)),
            "position_m": spread(pooled("position_m", runs)),
            "capture_ms": spread([abs(v) for v in pooled("capture_ms", runs)]),
            "availability": round(sum(r.proceed_s for r in runs) / visible, 4) if visible else None,
        }
    unrecovered = [
        {"scenario": r.scenario, "seed": r.seed, "fault": name, "end_s": end_s}
        for r in results
        for name, end_s in r.unrecovered
    ]
    short = {
        scenario: row["availability"]
        for scenario, row in accuracy.items()
        if isinstance(row["availability"], float) and row["availability"] < setup.availability_min
    }
    passed = not wrong and not mismatches and not any(over.values())
    passed = passed and not unrecovered and not short
    return {
        "type": "certify",
        "passed": passed,
        "setup": {
            "version": setup.version,
            "python": platform.python_version(),
            "command": setup.command,
            "scenarios": list(setup.scenarios),
            "faults": {name: FAULT_CLASSES[name].to_dict() for name in setup.faults},
            "seeds": list(setup.seeds),
            "spacing_s": setup.spacing_s,
            "parallel": setup.parallel,
            "elapsed_s": round(setup.elapsed_s, 1),
            "host": {"ttl_ms": TTL_S * 1000, "select": "the ground vehicle's class"},
            "bounds": {
                "bearing_beyond_box_bias_deg": BEARING_BOUND_DEG,
                "position_m": "max(1, 0.1 x range) off the vehicle's box",
                "age_s": TTL_S,
                "hold_budget_s": round(HOLD_BUDGET_S, 3),
                "recovery_window_s": RECOVERY_WINDOW_S,
                "availability_min": setup.availability_min,
            },
        },
        "runs": len(results),
        "wrong_proceeds": wrong,
        "counter_mismatches": mismatches,
        "unrecovered": unrecovered,
        "availability_short": short,
        "hold_latency_s": {c: {**spread(v), "over_budget": over[c]} for c, v in latency.items()},
        "recovery_s": {c: spread(v) for c, v in by_class("recovery_s").items()},
        "accuracy": accuracy,
        "counters": [
            {"scenario": r.scenario, "seed": r.seed, "injected": r.injected} for r in results
        ],
        "longest_holds": [
            {
                "scenario": r.scenario,
                "seed": r.seed,
                "start_s": r.longest_hold[0],
                "length_s": r.longest_hold[1],
                "reasons": list(r.longest_hold[2]),
            }
            for r in results
            if r.longest_hold is not None
        ],
    }


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "never"
    return str(value)


def markdown(summary: dict[str, Any], plots: Sequence[str]) -> str:
    setup = summary["setup"]
    budget = setup["bounds"]["hold_budget_s"]
    lines = [
        "# gizmo-host HIL certification",
        "",
        f"**{'PASS' if summary['passed'] else 'FAIL'}**: {summary['runs']} runs "
        f"({len(setup['scenarios'])} scenarios x {len(setup['faults'])} fault classes x "
        f"{len(setup['seeds'])} seeds) through the real host over a pty and loopback UDP, "
        f"in {setup['elapsed_s']} s.",
        "",
        f"- wrong PROCEEDs: **{len(summary['wrong_proceeds'])}** (must be 0)",
        f"- runs whose host counters differ from the emulator's: "
        f"**{len(summary['counter_mismatches'])}** (must be 0)",
        f"- HOLDs later than the budget ({budget} s): "
        f"**{sum(v['over_budget'] for v in summary['hold_latency_s'].values())}** (must be 0)",
        f"- faults with no PROCEED within {setup['bounds']['recovery_window_s']} s after, the "
        f"vehicle in view: **{len(summary['unrecovered'])}** (must be 0)",
        f"- scenarios with an availability under "
        f"{100 * setup['bounds']['availability_min']:.0f}%: "
        f"**{len(summary['availability_short'])}** (must be 0)",
        "",
        f"gizmo-host {setup['version']}, Python {setup['python']}; `{setup['command']}`; "
        f"seeds {', '.join(map(str, setup['seeds']))}; faults {setup['spacing_s']} s apart "
        f"after a 3 s warm-up; host TTL {setup['host']['ttl_ms']:.0f} ms, verdict about "
        f"{setup['host']['select']}. A PROCEED is wrong when its target is not in the "
        f"stand-in's image at its capture, its data is older than the TTL, its bearing is "
        f"more than {setup['bounds']['bearing_beyond_box_bias_deg']}° off the line of sight "
        f"beyond the box-centre bias, or its position is more than "
        f"{setup['bounds']['position_m']}.",
        "",
        f"## HOLD latency per fault class (s, budget {budget})",
        "",
        "| fault | n | p50 | p95 | max | over budget |",
        "|---|---|---|---|---|---|",
    ]
    for cls, row in sorted(summary["hold_latency_s"].items()):
        lines.append(
            f"| {cls} | {row['n']} | {_cell(row['p50'])} | {_cell(row['p95'])} | "
            f"{_cell(row['max'])} | {row['over_budget']} |"
        )
    free = ", ".join(sorted(set(setup["faults"]) - MUST_HOLD))
    judged = (
        f" Classes that need not HOLD ({free}) are judged by the wrong-PROCEED rule."
        if free
        else ""
    )
    lines += [
        "",
        "Measured from the fault's onset to the first HOLD, where the target was PROCEED just "
        "before it." + judged,
        "",
        "## Recovery after each fault (s, fault end to the next PROCEED)",
        "",
        "Every class, where the vehicle was in view at the fault's end (a one-off event, such "
        "as a clock step, ends at its onset); about 0 where the verdict stayed PROCEED.",
        "",
        "| fault | n | p50 | p95 | max |",
        "|---|---|---|---|---|",
    ]
    for cls, row in sorted(summary["recovery_s"].items()):
        lines.append(
            f"| {cls} | {row['n']} | {_cell(row['p50'])} | {_cell(row['p95'])} | "
            f"{_cell(row['max'])} |"
        )
    lines += [
        "",
        "## Accuracy per scenario (PROCEED captures)",
        "",
        "| scenario | captures | bearing p50 / p95 (°) | beyond the box bias p50 / p95 (°) "
        "| position off the vehicle p50 / p95 (m) | capture time p50 / p95 (ms) "
        "| availability |",
        "|---|---|---|---|---|---|---|",
    ]
    for scenario, row in summary["accuracy"].items():
        b, p, c = row["bearing_deg"], row["position_m"], row["capture_ms"]
        own = row["beyond_bias_deg"]
        share = "-" if row["availability"] is None else f"{100 * row['availability']:.1f}%"
        lines.append(
            f"| {scenario} | {b['n']} | {_cell(b['p50'])} / {_cell(b['p95'])} | "
            f"{_cell(own['p50'])} / {_cell(own['p95'])} | "
            f"{_cell(p['p50'])} / {_cell(p['p95'])} | {_cell(c['p50'])} / {_cell(c['p95'])} "
            f"| {share} |"
        )
    lines += [
        "",
        "Bearing: the angle to the line of sight to the vehicle's centre, the box-centre bias "
        "of a box detector included; "
        "beyond the box bias: the host's own part (negative: closer than the box's ray). "
        "Capture time: the host's mapped capture time against "
        "the board's own (emit time less `age_ms`); between a device clock step and the new "
        "epoch it confirms, the host maps the stepped frames conservatively (older) on "
        "purpose. Availability: the share of the time the vehicle was truly in the image, "
        "wholly (a box the image's edge cuts holds `truncated`), that the verdict was "
        'PROCEED, faults included; the same for "in view" in the checks above.',
        "",
        "## The longest HOLD of each run while the vehicle was in view",
        "",
        "| scenario | seed | from (s) | for (s) | reasons |",
        "|---|---|---|---|---|",
    ]
    for row in summary["longest_holds"]:
        lines.append(
            f"| {row['scenario']} | {row['seed']} | {row['start_s']} | {row['length_s']} | "
            f"{', '.join(row['reasons'])} |"
        )
    lines += [
        "",
        "## Host counters against the emulator's",
        "",
    ]
    if summary["counter_mismatches"]:
        lines += ["| scenario | seed | counter: expected / counted |", "|---|---|---|"]
        for row in summary["counter_mismatches"]:
            pairs = ", ".join(f"{k}: {e} / {c}" for k, (e, c) in row["counters"].items())
            lines.append(f"| {row['scenario']} | {row['seed']} | {pairs} |")
    else:
        lines.append(
            "Every counter the emulator has an expectation of (frames, bytes discarded, gaps, "
            "duplicates, resets, discontinuities, disconnects) matched in every run."
        )
    if summary["unrecovered"]:
        lines += ["", "## Faults never recovered from", "", "| scenario | seed | fault | end (s) |"]
        lines.append("|---|---|---|---|")
        for u in summary["unrecovered"]:
            lines.append(f"| {u['scenario']} | {u['seed']} | {u['fault']} | {u['end_s']} |")
    if summary["wrong_proceeds"]:
        lines += ["", "## Wrong PROCEEDs", "", "| scenario | seed | t (s) | why | detail |"]
        lines.append("|---|---|---|---|---|")
        for w in summary["wrong_proceeds"][:50]:
            lines.append(
                f"| {w['scenario']} | {w['seed']} | {w['t_s']} | {w['why']} | {w['detail']} |"
            )
    if plots:
        lines += ["", "## Plots", ""] + [f"![{name}]({name})" for name in plots]
    return "\n".join(lines) + "\n"
