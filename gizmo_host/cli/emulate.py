"""``gizmo-host emulate``: the Gizmo board without the board, with faults on a timeline.

Simulated targets in, VISION_RESULT v1 frames out on a serial port: a pty it creates (its path
is printed as a JSON line on stdout, ``--link`` keeps a stable symlink to it) or a real device
(``--device``, opened with serialx). Targets come from RflySim TypeID 30 boxes (``--boxes``),
from vehicle poses projected through ``[camera]`` (``--ego``/``--targets``/``--rflysim3d``) or,
by default, the built-in scenario. ``[camera] rflysim_sensor = N`` takes that Config.json
sensor's size, field of view and mount (``--rfly-config``, else the file's ``[rflysim] config``)
exactly as ``gizmo-host run`` does. Beside ``gizmo-host run``, which binds the ego's CopterSim
state port, the pose source listens at ``--port-offset N`` and ``gizmo-host sim --mirror-offset
N`` sends the states there too. Faults come from ``--faults FILE`` and ``--fault SPEC``.
It runs for ``--duration`` or until SIGINT/SIGTERM, then prints every count as JSON
(``--stats``: stderr, or ``--stats FILE``). Settings: ``gizmo_host.rigs.board.emulate_settings``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from typing import Any

from gizmo_core import ConfigError
from gizmo_host.cli.common import EXIT_USAGE, add_log_level, file_to_write, setup_logging
from gizmo_host.jsonl import json_text
from gizmo_host.live.stop_signals import add_stop_handlers
from gizmo_host.rigs.board.compose import build_source, emulation_factory, settings_from_args
from gizmo_host.rigs.board.emulate_settings import EMULATE_SETTINGS, EmulateSettings
from gizmo_host.rigs.board.faults import FaultTimeline
from gizmo_host.rigs.board.port import DevicePort, Port, PtyPort
from gizmo_host.rigs.board.runner import Runner
from gizmo_host.setting import add_flags

LOGGER = logging.getLogger("gizmo_host.emulate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    port = parser.add_mutually_exclusive_group()
    port.add_argument("--link", metavar="PATH", help="keep a symlink to the pty here")
    port.add_argument("--device", metavar="PATH", help="write to this serial device instead")
    parser.add_argument("--config", metavar="FILE", help="TOML: [emulate] and [camera]")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    add_flags(parser, EMULATE_SETTINGS, "emulate")  # the [emulate] rows with a flag: --baud, ...
    parser.add_argument(
        "--stats",
        nargs="?",
        const="-",
        metavar="FILE",
        help="print the counts as JSON at exit (stderr, or FILE)",
    )
    parser.add_argument(
        "--no-wait-reader",
        action="store_true",
        help="start at once, not when a reader opens the pty",
    )
    source = parser.add_argument_group("target sources (default: the built-in scenario)")
    source.add_argument("--boxes", type=int, metavar="PORT", help="TypeID 30 boxes on PORT")
    source.add_argument("--image-size", metavar="WxH", help="the box sensor's image size")
    source.add_argument(
        "--rfly-config",
        metavar="FILE",
        help="RflySim Config.json: the TypeID 30 sensor's port and image size (unless poses "
        "are the source), and the sensor [camera] rflysim_sensor names",
    )
    source.add_argument("--ego", type=int, metavar="ID", help="ego CopterID (camera carrier)")
    source.add_argument("--targets", metavar="IDS", help="target CopterIDs, e.g. 2,3")
    source.add_argument(
        "--rflysim3d", action="store_true", help="also RflySim3D object data on 20006"
    )
    output = parser.add_argument_group("output policy")
    output.add_argument(
        "--class",
        dest="classes",
        action="append",
        default=[],
        metavar="TARGET=CLASS",
        help="class of a target, e.g. 2=PEDESTRIAN (repeatable)",
    )
    faults = parser.add_argument_group("faults")
    faults.add_argument("--faults", metavar="FILE", help="TOML fault timeline")
    faults.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="one fault, KIND,key=value,...: e.g. reset,at_s=2 (repeatable)",
    )
    faults.add_argument("--seed", type=int, metavar="N", help="fault and latency seed")
    add_log_level(parser)


def _print_port(port: PtyPort, path: str) -> None:
    message = {"type": "emulate_port", "path": path, "link": port.link}
    print(json_text(message), flush=True)


async def emulate(
    args: argparse.Namespace, settings: EmulateSettings, timeline: FaultTimeline
) -> dict[str, Any]:
    port: Port
    if args.device is not None:
        device = DevicePort(args.device, settings.baudrate)
        await device.open()
        port = device
    else:
        pty = PtyPort(args.link, on_plug=lambda path: _print_port(pty, path))
        pty.plug()
        port = pty
    source = build_source(settings)
    runner = Runner(
        emulation_factory(settings, timeline),
        port,
        source,
        baudrate=settings.baudrate,
        duration_s=args.duration,
        wait_reader=args.device is None and not args.no_wait_reader,
    )
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    restore_signals = add_stop_handlers(loop, stop.set)  # ends within a second regardless
    try:
        await source.start()
        running = asyncio.create_task(runner.run(), name="gizmo-emulate")
        stopped = asyncio.create_task(stop.wait(), name="gizmo-emulate-stop")
        await asyncio.wait((running, stopped), return_when=asyncio.FIRST_COMPLETED)
        for task in (running, stopped):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    finally:
        restore_signals()
        await source.close()
        await port.close()
    return runner.stats()


def run(args: argparse.Namespace) -> int:
    setup_logging(args.log_level)
    try:
        settings, timeline = settings_from_args(args)
        # Checked before the run, not found after it.
        if args.link is not None:
            file_to_write("--link", args.link)
        if args.device is not None and not os.path.exists(args.device):
            raise ConfigError(f"--device: {args.device}: no such device")
        if args.stats is not None and args.stats != "-":
            file_to_write("--stats", args.stats)
    except ConfigError as exc:
        print(f"gizmo-host emulate: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        stats = asyncio.run(emulate(args, settings, timeline))
    except ConfigError as exc:
        print(f"gizmo-host emulate: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # a device that cannot be opened, a UDP port in use
        print(f"gizmo-host emulate: {exc}", file=sys.stderr)
        return 1
    if args.stats is not None:
        text = json_text(stats)
        if args.stats == "-":
            print(text, file=sys.stderr, flush=True)
        else:
            try:
                with open(args.stats, "w", encoding="utf-8") as out:
                    out.write(text + "\n")
            except OSError as exc:
                print(f"gizmo-host emulate: --stats {args.stats}: {exc}", file=sys.stderr)
                return 1
    return 0
