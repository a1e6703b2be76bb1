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

Every ``[emulate]`` key is a row of ``EMULATE_SETTINGS`` (docs/hil.md's table: ``python -m
gizmo_host.rigs.board.emulate_settings``); ``[camera]`` is checked by the host's rows and rules
(``gizmo_host.rigs.board.compose``) and handed in resolved. With neither ``boxes`` nor ``poses``
the built-in scenario plays. ``listen`` (default
127.0.0.1), ``port_offset`` (added to every RflySim port bound) and ``max_age_s`` (0.5) sit in
``[emulate]`` and apply to both sources.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusion.camera import CameraConfig
from fusion.geometry import Vec3
from gizmo_core import ConfigError
from gizmo_host.rigs.board.detections import LatencyModel, OutputPolicy, PerCycle, class_id
from gizmo_host.setting import Setting, check_keys, fail, markdown_table
from gizmo_host.tomlfile import read_toml
from gizmo_host.wire.results import ResultType
from hil_geometry.pinhole import Pinhole


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


EMULATE = frozenset({"emulate"})


def _e(name: str, kind: str, doc: str, low: float | None = None, high: float | None = None,
       unit: str = "", *, section: str = "emulate", default: Any = None,
       **kw: Any) -> Setting:  # fmt: skip
    """A row of ``gizmo-host emulate``'s table; numbers default to the settings' own."""
    cls = {"emulate": EmulateSettings, "emulate.boxes": BoxesSettings,
           "emulate.poses": PosesSettings}[section]  # fmt: skip
    fields = {f.name: f for f in dataclasses.fields(cls)}
    field_ = fields.get(name)
    if default is None and field_ is not None and field_.default is not dataclasses.MISSING:
        default = field_.default
    return Setting(section, name, kind, default, doc, low, high, unit, commands=EMULATE, **kw)


_PORT = 0, 65535
_SIZE = 2, 65535
_COPTER = 1, 450
# [emulate], [emulate.boxes] and [emulate.poses]: every key its row (type, default, range).
EMULATE_SETTINGS: tuple[Setting, ...] = (
    _e("rate_hz", "float", "recognition cycles per second", 0.1, 1000, "Hz", flag="--rate-hz"),
    _e("baudrate", "int", "the line rate the writes are paced at", 50, 20_000_000,
       flag="--baud", metavar="N"),
    _e("source_id", "int", "the frames' source_id", 0, 255),
    _e("boot_offset_ms", "int", "the device clock at the start", 0, 2**32 - 1, "ms",
       flag="--boot-offset-ms"),
    _e("skew_ppm", "float", "device clock rate above the host's", -100_000, 100_000, "ppm",
       flag="--skew-ppm", metavar="PPM"),
    _e("latency", "str", "processing latency in ms: MS, uniform:LOW:HIGH or normal:MEAN:SD",
       default="normal:12:1.5", flag="--latency", metavar="DIST"),
    _e("start_sequence", "int", "the first frame's sequence (e.g. 65500 to wrap early)", 0,
       65535, flag="--start-sequence", metavar="N"),
    _e("result_type", "str", "the frames' result type", default="DETECTOR",
       choices=("DETECTOR", "COLOR_BLOB", "QR_CODE"), flag="--result-type"),
    _e("classes", "table", "target -> class id or name (--class TARGET=CLASS)", default={}),
    _e("default_class", "str", "the other targets' class; false: not reported",
       default="PEDESTRIAN"),
    _e("not_detected_id", "str", "the class of a frame with no target (default: the first "
       "mapped class, else default_class)"),
    _e("per_cycle", "str", "frames per cycle", default="best", choices=("best", "all"),
       flag="--per-cycle"),
    _e("listen", "str", "address to receive RflySim on", default="127.0.0.1", flag="--listen",
       metavar="HOST"),
    _e("port_offset", "int", "added to every RflySim port bound", -65535, 65535,
       flag="--port-offset", metavar="N"),
    _e("max_age_s", "float", "a box or pose older than this is not drawn", 0.001, 3600, "s"),
    _e("max_range_m", "float", "a target further than this is not drawn", 0, 100_000, "m",
       open_low=True),
    _e("port", "int", "RflySim TypeID 30 boxes on this port (required)", *_PORT,
       section="emulate.boxes"),
    _e("width_px", "int", "the box sensor's image width (required)", *_SIZE, "px",
       section="emulate.boxes"),
    _e("height_px", "int", "the box sensor's image height (required)", *_SIZE, "px",
       section="emulate.boxes"),
    _e("ego", "int", "the camera carrier's CopterID", *_COPTER, section="emulate.poses"),
    _e("targets", "list", "the targets' CopterIDs", *_COPTER, section="emulate.poses",
       default=[]),
    _e("rflysim3d", "bool", "also CoptReqData / ObjReqData on 20006", section="emulate.poses"),
    _e("half_extent_m", "triple", "a target's half size: its box", 0, 1000, "m",
       section="emulate.poses"),
)  # fmt: skip
_ROWS = {s.key: s for s in EMULATE_SETTINGS}
_NUMBERS = tuple(s.name for s in EMULATE_SETTINGS if s.section == "emulate" and s.low is not None)
_KEYS = [s.name for s in EMULATE_SETTINGS if s.section == "emulate"] + ["boxes", "poses"]


