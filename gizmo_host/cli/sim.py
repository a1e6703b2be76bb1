"""``gizmo-host sim``: a RflySim stand-in on loopback UDP, following a scripted scenario.

It sends what CopterSim and RflySim3D send, on their ports (:mod:`rfly_link.ports`): the ego's
and the other vehicles' 168-byte states, each vehicle's heartbeat (20005), the gimbal status
(20006) and the Config.json sensors it simulates (distance, TypeID 30 boxes, LiDAR), and it
answers odometry and IMU requests on each vehicle's control port. ``--truth`` writes the ground
truth as JSON Lines (stdout with ``-``). ``--mirror-offset N`` also sends every vehicle state to
its port + N, so ``gizmo-host emulate --ego ... --port-offset N`` hears them beside ``gizmo-host
run``, which binds the ego's state port. ``--mavlink`` also plays the ego's PX4 over MAVLink
(:mod:`gizmo_host.app.sim_autopilot`). It runs for ``--duration`` seconds or until Ctrl-C,
then prints its counters on stderr as one JSON line and exits 0; a bad option, file or bind is
one line on stderr and exit status 2. Registered in ``gizmo_host.cli.SUBCOMMANDS`` as ``sim``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from gizmo_host.errors import ConfigError
from gizmo_host.standin.core import Rates, StandIn
from gizmo_host.standin.runner import SimRunner
from gizmo_host.standin.scenario import SCENARIOS, SimTime, Truth, build_scenario
from gizmo_host.standin.sensorset import builtin_config_text
from gizmo_host.tomlfile import read_toml
from hil_geometry.pinhole import Pinhole
from rfly_link import ports
from rfly_link.cli import json_line
from rfly_link.config import LoadedConfig, load_config

EXIT_USAGE = 2
RATE_NAMES = ("state", "others", "heartbeat", "gimbal", "truth", "distance", "boxes", "lidar")


class UsageError(ValueError):
    """A command-line value that is malformed or out of range; the message names the flag."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Values stay text and are checked by parse_options(): one line naming the flag, no usage.
    parser.add_argument(
        "--scenario", default="orbit", help=f"{' | '.join(SCENARIOS)} (default orbit)"
    )
    parser.add_argument("--duration", default="0", metavar="S", help="seconds (0: until Ctrl-C)")
    parser.add_argument(
        "--host", default="127.0.0.1", metavar="IPV4", help="send to (default 127.0.0.1)"
    )
    parser.add_argument(
        "--bind",
        default=None,
        metavar="IPV4",
        help="listen for requests on (default: --host if loopback, else 0.0.0.0)",
    )
    parser.add_argument("--copter", default="1", metavar="ID", help="the ego's CopterID (1)")
    parser.add_argument(
        "--config", default=None, metavar="PATH", help="RflySim Config.json (default: built-in)"
    )
    parser.add_argument(
        "--write-config",
        default=None,
        metavar="PATH",
        help="write the built-in Config.json (for gizmo-host rfly --config) and run",
    )
    parser.add_argument(
        "--rate",
        action="append",
        default=[],
        metavar="NAME=HZ",
        help=f"a stream's rate, 0 for off (repeatable): {', '.join(RATE_NAMES)}",
    )
    parser.add_argument("--sim-start", default="0", metavar="S", help="simulation time at start")
    parser.add_argument(
        "--time-jump",
        default=None,
        metavar="AT:BY",
        help="simulation time jumps BY seconds at scenario time AT (odometry flags it)",
    )
    parser.add_argument(
        "--camera", default=None, metavar="TOML", help="a file with a [camera] table: bearings"
    )
    parser.add_argument(
        "--mirror-offset",
        default="0",
        metavar="N",
        help="also send each vehicle state to its port + N, for gizmo-host emulate "
        "--port-offset N beside gizmo-host run (default 0: off)",
    )
    parser.add_argument(
        "--mavlink",
        nargs="?",
        const="",
        default=None,
        metavar="URL",
        help="also play the ego's autopilot over MAVLink (the mavlink extra), as CopterSim "
        "relays PX4: listen on 20100+2N-2, send to --host:20100+2N-1 (or URL)",
    )
    parser.add_argument(
        "--truth",
        nargs="?",
        const="-",
        default=None,
        metavar="PATH",
        help="ground truth as JSON Lines to PATH (stdout without one, or with -)",
    )


