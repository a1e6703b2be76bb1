"""``gizmo-host fleet``: every vehicle publishing on Zenoh, in one live table or as JSON Lines.

It subscribes to ``gizmo/*/world`` and ``gizmo/*/link`` (``gizmo_host.zenoh.watch``) and judges
each vehicle by its own receive time (``gizmo_host.zenoh.fleet``): ``stale``, with verdict
HOLD, once ``--ttl-ms`` passes without a world line. ``--json`` prints
``{"type": "fleet_vehicle", ...}`` lines: at once for a vehicle that changed, and every vehicle
at least once a second. ``--connect`` reaches a router or a peer (multicast scouting is off
unless ``--scouting``). Needs the zenoh extra.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

from gizmo_core import ConfigError
from gizmo_host.cli.common import EXIT_USAGE, require_extra
from gizmo_host.cli.flags import UsageError, number
from gizmo_host.cli.fleet_table import FleetTable
from gizmo_host.jsonl import encode_line
from gizmo_host.live.stop_signals import add_stop_handlers
from gizmo_host.publish.sinks import QueuedSink, stdout_sink


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="JSON Lines instead of the table")
    parser.add_argument(
        "--ttl-ms", default="250", metavar="MS", help="stale after this long (default 250)"
    )
    parser.add_argument(
        "--connect", action="append", default=[], metavar="ENDPOINT",
        help='a router or peer to reach, e.g. "tcp/192.168.1.10:7447" (repeatable)',
    )  # fmt: skip
    parser.add_argument("--listen", action="append", default=[], metavar="ENDPOINT")
    parser.add_argument("--mode", default="peer", choices=["peer", "client"])
    parser.add_argument("--scouting", action="store_true", help="find peers by multicast")
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


def _options(args: argparse.Namespace) -> tuple[float, float | None, float | None, Any]:
    from gizmo_host.zenoh.config import ZenohConfig  # noqa: PLC0415

    ttl_ms = _milliseconds("--ttl-ms", args.ttl_ms, 1)
    clock_error = None
    if args.max_clock_error_ms is not None:
        clock_error = _milliseconds("--max-clock-error-ms", args.max_clock_error_ms, 0)
    duration = None
    if args.duration is not None:
        duration = number("--duration", args.duration, None, "seconds > 0")
        if duration <= 0:
            raise UsageError(f"--duration: expected seconds > 0, got {args.duration!r}")
    try:
        config = ZenohConfig(
            enabled=True,
            mode=args.mode,
            connect=tuple(args.connect),
            listen=tuple(args.listen),
            multicast_scouting=args.scouting,
        )
    except ConfigError as exc:
        flag = "--" + (exc.key or "zenoh.connect").removeprefix("zenoh.")
        raise UsageError(f"{flag}: {str(exc).partition(': ')[2]}") from None
    return ttl_ms, duration, clock_error, config


def run(args: argparse.Namespace) -> int:
    try:
        ttl_ms, duration, clock_error, config = _options(args)
        require_extra("zenoh", "gizmo-host fleet")
    except (UsageError, ConfigError) as exc:
        print(f"gizmo-host fleet: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from gizmo_host.zenoh.watch import watch_fleet  # noqa: PLC0415 - the zenoh extra

    clock_error_ns = None if clock_error is None else round(clock_error * 1e6)

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
                    out.send(encode_line(row.to_dict()))
            elif table is not None:
                table.update(rows)

        try:
            with table or contextlib.nullcontext():
                await watch_fleet(config, round(ttl_ms * 1e6), clock_error_ns, stop, report)
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
