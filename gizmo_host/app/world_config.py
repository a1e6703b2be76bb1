"""``[camera]``, ``[world]`` and ``[rflysim]`` of ``gizmo-host run``: the world model's settings.

The world model runs when ``[camera]`` is configured (it cannot place anything without the
camera) unless ``[world] enabled = false``; ``[world]`` or ``[rflysim]`` without ``[camera]``
is an error rather than a silently idle model. ``[camera]`` and ``[world]`` are checked by
their rows of the settings table and its rules, then become fusion's ``CameraConfig`` and
``WorldConfig``; ``[world]`` inherits ``ttl_ms``,
``ttl_ms_by_type`` and ``reset_hold_ms`` from ``[store]`` unless it sets them, and requires a
pose for PROCEED (``pose_required``) when a pose source is configured: ``[rflysim] copter_id``
or ``[mavlink] url`` with ``pose``; with both, ``[world] pose_source`` chooses one (the other's
poses are not used: two clocks never feed one pose history).
``camera.rflysim_sensor`` takes the size, field of view and mount of that Config.json sensor
(``[rflysim] config``); keys in ``[camera]`` override them. Example::

    [camera]
    width_px = 640
    height_px = 480
    hfov_deg = 90.0
    mount_rpy_deg = [0.0, -90.0, 0.0]
    mount_position_frd_m = [0.0, 0.0, 0.1]

    [world]
    rate_hz = 50
    publish_on_change = true

    [rflysim]
    copter_id = 1
    config = "Config.json"
    bind = "127.0.0.1"
    sim_host = "127.0.0.1"
    request_odometry_hz = 100
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from fusion import CameraConfig, WorldConfig, WorldModel
from fusion.config import SOURCE_STALE_MS
from fusion.tracking import TrackingConfig
from gizmo_core import ConfigError, Selector
from gizmo_host.app.settings import (
    AUTOPILOT_POSE_JUMP_M,
    BY_KEY,
    POSE_SOURCES,
    RULES,
    default,
    section_keys,
)
from gizmo_host.bridge.rfly_mounts import sensor_rpy_deg
from gizmo_host.bridge.rfly_sources import RflySimSetup
from gizmo_host.setting import check_keys, check_rules, fail
from gizmo_host.wire.results import ResultType
from rfly_link.config_json import LoadedConfig, VisionSensorConfig, load_config
from rfly_link.messages import TypeId
from rfly_link.sensors import IMAGE_TYPES

_INHERITED = ("ttl_ms", "ttl_ms_by_type", "reset_hold_ms")
_NOT_FUSIONS = ("enabled", "pose_source")  # [world] keys the host resolves, not fusion
_BODY_MOUNTS = (0, 1)  # TargetMountType: rigidly on the vehicle (centre, bottom centre)
_GIMBAL_MOUNT = 3  # on the vehicle, attitude in the ground frame: only with the gimbal's angles


@dataclass(frozen=True, slots=True)
class RflySimConfig:
    """The ``[rflysim]`` table as written (checked by ``gizmo_host.app.host_config``)."""

    copter_id: int | None = default("rflysim.copter_id")
    config: str | None = default("rflysim.config")  # sensors and camera.rflysim_sensor
    bind: str = default("rflysim.bind")
    sim_host: str = default("rflysim.sim_host")
    request_odometry_hz: int = default("rflysim.request_odometry_hz")
    request_imu_hz: int = default("rflysim.request_imu_hz")
    max_skew_ppm: float = default("rflysim.max_skew_ppm")


_RFLYSIM = RflySimConfig()  # the defaults


@dataclass(frozen=True, slots=True)
class WorldSetup:
    """Everything the world service needs, resolved and checked."""

    camera: CameraConfig
    world: WorldConfig
    selector: Selector
    rflysim: RflySimSetup | None
    pose_source: str | None = None  # "rflysim", "mavlink" or None (no pose source)
    # None: [tracking] enabled = false (the per-frame path)
    tracking: TrackingConfig | None = field(default_factory=TrackingConfig)

    def model(self) -> WorldModel:
        """The world model these settings describe."""
        return WorldModel(self.camera, self.world, selector=self.selector, tracking=self.tracking)


def _ipv4(key: str, value: str) -> str:
    if value == "localhost":
        return "127.0.0.1"
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise ConfigError(f"{key}: expected an IPv4 address, got {value!r}", key) from None


def _load(path: str) -> LoadedConfig:
    key = "rflysim.config"
    try:
        return load_config(path)
    except OSError as exc:
        raise ConfigError(f"{key} {path}: cannot read: {exc.strerror or exc}", key) from None
    except (ValueError, RecursionError) as exc:  # a ConfigError of Config.json's, or its JSON
        raise ConfigError(f"{key}: {exc}", key) from None


CAMERA_TYPES = IMAGE_TYPES | {TypeId.BOX_TARGETS}
# The sensors whose readings range a target: the distance sensor and the LiDARs whose points
# the adapter can place (sensor axes, or world NED).
RANGE_TYPES = frozenset({TypeId.DISTANCE, TypeId.LIDAR_BODY, TypeId.LIDAR_WORLD})


def _camera_sensor(loaded: LoadedConfig | None, seq_id: Any, on_gimbal: bool) -> VisionSensorConfig:
    key = "camera.rflysim_sensor"
    if not isinstance(seq_id, int) or isinstance(seq_id, bool):
        raise ConfigError(f"{key}: expected a Config.json SeqID (an integer), got {seq_id!r}", key)
    if loaded is None:
        raise ConfigError(f"{key}: expected [rflysim] config, the Config.json to read it from", key)
    # A TypeID 30 sensor's boxes are in its image, so its size, FOV and mount are a camera's.
    cameras = {s.seq_id: s for s in loaded.sensors if s.type_id in CAMERA_TYPES}
    sensor = cameras.get(seq_id)
    if sensor is None:
        known = ", ".join(str(n) for n in sorted(cameras)) or "none"
        raise ConfigError(
            f"{key}: expected the SeqID of a Config.json camera sensor ({known}), got {seq_id}", key
        )
    mount = sensor.target_mount_type
    if mount not in _BODY_MOUNTS and not (on_gimbal and mount == _GIMBAL_MOUNT):
        raise ConfigError(
            f"{key}: expected a sensor on the vehicle (TargetMountType 0 or 1, or 3 with "
            f"camera.on_gimbal), got TargetMountType {mount}",
            key,
        )
    return sensor


def camera_defaults(sensor: VisionSensorConfig) -> dict[str, Any]:
    """The ``[camera]`` keys a Config.json camera sensor gives."""
    rpy = sensor_rpy_deg(sensor.eular_or_quat, sensor.sensor_ang_eular, sensor.sensor_ang_quat)
    return {
        "width_px": sensor.data_width,
        "height_px": sensor.data_height,
        "hfov_deg": sensor.camera_fov_deg,
        "mount_rpy_deg": list(rpy),
        "mount_position_frd_m": list(sensor.sensor_pos_xyz_m),
    }


def _ttl_by_type(key: str, raw: Mapping[str, Any]) -> dict[int, float]:
    """``ttl_ms_by_type``: result type names or numbers as keys, as in ``[store]``."""
    out: dict[int, float] = {}
    for name, value in raw.items():
        member = ResultType.__members__.get(str(name).upper())
        try:
            number = int(member) if member is not None else int(str(name))
        except ValueError:
            raise ConfigError(
                f"{key}: expected result_type numbers as keys, got {name!r}", key
            ) from None
        out[number] = BY_KEY[key].check(value, f"{key}.{name}")
    return out


def _source_stale(key: str, raw: Mapping[str, Any]) -> dict[str, float]:
    out = dict(SOURCE_STALE_MS)
    for name, value in raw.items():
        if name not in SOURCE_STALE_MS:
            raise ConfigError(
                f"{key}: unknown source {name!r}; expected one of {', '.join(SOURCE_STALE_MS)}",
                key,
            )
        out[name] = BY_KEY[key].check(value, f"{key}.{name}")
    return out


def _checked(section: str, table: Mapping[str, Any]) -> dict[str, Any]:
    """Each key of ``[section]`` by its row of the settings table (type and range), then the
    rules over the whole table; an unknown key names the known ones."""
    check_keys(section, table, section_keys(section))
    values: dict[str, Any] = {}
    for name, value in table.items():
        key = f"{section}.{name}"
        row = BY_KEY[key]
        if row.kind != "table":
            values[name] = row.check(value)
        elif not isinstance(value, Mapping):
            raise fail(key, "a table", value)
        elif name == "ttl_ms_by_type":
            values[name] = _ttl_by_type(key, value)
        else:
            values[name] = _source_stale(key, value)
    check_rules(RULES, section, values)
    return values


def world_from_table(table: Mapping[str, Any]) -> WorldConfig:
    """fusion's ``WorldConfig`` from a ``[world]`` table checked by the settings table."""
    values = _checked("world", table)
    for name in _NOT_FUSIONS:  # the host's switch and choice, not the model's
        values.pop(name, None)
    return WorldConfig(**values)