@dataclass(frozen=True, slots=True)
class Options:
    scenario: str
    duration_s: float
    host: str
    bind: str
    ego_id: int
    config: LoadedConfig | None
    write_config: str | None
    rates: Rates
    time: SimTime
    camera: Pinhole | None
    truth: str | None
    mirror_offset: int = 0
    mavlink: str | None = None  # "": RflySim's companion ports for the ego


def parse_options(args: argparse.Namespace) -> Options:
    """Check every value of ``args``; raises :class:`UsageError` for the first bad one."""
    if args.scenario not in SCENARIOS:
        raise UsageError(
            f"--scenario: expected one of {', '.join(SCENARIOS)}, got {args.scenario!r}"
        )
    host = _ipv4("--host", args.host)
    bind = _ipv4("--bind", args.bind) if args.bind is not None else None
    if bind is None:
        bind = host if ipaddress.IPv4Address(host).is_loopback else "0.0.0.0"
    ego_id = _integer("--copter", args.copter, 1, ports.MAX_COPTERS - 2)
    start_s = _number("--sim-start", args.sim_start)
    jump_at, jump_by = None, 0.0
    if args.time_jump is not None:
        at, sep, by = args.time_jump.partition(":")
        jump_at = _number("--time-jump AT", at if sep else "")
        jump_by = _number("--time-jump BY", by, low=None)
    try:
        time = SimTime(start_s, jump_at, jump_by)
    except ValueError as exc:
        raise UsageError(f"--time-jump: {exc}") from None
    return Options(
        scenario=args.scenario,
        duration_s=_number("--duration", args.duration),
        host=host,
        bind=bind,
        ego_id=ego_id,
        config=None if args.config is None else _config(args.config),
        write_config=args.write_config,
        rates=_rates(args.rate),
        time=time,
        camera=None if args.camera is None else _camera(args.camera),
        truth=args.truth,
        mirror_offset=_integer("--mirror-offset", args.mirror_offset, -65535, 65535),
        mavlink=getattr(args, "mavlink", None),
    )