def _check(section: str, name: str, value: Any, where: str) -> Any:
    return _ROWS[f"{section}.{name}"].check(value, f"{where}{section}.{name}", text=True)


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
    """Settings from a TOML file's ``[emulate]`` table, then ``overrides`` (flags:
    ``{"emulate": {...}}``, None values ignored). ``camera_config`` is the file's ``[camera]``,
    checked and resolved by the caller as ``gizmo-host run`` resolves it
    (``gizmo_host.rigs.board.compose.emulator_camera_config``)."""
    data: dict[str, Any] = read_toml(path) if path is not None else {}
    where = f"{path}: " if path is not None else ""
    merged = _merge(data, overrides or {})
    settings = parse_emulate(_table(f"{where}emulate", merged.get("emulate", {})), where)
    if camera_config is not None:
        settings = _replace_camera(settings, camera_config)
    return settings


def _replace_camera(settings: EmulateSettings, camera: CameraConfig) -> EmulateSettings:
    values = {name: getattr(settings, name) for name in EmulateSettings.__dataclass_fields__}
    values["camera"] = camera
    return EmulateSettings(**values)


def parse_emulate(values: Mapping[str, Any], where: str = "") -> EmulateSettings:
    section = f"{where}emulate"
    check_keys(section, values, _KEYS)
    out: dict[str, Any] = {}
    for key in _NUMBERS:
        if key in values:
            out[key] = _check("emulate", key, values[key], where)
    if "latency" in values:
        out["latency"] = LatencyModel.parse(values["latency"], f"{section}.latency")
    if "listen" in values:
        out["listen"] = _check("emulate", "listen", values["listen"], where)
        if not out["listen"]:
            raise fail(f"{section}.listen", "a non-empty string", values["listen"])
    out["policy"] = _policy(values, section)
    if "boxes" in values:
        out["boxes"] = _boxes(_table(f"{section}.boxes", values["boxes"]), where)
    if "poses" in values:
        out["poses"] = _poses(_table(f"{section}.poses", values["poses"]), where)
    return EmulateSettings(**out)


def _table(key: str, value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    raise fail(key, "a table", value)


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
        for target, value in _table(f"{section}.classes", values.get("classes", {})).items()
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


def _boxes(values: Mapping[str, Any], where: str) -> BoxesSettings:
    section = "emulate.boxes"
    check_keys(f"{where}{section}", values, ("port", "width_px", "height_px"))
    for key in ("port", "width_px", "height_px"):
        if key not in values:
            raise ConfigError(f"{where}{section}.{key}: expected an integer, got nothing")
    return BoxesSettings(**{k: _check(section, k, v, where) for k, v in values.items()})


def _poses(values: Mapping[str, Any], where: str) -> PosesSettings:
    section = "emulate.poses"
    check_keys(f"{where}{section}", values, ("ego", "targets", "rflysim3d", "half_extent_m"))
    fields: dict[str, Any] = {}
    for key, value in values.items():
        if key != "targets":
            fields[key] = _check(section, key, value, where)
        elif not isinstance(value, (list, tuple)):
            raise fail(f"{where}{section}.targets", "a list of CopterIDs", value)
        else:
            row = _ROWS[f"{section}.targets"]
            fields[key] = tuple(
                row.check(v, f"{where}{section}.targets[{i}]", text=True)
                for i, v in enumerate(value)
            )
    return PosesSettings(**fields)


if __name__ == "__main__":
    sys.stdout.write(markdown_table(EMULATE_SETTINGS))