# The pose's own noise (``attitude_sigma_deg``, ``position_sigma_m``) when the table leaves it
# out, by where the pose comes from: RflySim's is the simulator's state, the one the image was
# rendered from (its only error is the capture time's, counted apart); an autopilot's is an
# estimate, fusion's defaults. Measured (issue 27): on a rig whose pose is exact, fusion's
# defaults made each measurement's covariance 12-16 % too large.
_POSE_NOISE: dict[str | None, dict[str, float]] = {
    "rflysim": {"attitude_sigma_deg": 0.0, "position_sigma_m": 0.0},
}


def tracking_from_table(
    table: Mapping[str, Any], pose_source: str | None = None
) -> TrackingConfig | None:
    """fusion's ``TrackingConfig`` from a ``[tracking]`` table checked by the settings table
    (the pose's noise by ``pose_source`` where the table leaves it out); ``None`` when
    ``enabled = false`` (the per-frame path)."""
    values = _checked("tracking", table)
    if values.pop("enabled", True) is False:
        return None
    values = {**_POSE_NOISE.get(pose_source, {}), **values}
    defaults = {f.name: f.default for f in fields(TrackingConfig)}
    check_rules(RULES, "tracking", {**defaults, **values})
    return TrackingConfig(**values)


def camera_from_table(
    table: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
) -> CameraConfig:
    """fusion's ``CameraConfig`` from a ``[camera]`` table checked by the settings table;
    ``defaults`` (a Config.json sensor's) fill the keys it leaves out, and a table's
    ``hfov_deg`` or ``fx_px`` replaces all four intrinsics of the defaults."""
    merged = dict(defaults or {})
    if "hfov_deg" in table or "fx_px" in table:
        for name in ("hfov_deg", "vfov_deg", "fx_px", "fy_px"):
            merged.pop(name, None)
    merged.update(table)
    return CameraConfig(**_checked("camera", merged))


