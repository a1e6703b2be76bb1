"""``gizmo-host record --serial PATH -o FILE.mcap``: run the live host and record it in MCAP.

It records the inputs (every chunk read from the serial port with its receive time, the port's
opens and losses, and the RflySim datagrams with their senders) and the host's own output
(``result``, ``link``, ``verdict``, ``stats`` and ``world`` JSON) on the channels of
``gizmo_host.capture.channels``. Settings come from ``--config`` and flags as for ``gizmo-host
run``, and are stored in the capture so that ``gizmo-host replay --offline`` recomputes the
same output. With ``[camera]`` configured it runs the world model as ``run`` does: the ports
its receivers would hear (``[rflysim]``) are recorded, and what arrives on them feeds the model
through the same pipelines (``gizmo_host.app.world_build.DatagramRouter``); ``--udp-port`` adds
ports.

The file is written from its own thread behind a bounded queue (``--max-queue-mb``): a slow
disk costs dropped messages (counted in the summary), never a stalled reader. A full disk or a
write error ends the recording with one line and exit status 1; bad flags, exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import TYPE_CHECKING

from gizmo_core import ConfigError
from gizmo_host.app import settings as setting_table
from gizmo_host.app.host_config import config_from_args
from gizmo_host.app.idle import log_idle_settings
from gizmo_host.app.recorder import Recorder, RecordOptions
from gizmo_host.app.world_build import DatagramRouter
from gizmo_host.cli.common import (
    EXIT_USAGE,
    add_log_level,
    file_to_write,
    require_extra,
    setup_logging,
)
from gizmo_host.cli.flags import ipv4

if TYPE_CHECKING:
    pass

LOGGER = logging.getLogger("gizmo_host.record")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", metavar="FILE", required=True, help="the MCAP file to write ('-': stdout)"
    )
    parser.add_argument("--config", metavar="FILE", help="TOML settings; flags override it")
    setting_table.add_flags(parser, "record")
    parser.add_argument(
        "--udp-port",
        type=int,
        action="append",
        default=[],
        metavar="P",
        help="also record every datagram to UDP port P (repeatable)",
    )
    parser.add_argument(
        "--bind", metavar="IPV4", help="UDP address (default: [rflysim] bind, or 127.0.0.1)"
    )
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    parser.add_argument(
        "--max-queue-mb",
        type=float,
        default=64.0,
        metavar="MB",
        help="bytes waiting for the disk before messages are dropped (default 64)",
    )
    add_log_level(parser)


def udp_ports(world_ports: list[int], ports: list[int]) -> list[int]:
    """The ports to record: the world's and ``ports`` (``ValueError`` naming the flag)."""
    for port in ports:
        if not 1 <= port <= 65535:
            raise ValueError(f"--udp-port: expected 1..65535, got {port}")
    return sorted({*world_ports, *ports})


def run(args: argparse.Namespace) -> int:
    setup_logging(args.log_level)
    try:
        config = config_from_args(args)
        setup = config.world_setup()
        if args.duration is not None and not args.duration > 0:
            raise ValueError(f"--duration: expected > 0, got {args.duration}")
        if not args.max_queue_mb > 0:
            raise ValueError(f"--max-queue-mb: expected > 0, got {args.max_queue_mb}")
        require_extra("record", "recording")
        rflysim = None if setup is None else setup.rflysim
        world_ports = [] if rflysim is None else DatagramRouter(rflysim).ports
        ports = udp_ports(world_ports, args.udp_port)
        if args.bind is not None:
            ipv4("--bind", args.bind)
            if not ports:
                raise ValueError("--bind: no UDP port to hear (--udp-port, or [rflysim])")
        if args.output != "-":
            file_to_write("--output", args.output)
    except (ConfigError, ValueError) as exc:
        print(f"gizmo-host record: {exc}", file=sys.stderr)
        return EXIT_USAGE
    log_idle_settings(config, publishes=False)  # one warning line each, once nothing failed
    bind = args.bind or (rflysim.bind if rflysim is not None else "127.0.0.1")
    options = RecordOptions(
        args.output, tuple(ports), bind, args.duration, round(args.max_queue_mb * 1024 * 1024)
    )
    recorder = Recorder(options, config, setup)
    try:
        return asyncio.run(recorder.record())
    except OSError as exc:  # the output cannot be created, a UDP port cannot be bound
        print(f"gizmo-host record: {exc}", file=sys.stderr)
        return 1
