"""The emulated board as ``gizmo-host emulate`` and the demo compose it: its target source,
the emulation per start time, and the camera and boxes a Config.json gives it.

``[camera] rflysim_sensor`` is resolved exactly as ``gizmo-host run`` resolves it
(``gizmo_host.app.world_config``), so the board and the host see one camera.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from fusion.camera import CameraConfig
from gizmo_core import ConfigError, Selector
from gizmo_host.app.host_config import StoreConfig
from gizmo_host.app.world_config import RflySimConfig, camera_from_table, resolve_world
from gizmo_host.rigs.board.board import BoardModel
from gizmo_host.rigs.board.builtin_scene import BoardScenario
from gizmo_host.rigs.board.emulate_settings import (
    EMULATE_SETTINGS,
    EmulateSettings,
    emulator_camera,
    load_settings,
)
from gizmo_host.rigs.board.emulation import Emulation
from gizmo_host.rigs.board.faults import (
    FaultTimeline,
    load_timeline,
    parse_fault_flag,
    validate_for_port,
)
from gizmo_host.rigs.board.target_sources import (
    BoxSource,
    PoseTargetSource,
    ScenarioSource,
    TargetSource,
)
from gizmo_host.setting import overrides_from
from gizmo_host.tomlfile import read_toml
from hil_geometry.pinhole import rotation_quaternion, rpy_deg_from_rotation
from rfly_link.config_json import load_config as load_rfly_config
from rfly_link.messages import TypeId


def rfly_boxes(path: str) -> dict[str, Any]:
    """The TypeID 30 sensor of a Config.json as ``[emulate.boxes]`` values."""
    try:
        loaded = load_rfly_config(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    for sensor in loaded.sensors:
        if sensor.type_id == TypeId.BOX_TARGETS:
            return {
                "port": sensor.port,
                "width_px": sensor.data_width,
                "height_px": sensor.data_height,
            }
    raise ConfigError(f"{path}: no TypeID 30 sensor in VisionSensors")


def emulator_camera_config(
    path: str, data: Mapping[str, Any], rfly_config: str | None
) -> CameraConfig | None:
    """The ``[camera]`` of ``data`` (None without one), checked and resolved as ``gizmo-host
    run`` resolves it: with ``rflysim_sensor``, size, field of view and mount from that
    Config.json sensor (``--rfly-config``, else the file's ``[rflysim] config``), overridden by
    the table. The mount is the emulator's own reading of the sensor's entry, not the host's."""
    camera = data.get("camera")
    if camera is None:
        return None
    if not isinstance(camera, Mapping):
        raise ConfigError(f"{path}: camera: expected a table, got {camera!r}")
    if camera.get("rflysim_sensor") is None:
        try:
            return camera_from_table(camera)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    rflysim = data.get("rflysim")
    config = rfly_config or (rflysim.get("config") if isinstance(rflysim, Mapping) else None)
    if not isinstance(config, str):
        raise ConfigError(
            f"{path}: camera.rflysim_sensor: expected --rfly-config (or [rflysim] config), "
            "the Config.json to read the sensor from"
        )
    try:
        setup = resolve_world(camera, {}, RflySimConfig(config=config), StoreConfig(), Selector())
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    assert setup is not None  # a [camera] table and no [world] enabled = false
    if "mount_rpy_deg" in camera:
        return setup.camera
    sensor = next(
        s for s in load_rfly_config(config).sensors if s.seq_id == setup.camera.rflysim_sensor
    )
    if sensor.eular_or_quat > 0.5:
        rpy = rpy_deg_from_rotation(rotation_quaternion(sensor.sensor_ang_quat))
    else:
        rpy = sensor.sensor_ang_eular  # degrees (see docs/hil.md, "Simulator geometry")
    return dataclasses.replace(setup.camera, mount_rpy_deg=rpy)


def build_source(settings: EmulateSettings) -> TargetSource:
    camera = emulator_camera(settings.camera) if settings.camera is not None else None
    max_age_ns = round(settings.max_age_s * 1e9)
    if settings.poses is not None:
        if camera is None:
            raise ConfigError("camera: the pose source needs a [camera] table (--config FILE)")
        offset = settings.port_offset
        return PoseTargetSource(
            camera,
            ego=settings.poses.ego,
            targets=settings.poses.targets,
            rflysim3d=settings.poses.rflysim3d,
            host=settings.listen,
            bind=lambda port: port + offset,
            max_age_ns=max_age_ns,
            half_extent_m=settings.poses.half_extent_m,
            max_range_m=settings.max_range_m,
        )
    if settings.boxes is not None:
        boxes = settings.boxes
        return BoxSource(
            boxes.port, boxes.width_px, boxes.height_px, host=settings.listen, max_age_ns=max_age_ns
        )
    return ScenarioSource(BoardScenario(camera))


def emulation_factory(
    settings: EmulateSettings, timeline: FaultTimeline
) -> Callable[[int], Emulation]:
    def make(start_ns: int) -> Emulation:
        board = BoardModel(
            source_id=settings.source_id,
            result_type=settings.policy.result_type,
            sequence=settings.start_sequence,
            timestamp_ms=settings.boot_offset_ms,
            period_ms=max(1, round(1000 / settings.rate_hz)),
            live_clock=True,
            skew_ppm=settings.skew_ppm,
        )
        return Emulation(
            board=board,
            policy=settings.policy,
            latency=settings.latency,
            timeline=timeline,
            start_ns=start_ns,
            rate_hz=settings.rate_hz,
        )

    return make


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    emulate: dict[str, Any] = dict(overrides_from(args, EMULATE_SETTINGS).get("emulate", {}))
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
    """``gizmo-host emulate``'s settings and fault timeline: ``--config``'s ``[emulate]`` and
    ``[camera]``, the flags over them, ``--faults`` and every ``--fault``."""
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
    camera = (
        None if args.config is None else emulator_camera_config(args.config, data, args.rfly_config)
    )
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