# The jump rule's position allowance when ``[world]`` leaves it out, by where the pose comes
# from. An autopilot's pose is an estimate that jitters from sample to sample: measured from
# outside (issue 28, round 3, LOCAL_POSITION_NED at 50 Hz), 1 cm of white noise broke the
# 0.02 m rule on 9 % of poses (PROCEED 11-19 % of the time) and 2 cm on 66 % (never PROCEED);
# at 0.1 m, 1 cm of white noise with 3 cm GNSS steps and 0.05 m/s on the velocity PROCEEDed
# all the time. The same allowance bounds how far an unsigned sender interleaving its poses
# with the autopilot's, from its own address, can pull the pose before it is a conflict:
# measured 0.10 m (targets 0.05 m) at 0.1 m, 0.20 m at 0.2 m. Measured here
# (tests/fusion/test_pose_noise.py): 1.5 cm of white noise with 1 cm steps every 200 ms
# PROCEED 100 %; 2 cm with 3 cm steps 55-81 % (0.2 m: 100 %; raise it for such a source and
# sign the link). RflySim's pose is the simulator's exact state: fusion's 0.02 m.
_POSE_JUMP: dict[str | None, dict[str, float]] = {"mavlink": {"pose_jump_m": AUTOPILOT_POSE_JUMP_M}}


def world_config(
    table: Mapping[str, Any], store: Any, *, pose_required: bool, pose_source: str | None = None
) -> WorldConfig:
    """``[world]`` over the inherited ``[store]`` times (and the jump allowance by
    ``pose_source`` where the table leaves it out)."""
    merged = {**_POSE_JUMP.get(pose_source, {}), **table}
    for key in _INHERITED:
        inherited = getattr(store, key)
        merged.setdefault(key, dict(inherited) if isinstance(inherited, Mapping) else inherited)
    merged.setdefault("pose_required", pose_required)
    return world_from_table(merged)


