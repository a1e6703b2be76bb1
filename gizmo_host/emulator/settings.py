"""``gizmo-host emulate`` settings: the ``[emulate]`` and ``[camera]`` tables of a TOML file,
then flags that override them. A ``gizmo-host run`` file can serve it too: it reads ``[camera]``
(and ``[rflysim] config`` for ``rflysim_sensor``) and leaves the other tables alone; ``gizmo-host
run`` rejects ``[emulate]``, so that table lives in a file of its own. Example::

    [camera]                       # the host's table, read into hil_geometry's Pinhole
    # rflysim_sensor = 1           # or a Config.json sensor's (--rfly-config, [rflysim] config)
    width_px = 640
    height_px = 480
    hfov_deg = 90.0
    mount_rpy_deg = [0.0, -90.0, 0.0]

    [emulate]
    rate_hz = 30                   # recognition cycles per second
    baudrate = 115200              # the line rate the writes are paced at
    source_id = 1
    boot_offset_ms = 60000         # the device clock at the start
    skew_ppm = 0.0                 # device clock rate above the host's
    latency = "normal:12:1.5"      # ms: 12 | uniform:LOW:HIGH | normal:MEAN:SD
    start_sequence = 0             # e.g. 65500 to wrap early
    result_type = "DETECTOR"       # DETECTOR | COLOR_BLOB | QR_CODE
    classes = { "2" = "PEDESTRIAN", "3" = "CAT" }   # target -> class id or name
    default_class = "PEDESTRIAN"   # other targets; false: not reported
    per_cycle = "best"             # best | all

    [emulate.boxes]                # RflySim TypeID 30 boxes on a vision-sensor port
    port = 9999
    width_px = 640
    height_px = 480

    [emulate.poses]                # CopterSim / RflySim3D poses through [camera]
    ego = 1
    targets = [2, 3]
    rflysim3d = false              # also CoptReqData / ObjReqData on 20006
    half_extent_m = [0.3, 0.3, 0.15]

With neither ``boxes`` nor ``poses`` the built-in scenario plays. ``listen`` (default
127.0.0.1), ``port_offset`` (added to every RflySim port bound) and ``max_age_s`` (0.5) sit in
``[emulate]`` and apply to both sources.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusion.camera import CameraConfig
from fusion.errors import ConfigError as FusionConfigError
from fusion.geometry import Vec3
from gizmo_host.emulator.checks import Number, boolean, check_keys, table, text
from gizmo_host.emulator.targets import LatencyModel, OutputPolicy, PerCycle, class_id
from gizmo_host.errors import ConfigError
from gizmo_host.tomlfile import read_toml
from gizmo_host.wire.results import ResultType
from hil_geometry.pinhole import Pinhole

_PORT = Number(0, 65535, integer=True)
_SIZE = Number(2, 65535, integer=True)
_COPTER = Number(1, 450, integer=True)
_NUMBERS = {
    "rate_hz": Number(0.1, 1000.0),
    "baudrate": Number(50, 20_000_000, integer=True),
    "source_id": Number(0, 255, integer=True),
    "boot_offset_ms": Number(0, 2**32 - 1, integer=True),
    "skew_ppm": Number(-100_000.0, 100_000.0),
    "start_sequence": Number(0, 65535, integer=True),
    "port_offset": Number(-65535, 65535, integer=True),
    "max_age_s": Number(0.001, 3600.0),
    "max_range_m": Number(0.0, 100_000.0, open_low=True),
}
_KEYS = {
    *_NUMBERS,
    "latency",
    "result_type",
    "classes",
    "default_class",
    "not_detected_id",
    "per_cycle",
    "listen",
    "boxes",
    "poses",
}


@dataclass(frozen=True, slots=True)
class BoxesSettings:
    port: int
    width_px: int
    height_px: int


@dataclass(frozen=True, slots=True)
class PosesSettings:
    ego: int = 1
    targets: tuple[int, ...] = ()
    rflysim3d: bool = False
    half_extent_m: Vec3 = (0.3, 0.3, 0.15)


@dataclass(frozen=True, slots=True)
class EmulateSettings:
    rate_hz: float = 30.0
    baudrate: int = 115200
    source_id: int = 1
    boot_offset_ms: int = 60_000
    skew_ppm: float = 0.0
    start_sequence: int = 0
    latency: LatencyModel = field(default_factory=LatencyModel)
    policy: OutputPolicy = field(default_factory=OutputPolicy)
    camera: CameraConfig | None = None
    boxes: BoxesSettings | None = None
    poses: PosesSettings | None = None
    listen: str = "127.0.0.1"
    port_offset: int = 0
    max_age_s: float = 0.5
    max_range_m: float = 200.0


def emulator_camera(config: CameraConfig) -> Pinhole:
    """The ``[camera]`` table's values as the emulator's own camera (not fusion's model)."""
    return Pinhole.from_table(
        config.width_px,
        config.height_px,
        hfov_deg=config.hfov_deg,
        vfov_deg=config.vfov_deg,
        fx_px=config.fx_px,
        fy_px=config.fy_px,
        cx_px=config.cx_px,
        cy_px=config.cy_px,
        mount_rpy_deg=config.mount_rpy_deg,
        mount_position_frd_m=config.mount_position_frd_m,
    )


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key, {}), Mapping):
            out[key] = _merge(out.get(key, {}), value)
        elif value is not None:
            out[key] = value
    return out


