"""The report's plots (matplotlib, the ``report`` extra): the bearing error over time with the
fault windows shaded, the verdict timelines, and the HOLD latency histogram."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gizmo_host.rigs.certify.judge import BEARING_BOUND_DEG, RunResult
from gizmo_host.rigs.certify.plan import HOLD_BUDGET_S

PLOTS = ("bearing_error.png", "verdicts.png", "hold_latency.png")


def write_plots(results: Sequence[RunResult], out: Path) -> list[str]:
    """Write the plots into ``out``; returns their file names."""
    import matplotlib  # noqa: PLC0415 - the report extra, only when plotting

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    first: dict[str, RunResult] = {}
    for r in results:
        first.setdefault(r.scenario, r)
    shown = list(first.values())

    fig, axes = plt.subplots(len(shown), 1, figsize=(10, 2.4 * len(shown)), sharex=True)
    for ax, r in zip(list(axes) if len(shown) > 1 else [axes], shown, strict=True):
        _shade(ax, r)
        ax.plot(
            r.series["error_t_s"],
            r.series["error_deg"],
            ".",
            ms=2,
            color="0.6",
            label="to the line of sight",
        )
        ax.plot(
            r.series["error_t_s"],
            r.series["beyond_bias_deg"],
            ".",
            ms=2,
            color="tab:blue",
            label="beyond the box-centre bias",
        )
        ax.axhline(BEARING_BOUND_DEG, color="red", ls="--", lw=0.8)
        ax.set_ylabel("bearing error (°)")
        ax.legend(fontsize=7, loc="upper left")
        ax.set_title(f"{r.scenario}, seed {r.seed}: PROCEED captures against the truth", fontsize=9)
    (axes[-1] if len(shown) > 1 else axes).set_xlabel("emulation time (s)")
    fig.tight_layout()
    fig.savefig(out / PLOTS[0], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(10, 0.5 + 0.45 * len(results)))
    for row, r in enumerate(results):
        colours = [
            "tab:green" if proceed else ("tab:red" if visible else "0.8")
            for proceed, visible in zip(r.series["proceed"], r.series["visible"], strict=True)
        ]
        for colour, start, end in _segments(r.series["t_s"], colours):
            ax.broken_barh([(start, end - start)], (row - 0.35, 0.7), color=colour, lw=0)
        for _, start, end in r.series["windows"]:
            ax.plot([start, start], [row - 0.45, row + 0.45], color="black", lw=0.8)
            ax.plot([start, max(end, start + 0.05)], [row + 0.42] * 2, color="black", lw=2)
    ax.set_yticks(range(len(results)), [f"{r.scenario} s{r.seed}" for r in results], fontsize=7)
    ax.set_xlabel("emulation time (s)")
    ax.set_title(
        "verdicts: PROCEED green, HOLD red while the vehicle is in view, grey out of view; "
        "black: fault onsets and windows",
        fontsize=8,
    )
    fig.tight_layout()
    fig.savefig(out / PLOTS[1], dpi=90)
    plt.close(fig)

    latencies: dict[str, list[float]] = {}
    for r in results:
        for cls, values in r.hold_latency_s.items():
            latencies.setdefault(cls, []).extend(v * 1000 for v in values)
    fig, ax = plt.subplots(figsize=(8, 3.2))
    if latencies:
        ax.hist(list(latencies.values()), bins=20, stacked=True, label=list(latencies))
        ax.legend(fontsize=8)
    ax.axvline(HOLD_BUDGET_S * 1000, color="red", ls="--", label="budget")
    ax.set_xlabel("fault onset -> first HOLD (ms); red: the budget")
    ax.set_ylabel("faults")
    fig.tight_layout()
    fig.savefig(out / PLOTS[2], dpi=90)
    plt.close(fig)
    return list(PLOTS)


def _segments(times: Sequence[float], colours: Sequence[str]) -> list[tuple[str, float, float]]:
    """Runs of one colour as (colour, start, end): a bar per change, not per snapshot."""
    out: list[tuple[str, float, float]] = []
    for i in range(len(times) - 1):
        if out and out[-1][0] == colours[i]:
            out[-1] = (colours[i], out[-1][1], times[i + 1])
        else:
            out.append((colours[i], times[i], times[i + 1]))
    return out


def _shade(ax: Any, r: RunResult) -> None:
    for name, start, end in r.series["windows"]:
        ax.axvspan(start, max(end, start + 0.1), color="orange", alpha=0.25, lw=0)
        ax.text(start, 1.0, name, transform=ax.get_xaxis_transform(), fontsize=6, va="top")
