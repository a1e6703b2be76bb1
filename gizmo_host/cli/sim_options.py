"""``gizmo-host sim``'s options, checked, and the lines it prints: the banner, the truth, the
counters. A bad value is a :class:`gizmo_host.cli.flags.UsageError` naming the flag (the command
prints it and exits 2)."""

from __future__ import annotations

import argparse
import ipaddress
from dataclasses import dataclass
from typing import Any, TextIO

from gizmo_core import ConfigError
from gizmo_host.cli.flags import UsageError, integer, ipv4, number
from gizmo_host.jsonl import json_text
from gizmo_host.rigs.rflysim.core import Rates, StandIn
from gizmo_host.rigs.rflysim.scenario import SCENARIOS, SimTime, TargetMotion, Truth
from gizmo_host.rigs.rflysim.sim_runner import SimRunner
from gizmo_host.tomlfile import read_toml
from hil_geometry.pinhole import Pinhole
from rfly_link import ports
from rfly_link.config_json import LoadedConfig, load_config

RATE_NAMES = ("state", "others", "heartbeat", "gimbal", "truth", "distance", "boxes", "lidar")


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
    target: TargetMotion | None = None  # --scenario track: the target's speed and turn rate


def parse_options(args: argparse.Namespace) -> Options:
    """Check every value of ``args``; raises :class:`UsageError` for the first bad one."""
    if args.scenario not in SCENARIOS:
        raise UsageError(
            f"--scenario: expected one of {', '.join(SCENARIOS)}, got {args.scenario!r}"
        )
    host = ipv4("--host", args.host)
    bind = ipv4("--bind", args.bind) if args.bind is not None else None
    if bind is None:
        bind = host if ipaddress.IPv4Address(host).is_loopback else "0.0.0.0"
    ego_id = integer("--copter", args.copter, 1, ports.MAX_COPTERS - 2)
    start_s = number("--sim-start", args.sim_start)
    jump_at, jump_by = None, 0.0
    if args.time_jump is not None:
        at, sep, by = args.time_jump.partition(":")
        jump_at = number("--time-jump AT", at if sep else "")
        jump_by = number("--time-jump BY", by, low=None)
    try:
        time = SimTime(start_s, jump_at, jump_by)
    except ValueError as exc:
        raise UsageError(f"--time-jump: {exc}") from None
    return Options(
        target=_target(args),
        scenario=args.scenario,
        duration_s=number("--duration", args.duration),
        host=host,
        bind=bind,
        ego_id=ego_id,
        config=None if args.config is None else _config(args.config),
        write_config=args.write_config,
        rates=_rates(args.rate),
        time=time,
        camera=None if args.camera is None else _camera(args.camera),
        truth=args.truth,
        mirror_offset=integer("--mirror-offset", args.mirror_offset, -65535, 65535),
        mavlink=getattr(args, "mavlink", None),
    )


def _target(args: argparse.Namespace) -> TargetMotion | None:
    speed, rate = getattr(args, "target_speed", None), getattr(args, "target_turn_rate", None)
    if speed is None and rate is None:
        return None
    if args.scenario != "track":
        flag = "--target-speed" if speed is not None else "--target-turn-rate"
        raise UsageError(f"{flag}: only with --scenario track")
    default = TargetMotion()
    try:
        return TargetMotion(
            default.speed_m_s if speed is None else number("--target-speed", speed),
            default.turn_rate_deg_s
            if rate is None
            else number("--target-turn-rate", rate, low=None),
        )
    except UsageError:
        raise
    except ValueError as exc:
        raise UsageError(f"--target-speed/--target-turn-rate: {exc}") from None


def _rates(items: list[str]) -> Rates:
    values: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or name not in RATE_NAMES:
            raise UsageError(
                f"--rate: expected NAME=HZ with NAME one of {', '.join(RATE_NAMES)}, got {item!r}"
            )
        values[f"{name}_hz"] = number(f"--rate {name}", text)
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


def truth_writer(stream: TextIO) -> Any:
    def write(truth: Truth, host_ns: int) -> None:
        stream.write(json_text({**truth.to_dict(), "host_ns": host_ns}) + "\n")
        stream.flush()

    return write


def banner(options: Options, stand_in: StandIn) -> dict[str, Any]:
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


def stats_line(runner: SimRunner) -> str:
    """The counters the command prints on stderr at the end, as one JSON line."""
    stats = runner.stats
    return json_text(
        {
            "sim": "stats",
            **stats.stand_in._asdict(),
            "send_failed": stats.send.failed,
            "bytes": stats.send.bytes,
        }
    )