def load_settings(
    path: str | Path | None,
    overrides: Mapping[str, Any] | None = None,
    *,
    camera_config: CameraConfig | None = None,
) -> EmulateSettings:
    """Settings from a TOML file's ``[emulate]`` and ``[camera]`` tables, then ``overrides``
    (flags: ``{"emulate": {...}, "camera": {...}}``, None values ignored). ``camera_config``,
    when given, is the camera already resolved by the caller (a ``[camera]`` table naming a
    Config.json sensor, ``gizmo_host.app.emulation``) and replaces the table."""
    data: dict[str, Any] = read_toml(path) if path is not None else {}
    where = f"{path}: " if path is not None else ""
    merged = _merge(data, overrides or {})
    emulate = table(f"{where}emulate", merged.get("emulate", {}))
    camera = merged.get("camera")
    settings = parse_emulate(emulate, where)
    if camera_config is not None:
        settings = _replace_camera(settings, camera_config)
    elif camera is not None:
        try:
            config = CameraConfig.from_mapping(table(f"{where}camera", camera))
        except FusionConfigError as exc:
            raise ConfigError(f"{where}{exc}") from None
        settings = _replace_camera(settings, config)
    return settings


def _replace_camera(settings: EmulateSettings, camera: CameraConfig) -> EmulateSettings:
    values = {name: getattr(settings, name) for name in EmulateSettings.__dataclass_fields__}
    values["camera"] = camera
    return EmulateSettings(**values)


def parse_emulate(values: Mapping[str, Any], where: str = "") -> EmulateSettings:
    section = f"{where}emulate"
    check_keys(section, values, _KEYS)
    out: dict[str, Any] = {}
    for key, spec in _NUMBERS.items():
        if key in values:
            number = spec.check(f"{section}.{key}", values[key])
            out[key] = int(number) if spec.integer else number
    if "latency" in values:
        out["latency"] = LatencyModel.parse(values["latency"], f"{section}.latency")
    if "listen" in values:
        out["listen"] = text(f"{section}.listen", values["listen"])
    out["policy"] = _policy(values, section)
    if "boxes" in values:
        out["boxes"] = _boxes(table(f"{section}.boxes", values["boxes"]), f"{section}.boxes")
    if "poses" in values:
        out["poses"] = _poses(table(f"{section}.poses", values["poses"]), f"{section}.poses")
    return EmulateSettings(**out)


def _policy(values: Mapping[str, Any], section: str) -> OutputPolicy:
    result_type = ResultType.DETECTOR
    if "result_type" in values:
        raw = values["result_type"]
        names = {t.name: t for t in ResultType}
        if isinstance(raw, str) and raw.upper() in names:
            result_type = names[raw.upper()]
        elif isinstance(raw, int) and not isinstance(raw, bool) and raw in set(ResultType):
            result_type = ResultType(raw)
        else:
            raise ConfigError(
                f"{section}.result_type: expected one of {', '.join(names)}, got {raw!r}"
            )
    classes = {
        str(target): class_id(result_type, value, f"{section}.classes.{target}")
        for target, value in table(f"{section}.classes", values.get("classes", {})).items()
    }
    fields: dict[str, Any] = {"result_type": result_type, "classes": classes}
    if "default_class" in values:
        raw = values["default_class"]
        fields["default_class"] = (
            None if raw is False else class_id(result_type, raw, f"{section}.default_class")
        )
    elif result_type is not ResultType.DETECTOR:
        fields["default_class"] = None if classes else 1
    if "not_detected_id" in values:
        key = f"{section}.not_detected_id"
        fields["not_detected_id"] = class_id(result_type, values["not_detected_id"], key)
    if "per_cycle" in values:
        raw = values["per_cycle"]
        choices = {p.value: p for p in PerCycle}
        if raw not in choices:
            raise ConfigError(f"{section}.per_cycle: expected best or all, got {raw!r}")
        fields["per_cycle"] = choices[raw]
    return OutputPolicy(**fields)


def _boxes(values: Mapping[str, Any], section: str) -> BoxesSettings:
    check_keys(section, values, {"port", "width_px", "height_px"})
    for key in ("port", "width_px", "height_px"):
        if key not in values:
            raise ConfigError(f"{section}.{key}: expected an integer, got nothing")
    return BoxesSettings(
        port=_PORT.check_int(f"{section}.port", values["port"]),
        width_px=_SIZE.check_int(f"{section}.width_px", values["width_px"]),
        height_px=_SIZE.check_int(f"{section}.height_px", values["height_px"]),
    )


def _poses(values: Mapping[str, Any], section: str) -> PosesSettings:
    check_keys(section, values, {"ego", "targets", "rflysim3d", "half_extent_m"})
    fields: dict[str, Any] = {}
    if "ego" in values:
        fields["ego"] = _COPTER.check_int(f"{section}.ego", values["ego"])
    if "targets" in values:
        raw = values["targets"]
        if not isinstance(raw, (list, tuple)):
            raise ConfigError(f"{section}.targets: expected a list of CopterIDs, got {raw!r}")
        fields["targets"] = tuple(
            _COPTER.check_int(f"{section}.targets[{i}]", v) for i, v in enumerate(raw)
        )
    if "rflysim3d" in values:
        fields["rflysim3d"] = boolean(f"{section}.rflysim3d", values["rflysim3d"])
    if "half_extent_m" in values:
        raw = values["half_extent_m"]
        if not isinstance(raw, (list, tuple)) or len(raw) != 3:
            raise ConfigError(f"{section}.half_extent_m: expected 3 numbers, got {raw!r}")
        extent = Number(0.0, 1000.0)
        fields["half_extent_m"] = tuple(
            extent.check(f"{section}.half_extent_m[{i}]", v) for i, v in enumerate(raw)
        )
    return PosesSettings(**fields)
