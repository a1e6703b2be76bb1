"""``gizmo-host rfly``: receive RflySim data and print one JSON object per line.

Receivers come from the options: every UDP sensor of a ``Config.json``; for each ``--copter``
ID its state, IMU/odometry reply, PX4 state and PX4 actuator ports, and CopterSim's heartbeat
port; RflySim3D's port; and on request the start signal, the requests to every CopterSim and
custom data (:mod:`rfly_link.ports` has them all). Events go to stdout as JSON Lines (point
clouds and images are summarised); receiver statistics, with drops by cause, go to stderr at
the end. Registered in ``gizmo_host.cli.SUBCOMMANDS`` as ``"rfly"``.

Output is strict JSON, as every command's (:mod:`gizmo_host.jsonl`): NaN and infinities sent
by the peer become ``null``. A configuration, file, bind or
option error (a CopterID off the port map, a negative or NaN duration, a malformed
address) is one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from gizmo_core import ConfigError
from gizmo_host.cli.common import EXIT_USAGE
from gizmo_host.cli.flags import integer, ipv4, number
from gizmo_host.jsonl import json_text
from rfly_link import io as rio
from rfly_link import ports
from rfly_link.config_json import load_config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Numbers stay text here and are checked by parse_options(): argparse's own errors print
    # the whole usage, and an out-of-range value must be one line naming the flag.
    parser.add_argument("--config", help="RflySim Config.json: one receiver per UDP sensor")
    parser.add_argument(
        "--copter",
        action="append",
        default=[],
        metavar="ID",
        help=f"CopterSim CopterID 1..{ports.MAX_COPTERS} (repeatable)",
    )
    out_port, group = ports.RFLYSIM3D_OUT_PORT, ports.MULTICAST_GROUP
    parser.add_argument("--rflysim3d", action="store_true", help=f"listen on port {out_port}")
    parser.add_argument("--multicast", action="store_true", help=f"also join {group} on {out_port}")
    parser.add_argument(
        "--start-signal",
        action="store_true",
        help=f"listen for start signals on {ports.START_SIGNAL_PORT} (group {group})",
    )
    parser.add_argument(
        "--coptersim-requests",
        action="store_true",
        help=f"listen for requests to every CopterSim on {ports.COPTERSIM_REQUEST_PORT} "
        f"(group {group})",
    )
    parser.add_argument(
        "--custom-data",
        action="store_true",
        help=f"listen for sendCustomData on {ports.CUSTOM_DATA_PORT}",
    )
    parser.add_argument(
        "--multicast-interface",
        default=None,
        metavar="IPV4",
        help="local interface address for the multicast groups (default: --bind if it is a "
        "LAN address, else the kernel's choice by route)",
    )
    parser.add_argument("--bind", default="127.0.0.1", help="local address (default 127.0.0.1)")
    parser.add_argument(
        "--allow",
        action="append",
        default=None,
        metavar="IPV4",
        help="accept only this sender IP (repeatable)",
    )
    parser.add_argument("--count", default="0", metavar="N", help="stop after N events (0: never)")
    parser.add_argument(
        "--duration", default="0", metavar="S", help="stop after S seconds (0: never)"
    )


@dataclass(frozen=True, slots=True)
class Options:
    """The ``rfly`` command line, checked."""

    config: str | None
    copter_ids: tuple[int, ...]
    rflysim3d: bool
    multicast: bool
    start_signal: bool
    coptersim_requests: bool
    custom_data: bool
    multicast_interface: str | None
    bind: str
    allowed_senders: tuple[str, ...] | None
    count: int
    duration_s: float


def parse_options(args: argparse.Namespace) -> Options:
    """Check every value of ``args``; raises :class:`gizmo_host.cli.flags.UsageError` for the
    first bad one."""
    interface = args.multicast_interface
    return Options(
        config=args.config,
        copter_ids=tuple(integer("--copter", text, 1, ports.MAX_COPTERS) for text in args.copter),
        rflysim3d=args.rflysim3d,
        multicast=args.multicast,
        start_signal=args.start_signal,
        coptersim_requests=args.coptersim_requests,
        custom_data=args.custom_data,
        multicast_interface=None if interface is None else ipv4("--multicast-interface", interface),
        bind=args.bind,
        allowed_senders=None
        if args.allow is None
        else tuple(ipv4("--allow", a) for a in args.allow),
        count=integer("--count", args.count, 0),
        duration_s=number("--duration", args.duration, what="a finite number of seconds"),
    )


def build_receivers(options: Options) -> list[rio.UdpReceiver]:
    common: dict[str, Any] = {"host": options.bind, "allowed_senders": options.allowed_senders}
    receivers: list[rio.UdpReceiver] = []
    if options.config:
        receivers += rio.vision_sensor_receivers(load_config(options.config), **common)
    for copter_id in options.copter_ids:
        receivers += rio.coptersim_receivers(copter_id, **common)
    if options.copter_ids:  # one port for every CopterSim's heartbeat
        receivers.append(rio.heartbeat_receiver(**common))
    group = {**common, "multicast_interface": options.multicast_interface}
    if options.rflysim3d:
        receivers.append(rio.rflysim3d_receiver(multicast=options.multicast, **group))
    if options.start_signal:
        receivers.append(rio.start_signal_receiver(**group))
    if options.coptersim_requests:
        receivers.append(rio.coptersim_request_receiver(**group))
    if options.custom_data:
        receivers.append(rio.custom_data_receiver(**common))
    return receivers


async def listen(
    receivers: list[rio.UdpReceiver],
    *,
    count: int = 0,
    duration_s: float = 0.0,
    out: TextIO | None = None,
) -> int:
    """Print events until ``count`` events or ``duration_s`` seconds; returns events printed.

    Slow output (a stalled stdout pipe) never grows memory: the receivers run in a
    ``ReceiverGroup`` whose pumps wait on a one-slot queue, so events pile up only in the
    receivers' bounded queues, which drop the oldest and count them (``queue_full``).
    """
    events: asyncio.Queue[rio.Event] = asyncio.Queue(maxsize=1)
    stream = sys.stdout if out is None else out  # sys.stdout now: a test may have replaced it
    printed = 0

    async def consume() -> None:
        nonlocal printed
        while not count or printed < count:
            event = await events.get()
            stream.write(json_text(event.to_dict()) + "\n")
            stream.flush()
            printed += 1

    async with rio.ReceiverGroup(receivers, events.put):  # a pump waits while the slot is full
        # asyncio.TimeoutError: not the builtin TimeoutError before Python 3.11
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(consume(), duration_s or None)
    return printed


def run(args: argparse.Namespace) -> int:
    try:
        options = parse_options(args)
        receivers = build_receivers(options)
    except (ConfigError, OSError, ValueError) as exc:
        print(f"rfly: {_describe(exc)}", file=sys.stderr)
        return EXIT_USAGE
    if not receivers:
        print(
            "rfly: nothing to listen to (use --config, --copter, --rflysim3d, --start-signal, "
            "--coptersim-requests or --custom-data)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends listening; stats still print
            asyncio.run(listen(receivers, count=options.count, duration_s=options.duration_s))
    except OSError as exc:  # bind failed (port in use, address not local, permission)
        print(f"rfly: cannot listen: {_describe(exc)}", file=sys.stderr)
        return EXIT_USAGE
    for receiver in receivers:
        stats = receiver.stats._asdict()
        print(json_text({"receiver": receiver.name, **stats}), file=sys.stderr)
    return 0


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc)