def resolve_world(
    camera_table: Mapping[str, Any] | None,
    world_table: Mapping[str, Any],
    rflysim: RflySimConfig,
    store: Any,
    selector: Selector,
    *,
    mavlink_pose: bool = False,
    tracking_table: Mapping[str, Any] | None = None,
) -> WorldSetup | None:
    """The world model's settings, or None when it is off; a ConfigError names the key."""
    enabled = world_table.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        key = "world.enabled"
        raise ConfigError(f"{key}: expected true or false, got {enabled!r}", key)
    if enabled is False:
        return None
    if camera_table is None:
        if (
            enabled
            or set(world_table) - {"enabled"}
            or rflysim != RflySimConfig()
            or tracking_table
        ):
            raise ConfigError(
                "camera: expected a [camera] table (width_px, height_px, and hfov_deg or "
                "fx_px): the world model ([world], [rflysim], [tracking]) needs it",
                "camera",
            )
        return None
    copter = rflysim.copter_id
    if copter is None and (rflysim.request_odometry_hz or rflysim.request_imu_hz):
        raise ConfigError(
            "rflysim.copter_id: expected the vehicle's CopterID to request replies from",
            "rflysim.copter_id",
        )
    addressed = [
        f"rflysim.{name}"
        for name in ("bind", "sim_host", "max_skew_ppm")
        if getattr(rflysim, name) != getattr(_RFLYSIM, name)
    ]
    if copter is None and addressed:
        raise ConfigError(
            f"rflysim.copter_id: expected the vehicle's CopterID: {' and '.join(addressed)} "
            "concern the simulator, which is heard only for a CopterID",
            "rflysim.copter_id",
        )
    loaded = None if rflysim.config is None else _load(rflysim.config)
    on_gimbal = camera_table.get("on_gimbal") is True
    defaults = None
    if camera_table.get("rflysim_sensor") is not None:
        sensor = _camera_sensor(loaded, camera_table["rflysim_sensor"], on_gimbal)
        defaults = camera_defaults(sensor)
    camera = camera_from_table(camera_table, defaults)
    source = pose_source(world_table.get("pose_source"), copter is not None, mavlink_pose)
    world = world_config(world_table, store, pose_required=source is not None, pose_source=source)
    tracking = tracking_from_table(tracking_table or {}, source)
    setup = None
    if copter is not None:
        sensors = () if loaded is None else loaded.sensors
        setup = RflySimSetup(
            copter,
            bind=_ipv4("rflysim.bind", rflysim.bind),
            sim_host=_ipv4("rflysim.sim_host", rflysim.sim_host),
            request_odometry_hz=rflysim.request_odometry_hz,
            request_imu_hz=rflysim.request_imu_hz,
            max_skew_ppm=rflysim.max_skew_ppm,
            range_sensors=tuple(
                s for s in sensors if s.type_id in RANGE_TYPES and s.target_copter == copter
            ),
            gimbal=camera.on_gimbal,
            gimbal_seq_id=camera.rflysim_sensor if camera.on_gimbal else None,
            poses=source == "rflysim",
        )
    return WorldSetup(camera, world, selector, setup, source, tracking)  # one selector


def pose_source(chosen: Any, rflysim: bool, mavlink: bool) -> str | None:
    """Where the world's pose comes from: ``[world] pose_source`` when both RflySim
    (``[rflysim] copter_id``) and MAVLink (``[mavlink] url`` with ``pose``) give one (two
    streams are never mixed), else the one that does; None without either."""
    key = "world.pose_source"
    if chosen is None:
        if rflysim and mavlink:
            raise ConfigError(
                f'{key}: expected "rflysim" or "mavlink": both [rflysim] copter_id and '
                "[mavlink] url give the vehicle's pose, and the two are never mixed",
                key,
            )
        return "rflysim" if rflysim else "mavlink" if mavlink else None
    if chosen not in POSE_SOURCES:
        raise ConfigError(f'{key}: expected "rflysim" or "mavlink", got {chosen!r}', key)
    if chosen == "rflysim" and not rflysim:
        raise ConfigError(f'{key}: "rflysim" expected [rflysim] copter_id', key)
    if chosen == "mavlink" and not mavlink:
        raise ConfigError(f'{key}: "mavlink" expected [mavlink] url with pose = true', key)
    return str(chosen)