def _integer(flag: str, text: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{flag}: expected an integer {low}..{high}, got {text!r}") from None
    if not low <= value <= high:
        raise UsageError(f"{flag}: expected an integer {low}..{high}, got {value}")
    return value


def _number(flag: str, text: str, low: float | None = 0.0) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (low is not None and value < low):
        wanted = "a finite number" + (f" >= {low:g}" if low is not None else "")
        raise UsageError(f"{flag}: expected {wanted}, got {text!r}")
    return value


def _ipv4(flag: str, text: str) -> str:
    try:
        return str(ipaddress.IPv4Address(text))
    except ValueError:
        raise UsageError(f"{flag}: expected an IPv4 address, got {text!r}") from None


def _rates(items: list[str]) -> Rates:
    values: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or name not in RATE_NAMES:
            raise UsageError(
                f"--rate: expected NAME=HZ with NAME one of {', '.join(RATE_NAMES)}, got {item!r}"
            )
        values[f"{name}_hz"] = _number(f"--rate {name}", text)
    try:
        return Rates(**values)
    except ValueError as exc:
        raise UsageError(f"--rate {exc}") from None


def _config(path: str) -> LoadedConfig:
    try:
        return load_config(path)
    except OSError as exc:
        raise UsageError(f"--config: {exc.strerror}: {path}") from None
    except ValueError as exc:  # rfly_link's ConfigError names the file or the sensor
        raise UsageError(f"--config: {exc}") from None


_CAMERA_NUMBERS = ("hfov_deg", "vfov_deg", "fx_px", "fy_px", "cx_px", "cy_px")
_CAMERA_IGNORED = ("on_gimbal", "rflysim_sensor")  # the host's keys, no geometry here


def _camera(path: str) -> Pinhole:
    """The ``[camera]`` table of a host TOML file as the simulator's camera (its bearings)."""
    try:
        doc = read_toml(path)
    except ConfigError as exc:
        raise UsageError(f"--camera: {exc}") from None
    table = doc.get("camera")
    if not isinstance(table, dict):
        raise UsageError(f"--camera: {path}: expected a [camera] table")
    known = {"width_px", "height_px", "mount_rpy_deg", "mount_position_frd_m"}
    unknown = set(table) - known - set(_CAMERA_NUMBERS) - set(_CAMERA_IGNORED)
    if unknown:
        raise UsageError(f"--camera: {path}: unknown key camera.{sorted(unknown)[0]}")
    try:
        numbers = {k: float(table[k]) for k in _CAMERA_NUMBERS if k in table}
        rpy = tuple(float(v) for v in table.get("mount_rpy_deg", (0.0, 0.0, 0.0)))
        offset = tuple(float(v) for v in table.get("mount_position_frd_m", (0.0, 0.0, 0.0)))
        if len(rpy) != 3 or len(offset) != 3:
            raise ValueError("camera.mount_rpy_deg, mount_position_frd_m: expected 3 numbers")
        return Pinhole.from_table(
            int(table["width_px"]),
            int(table["height_px"]),
            hfov_deg=numbers.get("hfov_deg"),
            vfov_deg=numbers.get("vfov_deg"),
            fx_px=numbers.get("fx_px"),
            fy_px=numbers.get("fy_px"),
            cx_px=numbers.get("cx_px"),
            cy_px=numbers.get("cy_px"),
            mount_rpy_deg=rpy,
            mount_position_frd_m=offset,
        )
    except KeyError as exc:
        raise UsageError(f"--camera: {path}: camera.{exc.args[0]}: expected an integer") from None
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--camera: {path}: {exc}") from None


def _truth_writer(stream: TextIO) -> Any:
    def write(truth: Truth, host_ns: int) -> None:
        stream.write(json_line({**truth.to_dict(), "host_ns": host_ns}) + "\n")
        stream.flush()

    return write


def run(args: argparse.Namespace) -> int:
    try:
        options = parse_options(args)
    except UsageError as exc:
        print(f"sim: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if options.write_config is not None:
        try:
            Path(options.write_config).write_text(builtin_config_text(options.host, options.ego_id))
        except OSError as exc:
            print(f"sim: --write-config: {exc.strerror}: {options.write_config}", file=sys.stderr)
            return EXIT_USAGE
    scenario = build_scenario(options.scenario, ego_id=options.ego_id, time=options.time)
    try:
        stand_in = StandIn(
            scenario,
            host=options.host,
            config=options.config,
            rates=options.rates,
            camera=options.camera,
            mirror_offset=options.mirror_offset,
        )
    except ValueError as exc:  # the mirrored ports leave the port range
        print(f"sim: --mirror-offset: {str(exc).removeprefix('mirror_offset: ')}", file=sys.stderr)
        return EXIT_USAGE
    print(json_line(_banner(options, stand_in)), file=sys.stderr, flush=True)
    with contextlib.ExitStack() as stack:
        sink = None
        if options.truth is not None:
            try:
                out = (
                    sys.stdout
                    if options.truth == "-"
                    else stack.enter_context(open(options.truth, "w", encoding="utf-8"))
                )
            except OSError as exc:
                print(f"sim: --truth: {exc.strerror}: {options.truth}", file=sys.stderr)
                return EXIT_USAGE
            sink = _truth_writer(out)
        runner = SimRunner(stand_in, bind_host=options.bind, on_truth=sink)
        try:
            main = runner.run(options.duration_s or None)
            if options.mavlink is not None:
                from gizmo_host.app.sim_autopilot import with_autopilot  # noqa: PLC0415 - extra

                main = with_autopilot(main, runner, options.mavlink, options.host, options.bind)
            with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends the run; stats still print
                asyncio.run(main)
        except (OSError, ValueError) as exc:
            print(f"sim: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
            return EXIT_USAGE
    stats = runner.stats
    print(
        json_line(
            {
                "sim": "stats",
                **stats.stand_in._asdict(),
                "send_failed": stats.send.failed,
                "bytes": stats.send.bytes,
            }
        ),
        file=sys.stderr,
    )
    return 0


def _banner(options: Options, stand_in: StandIn) -> dict[str, Any]:
    scenario = stand_in.scenario
    return {
        "sim": scenario.name,
        "host": options.host,
        "ego": scenario.ego.copter_id,
        "others": [v.copter_id for v in scenario.others],
        "control_ports": sorted(stand_in.control_ports()),
        "mirror_offset": stand_in.mirror_offset,
        "sensors": [
            {"seq_id": s.seq_id, "type_id": s.type_id, "to": f"{s.receiver_ip}:{s.port}"}
            for s in stand_in.sensors.simulated
        ],
        "ignored": [
            {"seq_id": seq, "type_id": type_id, "why": why}
            for seq, type_id, why in stand_in.sensors.ignored
        ],
    }
