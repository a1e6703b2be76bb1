"""The host's counters beside the emulated board's: what the demo shows and certify compares.

``DemoRig.stats()`` holds the host's ``stats`` message and the board's; :func:`host_counters`
condenses the host's link and sequence counters, :func:`injected_faults` says how often the
board injected each fault, and :func:`counter_mismatches` lists every counter where the host's
count differs from what the board says it should be.
"""

from __future__ import annotations

from typing import Any

HOST_COUNTERS = (
    "frames_ok",
    "crc_errors",
    "header_errors",
    "bytes_discarded",
    "lost",
    "duplicates",
    "resets",
    "discontinuities",
    "disconnects",
)
# fault kind -> the count of the emulator's stats that says how often it was injected
_FAULT_COUNTS = {
    "bit_errors": "frames",
    "drop_bytes": "frames",
    "garbage": "bursts",
    "truncate": "frames",
    "duplicate": "frames",
    "wrap": "events",
    "reset": "events",
    "silence": "events",
    "hangup": "events",
    "clock_skew": "events",
    "clock_jump": "events",
    "delay": "events",
}


def host_counters(host: dict[str, Any]) -> dict[str, Any]:
    """The link's and the sequence tracker's counters from the host's ``stats`` message."""
    link = host["link"]
    sources = host.get("sources", {}).values()
    out: dict[str, Any] = {"state": link["state"], "clock": host["clock"]["status"]}
    for name in ("frames_ok", "crc_errors", "header_errors", "bytes_discarded", "disconnects"):
        out[name] = link[name]
    for name in ("lost", "duplicates", "resets", "discontinuities"):
        out[name] = sum(source[name] for source in sources)
    return out


def injected_faults(board: dict[str, Any]) -> dict[str, int]:
    """How many of each fault the board injected (events, or frames hit, or bursts)."""
    faults = board.get("faults", {})
    return {kind: faults[kind][count] for kind, count in _FAULT_COUNTS.items() if kind in faults}


def counter_mismatches(stats: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """``name -> (expected, counted)`` for each host counter the board has an expectation of
    and the host counted differently (empty: they all agree)."""
    host = host_counters(stats["host"])
    expected = stats["board"].get("host", {})
    return {
        name: (expected[name], host[name])
        for name in HOST_COUNTERS
        if expected.get(name) is not None and expected[name] != host[name]
    }
