"""``gizmo-host fleet``: every vehicle publishing on Zenoh, in one live table or as JSON Lines.

It subscribes to ``gizmo/*/world`` and ``gizmo/*/link`` (``gizmo_host.zenoh.watch``) and judges
each vehicle by its own receive time and its one publisher (``gizmo_host.zenoh.fleet``):
``stale``, with verdict HOLD, once ``--ttl-ms`` passes without a line; CONFLICT while a second
publisher speaks for it, until ``--conflict-ms`` after its last line. ``--json`` prints compact
``{"type": "fleet_vehicle", ...}`` lines: at once for a vehicle that changed, and every vehicle
at least once a second, at the pace stdout takes them. ``--connect`` reaches a router or a peer
(multicast scouting is off unless ``--scouting``); ``--zenoh-config`` starts the session from a
Zenoh configuration file (TLS, mTLS). At the end it prints its counters, one JSON line on
stderr. Needs the zenoh extra.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

from gizmo_core import ConfigError
from gizmo_host.cli.common import EXIT_USAGE, require_extra
from gizmo_host.cli.flags import UsageError, integer, number
from gizmo_host.cli.fleet_table import FleetTable
from gizmo_host.jsonl import json_text
from gizmo_host.live.stop_signals import add_stop_handlers
from gizmo_host.publish.sinks import QueuedSink, stdout_sink

# stdout's queue is kept below this: rows wait in the view (and are made when there is room)
# rather than queue behind each other, and the sink never drops the oldest of them.
OUTPUT_BUDGET_BYTES = 256 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="JSON Lines instead of the table")
    parser.add_argument(
        "--ttl-ms", default="250", metavar="MS", help="stale after this long (default 250)"
    )
    parser.add_argument(
        "--conflict-ms", default="1000", metavar="MS",
        help="a second publisher for a vehicle holds it CONFLICT until this long after its "
        "last line; also how long the vehicle's publisher may be silent before another may "
        "take it over: at least --ttl-ms, well above the hosts' line period (default 1000)",
    )  # fmt: skip
    parser.add_argument(
        "--connect", action="append", default=[], metavar="ENDPOINT",
        help='a router or peer to reach, e.g. "tcp/192.168.1.10:7447" (repeatable)',
    )  # fmt: skip
    parser.add_argument("--listen", action="append", default=[], metavar="ENDPOINT")
    parser.add_argument("--mode", default="peer", choices=["peer", "client"])
    parser.add_argument("--scouting", action="store_true", help="find peers by multicast")
    parser.add_argument(
        "--zenoh-config", metavar="FILE",
        help="a Zenoh configuration file (json5) the session starts from: TLS, mTLS, ... "
        "(--mode, --scouting and the endpoints given override it)",
    )  # fmt: skip
    parser.add_argument(
        "--max-line-bytes", default="65536", metavar="N",
        help="a longer line is dropped and counted (default 65536)",
    )  # fmt: skip
    parser.add_argument("--duration", metavar="S", help="stop after S seconds")
    parser.add_argument(
        "--max-clock-error-ms", metavar="MS",
        help="the hosts' wall clocks are within MS of this one (NTP/PTP): a line's transport "
        "delay beyond it counts against its age (default: age by receive time only)",
    )  # fmt: skip


def _milliseconds(flag: str, text: str, low: float) -> float:
    value = number(flag, text, low, "milliseconds")
    if value > 3_600_000:
        raise UsageError(f"{flag}: expected milliseconds {low:g}..3600000, got {text!r}")
    return value


def _options(args: argparse.Namespace) -> tuple[dict[str, Any], float | None, Any]:
    """The view's options (in ns), the duration, and the session's ``ZenohConfig``."""
    from gizmo_host.zenoh.config import LINE_BYTES_LIMITS, ZenohConfig  # noqa: PLC0415

    view: dict[str, Any] = {
        "ttl_ns": round(_milliseconds("--ttl-ms", args.ttl_ms, 1) * 1e6),
        "conflict_ns": round(_milliseconds("--conflict-ms", args.conflict_ms, 1) * 1e6),
        "max_clock_error_ns": None,
    }
    if view["conflict_ns"] < view["ttl_ns"]:  # a fresh vehicle's publisher is always present
        raise UsageError(
            f"--conflict-ms: expected at least --ttl-ms ({args.ttl_ms}), got {args.conflict_ms!r}"
        )
    if args.max_clock_error_ms is not None:
        error_ms = _milliseconds("--max-clock-error-ms", args.max_clock_error_ms, 0)
        view["max_clock_error_ns"] = round(error_ms * 1e6)
    duration = None
    if args.duration is not None:
        duration = number("--duration", args.duration, None, "seconds > 0")
        if duration <= 0:
            raise UsageError(f"--duration: expected seconds > 0, got {args.duration!r}")
    max_line_bytes = integer("--max-line-bytes", args.max_line_bytes, *LINE_BYTES_LIMITS)
    try:
        config = ZenohConfig(
            enabled=True,
            mode=args.mode,
            connect=tuple(args.connect),
            listen=tuple(args.listen),
            multicast_scouting=args.scouting,
            config=args.zenoh_config,
            max_line_bytes=max_line_bytes,
        )
        if config.config is not None:
            from gizmo_host.zenoh.session import load_file  # noqa: PLC0415 - the extra

            load_file(config.config)
    except ConfigError as exc:
        name = (exc.key or "zenoh.connect").removeprefix("zenoh.")
        flag = "--zenoh-config" if name == "config" else "--" + name
        raise UsageError(f"{flag}: {str(exc).partition(': ')[2]}") from None
    return view, duration, config


def run(args: argparse.Namespace) -> int:
    try:
        view_options, duration, config = _options(args)
        require_extra("zenoh", "gizmo-host fleet")
    except (UsageError, ConfigError) as exc:
        print(f"gizmo-host fleet: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from gizmo_host.zenoh.fleet import FleetView  # noqa: PLC0415 - the zenoh extra
    from gizmo_host.zenoh.watch import watch_fleet  # noqa: PLC0415

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        restore = add_stop_handlers(loop, stop.set)
        if duration is not None:
            loop.call_later(duration, stop.set)
        out: QueuedSink | None = stdout_sink() if args.json else None
        table = None if args.json else FleetTable()

        def report(rows: list[Any]) -> None:
            if out is not None:
                for row in rows:
                    out.send(row.to_json_line())
            elif table is not None:
                table.update(rows)

        def room() -> bool:
            return out is None or (not out.closed and out.pending_bytes < OUTPUT_BUDGET_BYTES)

        try:
            with table or contextlib.nullcontext():
                watch = await watch_fleet(config, FleetView(**view_options), stop, report, room)
            summary = {"fleet": watch.stats()}
            if out is not None:
                summary["stdout"] = out.stats()
            print(json_text(summary), file=sys.stderr, flush=True)
        finally:
            if out is not None:
                await out.close()
            restore()

    try:
        asyncio.run(main())
    except Exception as exc:  # zenoh.ZError: a client with no router, a bad endpoint
        print(f"gizmo-host fleet: {exc}", file=sys.stderr)
        return 1
    return 0
