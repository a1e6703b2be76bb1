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
import math
import sys
from typing import Any

from gizmo_host.cli.fleet_table import FleetTable
from gizmo_host.errors import ConfigError
from gizmo_host.live.stop_signals import add_stop_handlers
from gizmo_host.publish.lines import encode_line
from gizmo_host.publish.sinks import QueuedSink, stdout_sink

EXIT_USAGE = 2


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


def _options(args: argparse.Namespace) -> tuple[float, float | None, float | None, Any]:
    from gizmo_host.zenoh.config import ZenohConfig  # noqa: PLC0415

    try:
        ttl_ms = float(args.ttl_ms)
    except ValueError:
        ttl_ms = math.nan
    if not (math.isfinite(ttl_ms) and 1 <= ttl_ms <= 3_600_000):
        raise ConfigError(f"--ttl-ms: expected milliseconds 1..3600000, got {args.ttl_ms!r}")
    clock_error = None
    if args.max_clock_error_ms is not None:
        try:
            clock_error = float(args.max_clock_error_ms)
        except ValueError:
            clock_error = math.nan
        if not (math.isfinite(clock_error) and 0 <= clock_error <= 3_600_000):
            raise ConfigError(
                "--max-clock-error-ms: expected milliseconds 0..3600000, "
                f"got {args.max_clock_error_ms!r}"
            )
    duration = None
    if args.duration is not None:
        try:
            duration = float(args.duration)
        except ValueError:
            duration = math.nan
        if not (math.isfinite(duration) and duration > 0):
            raise ConfigError(f"--duration: expected seconds > 0, got {args.duration!r}")
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
        raise ConfigError(f"{flag}: {str(exc).partition(': ')[2]}") from None
    return ttl_ms, duration, clock_error, config


def run(args: argparse.Namespace) -> int:
    try:
        ttl_ms, duration, clock_error, config = _options(args)
        import gizmo_host.zenoh.session  # noqa: F401, PLC0415 - the extra, checked first
    except ConfigError as exc:
        print(f"gizmo-host fleet: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ImportError:
        print("gizmo-host fleet: needs the zenoh extra: pip install 'gizmo-host[zenoh]'",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    try:
        asyncio.run(_watch(config, ttl_ms, clock_error, duration, args.json))
    except Exception as exc:  # zenoh.ZError: a client with no router, a bad endpoint
        print(f"gizmo-host fleet: {exc}", file=sys.stderr)
        return 1
    return 0


async def _watch(
    config: Any, ttl_ms: float, clock_error_ms: float | None, duration: float | None, json: bool
) -> None:
    from gizmo_host.zenoh.fleet import FleetRow, FleetView  # noqa: PLC0415
    from gizmo_host.zenoh.session import open_session  # noqa: PLC0415
    from gizmo_host.zenoh.watch import FleetWatch  # noqa: PLC0415

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    restore = add_stop_handlers(loop, stop.set)
    if duration is not None:
        loop.call_later(duration, stop.set)
    out: QueuedSink | None = stdout_sink() if json else None
    table = None if json else FleetTable()

    def report(rows: list[FleetRow]) -> None:
        if out is not None:
            for row in rows:
                out.send(encode_line(row.to_dict()))
        elif table is not None:
            table.update(rows)

    clock_error_ns = None if clock_error_ms is None else round(clock_error_ms * 1e6)
    view = FleetView(round(ttl_ms * 1e6), clock_error_ns)
    session = await loop.run_in_executor(None, open_session, config)
    watch = FleetWatch(view, report)
    try:
        watch.start(session)
        with table or contextlib.nullcontext():
            await stop.wait()
    finally:
        watch.stop()
        await loop.run_in_executor(None, session.close)
        if out is not None:
            await out.close()
        restore()
