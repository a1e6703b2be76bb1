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
(``--stats``: stderr, or ``--stats FILE``). Settings: ``gizmo_host.emulator.settings``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Mapping
from typing import Any

from gizmo_host.app.emulation import build_source, emulation_factory, rfly_boxes, sensor_camera
from gizmo_host.emulator.faults import (
    FaultTimeline,
    load_timeline,
    parse_fault_flag,
    validate_for_port,
)
from gizmo_host.emulator.port import DevicePort, Port, PtyPort
from gizmo_host.emulator.runner import Runner
from gizmo_host.emulator.settings import EmulateSettings, load_settings
from gizmo_host.errors import ConfigError
from gizmo_host.live.stop_signals import add_stop_handlers
from gizmo_host.tomlfile import read_toml

LOGGER = logging.getLogger("gizmo_host.emulate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    port = parser.add_mutually_exclusive_group()
    port.add_argument("--link", metavar="PATH", help="keep a symlink to the pty here")
    port.add_argument("--device", metavar="PATH", help="write to this serial device instead")
    parser.add_argument("--config", metavar="FILE", help="TOML: [emulate] and [camera]")
    parser.add_argument("--baud", type=int, metavar="N", help="line rate (default 115200)")
    parser.add_argument("--rate-hz", type=float, metavar="HZ", help="cycles/s (default 30)")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
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
    source.add_argument("--listen", metavar="HOST", help="address to receive on (127.0.0.1)")
    source.add_argument(
        "--port-offset",
        type=int,
        metavar="N",
        help="shift the RflySim ports bound (beside gizmo-host run: gizmo-host sim "
        "--mirror-offset N sends the states there)",
    )
    output = parser.add_argument_group("output policy")
    output.add_argument("--result-type", metavar="TYPE", help="DETECTOR, COLOR_BLOB, QR_CODE")
    output.add_argument(
        "--class",
        dest="classes",
        action="append",
        default=[],
        metavar="TARGET=CLASS",
        help="class of a target, e.g. 2=PEDESTRIAN (repeatable)",
    )
    output.add_argument("--per-cycle", choices=["best", "all"], help="frames per cycle")
    output.add_argument("--latency", metavar="DIST", help="ms: 12, uniform:8:16, normal:12:2")
    output.add_argument("--skew-ppm", type=float, metavar="PPM", help="device clock skew")
    output.add_argument("--boot-offset-ms", type=int, metavar="MS", help="device clock at start")
    output.add_argument("--start-sequence", type=int, metavar="N", help="first sequence")
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
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level",
    )


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    emulate: dict[str, Any] = {
        "rate_hz": args.rate_hz,
        "baudrate": args.baud,
        "latency": args.latency,
        "skew_ppm": args.skew_ppm,
        "boot_offset_ms": args.boot_offset_ms,
        "start_sequence": args.start_sequence,
        "result_type": args.result_type,
        "per_cycle": args.per_cycle,
        "listen": args.listen,
        "port_offset": args.port_offset,
    }
    if args.classes:
        classes = {}
        for item in args.classes:
            target, sep, value = item.partition("=")
            if not sep or not target.strip():
                raise ConfigError(f"--class {item}: expected TARGET=CLASS, e.g. 2=PEDESTRIAN")
            classes[target.strip()] = value.strip()
        emulate["classes"] = classes
    if args.boxes is not None or args.image_size is not None:
        boxes: dict[str, Any] = {"port": args.boxes}
        if args.image_size is not None:
            width, sep, height = args.image_size.lower().partition("x")
            if not sep:
                raise ConfigError(f"--image-size: expected WIDTHxHEIGHT, got {args.image_size!r}")
            boxes.update(width_px=width, height_px=height)
        emulate["boxes"] = boxes
    if args.ego is not None or args.targets is not None or args.rflysim3d:
        poses: dict[str, Any] = {"ego": args.ego, "rflysim3d": args.rflysim3d or None}
        if args.targets is not None:
            poses["targets"] = [t.strip() for t in args.targets.split(",") if t.strip()]
        emulate["poses"] = poses
    return {"emulate": emulate}


def settings_from_args(args: argparse.Namespace) -> tuple[EmulateSettings, FaultTimeline]:
    overrides = _overrides(args)
    data = read_toml(args.config) if args.config is not None else {}
    emulate_table = data.get("emulate")
    poses = "poses" in overrides["emulate"] or (
        isinstance(emulate_table, Mapping) and "poses" in emulate_table
    )
    if args.rfly_config is not None and not poses:
        boxes = rfly_boxes(args.rfly_config)
        given = overrides["emulate"].get("boxes", {})
        overrides["emulate"]["boxes"] = {**boxes, **{k: v for k, v in given.items() if v}}
    camera = None if args.config is None else sensor_camera(args.config, data, args.rfly_config)
    settings = load_settings(args.config, overrides, camera_config=camera)
    timeline = load_timeline(args.faults) if args.faults else FaultTimeline()
    timeline = timeline.with_faults([parse_fault_flag(spec) for spec in args.fault])
    if args.seed is not None:
        if args.seed < 0:
            raise ConfigError(f"--seed: expected an integer >= 0, got {args.seed}")
        timeline = FaultTimeline(timeline.faults, args.seed)
    if args.duration is not None and not 0 < args.duration <= 1e7:
        raise ConfigError(f"--duration: expected seconds > 0, got {args.duration}")
    validate_for_port(timeline, can_hang_up=args.link is not None)
    return settings, timeline


def _print_port(port: PtyPort, path: str) -> None:
    message = {"type": "emulate_port", "path": path, "link": port.link}
    print(json.dumps(message), flush=True)


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
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        settings, timeline = settings_from_args(args)
    except ConfigError as exc:
        print(f"gizmo-host emulate: config error: {exc}", file=sys.stderr)
        return 2
    try:
        stats = asyncio.run(emulate(args, settings, timeline))
    except ConfigError as exc:
        print(f"gizmo-host emulate: config error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a device that cannot be opened, a UDP port in use
        print(f"gizmo-host emulate: {exc}", file=sys.stderr)
        return 1
    if args.stats is not None:
        text = json.dumps(stats, sort_keys=True)
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
