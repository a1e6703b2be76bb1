"""RflySim ``Config.json`` (``VisionSensors``) loaded exactly as the SDK's ``jsonLoad()`` does.

Follows RflySim's Config.json description (docs/protocol-decisions.md, Config.json): line-comment
removal, the fixed key order with abort-on-missing and skip-on-bad-check, SeqID auto-numbering
before the other checks, the ``SendProtocol`` rewrites and the file-wide 144/92-byte request
layout. The result is one :class:`VisionSensorConfig` per accepted sensor, which carries
everything a receiver needs: port, mode, decode parameters and the request record.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gizmo_core import ConfigError
from rfly_link import ports
from rfly_link.messages import TypeId, VisionSensorReq, VisionSensorReqLegacy
from rfly_link.sensors import IMAGE_TYPES, POINT_CLOUD_TYPES, SensorParams, raw_image_bytes
from rfly_link.wire import checksums as cs

_COMPRESSED_SLACK = 64 * 1024  # JPEG/PNG headers and tables
_CLOUD_PREFIX_MAX = 36
_RETURNS_PER_RAY = 4
_MIN_CLOUD_BOUND = 1024 * 1024
# A Config.json is a few kB per sensor. The limits keep a wrong path (/dev/zero, a FIFO, a
# generated file) from exhausting memory or receivers: each is a one-line ConfigError.
MAX_CONFIG_BYTES = 1024 * 1024
MAX_SENSORS_PER_VEHICLE = 32

_INT_KEYS = (
    "SeqID",
    "TypeID",
    "TargetCopter",
    "TargetMountType",
    "DataWidth",
    "DataHeight",
    "DataCheckFreq",
)


@dataclass(frozen=True, slots=True)
class VisionSensorConfig:
    """One accepted ``VisionSensors`` entry, after the SDK's rewrites."""

    index: int
    seq_id: int
    type_id: int
    target_copter: int
    target_mount_type: int
    data_width: int
    data_height: int
    data_check_freq: int
    camera_fov_deg: float
    send_protocol: tuple[int, ...]
    sensor_pos_xyz_m: tuple[float, float, float]
    has_eular_or_quat: bool
    eular_or_quat: float
    sensor_ang_eular: tuple[float, float, float]
    sensor_ang_quat: tuple[float, float, float, float]
    other_params: tuple[float, ...]

    @property
    def port(self) -> int:
        """UDP port RflySim3D sends this sensor's data to (``SendProtocol[5]``)."""
        return self.send_protocol[5]

    @property
    def mode(self) -> int:
        """``SendProtocol[0]``: 0 shared memory, 1 UDP, 2 UDP raw pixels, 3 UDP PNG."""
        return self.send_protocol[0]

    @property
    def receiver_ip(self) -> str:
        return ".".join(str(b) for b in self.send_protocol[1:5])

    def decode_params(self) -> SensorParams:
        """What :func:`rfly_link.decode_sensor` needs to know about this sensor."""
        protocol = self.send_protocol
        return SensorParams(
            scale_m=self.other_params[0],
            channels=(4 if protocol[7] > 0 else 3) if len(protocol) > 7 else None,
            width=self.data_width,
            height=self.data_height,
            mode=protocol[0] if protocol else None,
        )

    def max_frame_bytes(self) -> int | None:
        """A generous bound on one frame's payload, from ``DataWidth`` × ``DataHeight``.

        None when the sizes are 0 or the type has no size rule. Raw images (mode 2) are exactly
        W×H×bytes per pixel; JPEG/PNG get twice that (noise compresses badly); point clouds get
        four returns per ray of the largest point layout (float32 x, y, z, seg) plus the prefix,
        at least 1 MiB. Lets a receiver reject absurd fragment counts before allocating.
        """
        pixels = self.data_width * self.data_height
        if pixels <= 0:
            return None
        if self.type_id in IMAGE_TYPES:
            raw = raw_image_bytes(self.type_id, self.data_width, self.data_height)
            return raw if self.mode == 2 else 2 * raw + _COMPRESSED_SLACK
        if self.type_id in POINT_CLOUD_TYPES:
            return max(_MIN_CLOUD_BOUND, _CLOUD_PREFIX_MAX + pixels * _RETURNS_PER_RAY * 16)
        return None

    def request(self, *, new_layout: bool = True) -> VisionSensorReq | VisionSensorReqLegacy:
        """The request record sent to ``20010 + window`` (144 B new, 92 B legacy)."""
        head = (
            cs.SENSOR_REQUEST,
            self.seq_id,
            self.type_id,
            self.target_copter,
            self.target_mount_type,
            self.data_width,
            self.data_height,
            self.data_check_freq,
            self.send_protocol,
            self.camera_fov_deg,
            self.sensor_pos_xyz_m,
        )
        if new_layout:
            return VisionSensorReq(
                *head,
                self.eular_or_quat,
                self.sensor_ang_eular,
                self.sensor_ang_quat,
                self.other_params,
            )
        return VisionSensorReqLegacy(*head, self.sensor_ang_eular, self.other_params[:8])


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    sensors: tuple[VisionSensorConfig, ...]
    new_layout: bool
    skipped: tuple[tuple[int, str], ...]  # (array index, reason), as the SDK's warnings

    def requests(self) -> list[VisionSensorReq | VisionSensorReqLegacy]:
        return [s.request(new_layout=self.new_layout) for s in self.sensors]


def strip_comments(text: str) -> str:
    """Remove ``//`` and ``#`` line comments the way the SDK does (strings are not spared)."""
    kept = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("//", "#")):
            continue
        kept.append(line.split("//", 1)[0].split("#", 1)[0])
    return "\n".join(kept)


def _is_int(value: Any) -> bool:
    return isinstance(value, int)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float)


def _array(value: Any, length: int) -> bool:
    return isinstance(value, list) and len(value) == length


class _Skip(Exception):
    """A failed check: the SDK skips this sensor and goes on (its SeqID may be used up)."""

    def __init__(self, reason: str, last_seq: int | None = None) -> None:
        super().__init__(reason)
        self.last_seq = last_seq


def parse_config(
    text: str, *, change_mode: int = -1, linux: bool = True, source: str = "Config.json"
) -> LoadedConfig:
    """Parse Config.json text; raise :class:`ConfigError` where the SDK's load fails.

    Every error is one line; one about the whole file starts with ``source`` (its path), one
    about a sensor with ``VisionSensors[i]``."""
    where = _printable(source)
    try:
        doc = json.loads(strip_comments(text))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: JSON syntax error: {exc}") from None
    except RecursionError:  # the C scanner recurses once per nested array or object
        raise ConfigError(
            f"{where}: JSON syntax error: arrays or objects nested too deeply"
        ) from None
    except ValueError as exc:  # an integer beyond sys.get_int_max_str_digits()
        raise ConfigError(f"{where}: JSON value error: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: the top level must be an object")
    if "VisionSensors" not in doc:
        raise ConfigError(f"{where}: missing required key 'VisionSensors'")
    entries = doc["VisionSensors"]
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{where}: 'VisionSensors' must be a non-empty array")
    accepted: list[VisionSensorConfig] = []
    skipped: list[tuple[int, str]] = []
    last_seq: int | None = None
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            skipped.append((index, "entry is not an object"))
            continue
        try:
            sensor, last_seq = _parse_sensor(index, entry, last_seq, change_mode, linux)
        except _Skip as skip:
            skipped.append((index, str(skip)))
            if skip.last_seq is not None:
                last_seq = skip.last_seq
            continue
        accepted.append(sensor)
    if not accepted:
        raise ConfigError(f"{where}: no sensor accepted ({_some(skipped)})")
    per_vehicle = Counter(s.target_copter for s in accepted)
    copter, count = per_vehicle.most_common(1)[0]
    if count > MAX_SENSORS_PER_VEHICLE:
        raise ConfigError(
            f"{where}: expected at most {MAX_SENSORS_PER_VEHICLE} sensors per vehicle, "
            f"got {count} for TargetCopter {copter}"
        )
    _check_unique_ports(accepted)
    new_layout = any(s.has_eular_or_quat for s in accepted)
    return LoadedConfig(tuple(accepted), new_layout, tuple(skipped))


def load_config(path: str | Path, *, change_mode: int = -1, linux: bool = True) -> LoadedConfig:
    """Load a Config.json file: a regular file of at most ``MAX_CONFIG_BYTES`` (a FIFO or a
    device is refused without blocking). ``OSError``: the caller reports it with the path."""
    data = read_regular_file(path, MAX_CONFIG_BYTES, what="Config.json")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{_printable(str(path))}: expected UTF-8 text, got byte 0x{data[exc.start]:02x} "
            f"at offset {exc.start}"
        ) from None
    return parse_config(text, change_mode=change_mode, linux=linux, source=str(path))


def read_regular_file(
    path: str | Path,
    max_bytes: int,
    *,
    what: str,
    where: str | None = None,
    error: Callable[[str], Exception] = ConfigError,
) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; ``error(message)`` (a
    ``ConfigError`` naming ``where``, default the path) for anything else. Opened non-blocking,
    so a FIFO neither hangs the start nor waits for a writer; ``OSError`` if it cannot be."""
    where = _printable(str(path)) if where is None else where
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{where}: expected a regular {what} file")
        if info.st_size > max_bytes:
            raise error(f"{where}: expected at most {max_bytes} bytes, got {info.st_size}")
        chunks, size = [], 0
        while size <= max_bytes:  # the file may grow while read: stop one byte past the cap
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise error(f"{where}: expected at most {max_bytes} bytes")
    return b"".join(chunks)


def _printable(text: str) -> str:
    return text if text.isprintable() else repr(text)


def _require(entry: dict[str, Any], key: str, index: int) -> Any:
    if key not in entry:
        raise ConfigError(f"VisionSensors[{index}]: missing required key {key!r}")
    return entry[key]


def _parse_sensor(
    index: int, entry: dict[str, Any], last_seq: int | None, change_mode: int, linux: bool
) -> tuple[VisionSensorConfig, int | None]:
    ints: dict[str, int] = {}
    seq = _require(entry, "SeqID", index)
    if not _is_int(seq):
        raise _Skip("SeqID: expected an integer", last_seq)
    seq = last_seq + 1 if seq == 0 and last_seq is not None else int(seq)
    last_seq = seq  # advances before the rest is checked (docs/protocol-decisions.md, Config.json)
    try:
        for key in _INT_KEYS[1:]:
            value = _require(entry, key, index)
            if not _is_int(value):
                raise _Skip(f"{key}: expected an integer, got {value!r}")
            ints[key] = int(value)
        fov = _require(entry, "CameraFOV", index)
        if not _is_number(fov):
            raise _Skip(f"CameraFOV: expected a number, got {fov!r}")
        protocol = _require(entry, "SendProtocol", index)
        if not _array(protocol, 8):
            raise _Skip("SendProtocol: expected an array of 8")
        pos = _require(entry, "SensorPosXYZ", index)
        if not _array(pos, 3):
            raise _Skip("SensorPosXYZ: expected an array of 3")
        has_eoq = "EularOrQuat" in entry
        eoq = entry.get("EularOrQuat", 0)
        ang = _require(entry, "SensorAngEular", index)
        if not _array(ang, 3):
            raise _Skip("SensorAngEular: expected an array of 3")
        quat: Any = [0, 0, 0, 0]
        if has_eoq:
            quat = _require(entry, "SensorAngQuat", index)
            if not _array(quat, 4):
                raise _Skip("SensorAngQuat: expected an array of 4")
        other = _require(entry, "otherParams", index)
        if not _array(other, 16 if has_eoq else 8):
            raise _Skip(f"otherParams: expected an array of {16 if has_eoq else 8}")
    except _Skip as skip:
        raise _Skip(str(skip), last_seq) from None
    protocol = list(protocol)
    if change_mode != -1:
        protocol[0] = change_mode
    if protocol[0] == 0 and linux and change_mode == -1:
        protocol[0] = 1
    if protocol[5] == 0:
        protocol[5] = ports.vision_sensor_default_port(seq)
    _check_values(index, seq, ints, fov, protocol, pos, eoq, ang, quat, other)
    sensor = VisionSensorConfig(
        index=index,
        seq_id=seq,
        type_id=ints["TypeID"],
        target_copter=ints["TargetCopter"],
        target_mount_type=ints["TargetMountType"],
        data_width=ints["DataWidth"],
        data_height=ints["DataHeight"],
        data_check_freq=ints["DataCheckFreq"],
        camera_fov_deg=float(fov),
        send_protocol=tuple(protocol),
        sensor_pos_xyz_m=(float(pos[0]), float(pos[1]), float(pos[2])),
        has_eular_or_quat=has_eoq,
        eular_or_quat=float(eoq),
        sensor_ang_eular=(float(ang[0]), float(ang[1]), float(ang[2])),
        sensor_ang_quat=(float(quat[0]), float(quat[1]), float(quat[2]), float(quat[3])),
        other_params=tuple(float(v) for v in other) + (0.0,) * (16 - len(other)),
    )
    return sensor, last_seq


# --- value checks ---------------------------------------------------------------------------
# The SDK checks only types and array lengths at load; a bad *value* fails later, at send or
# bind time or on every received frame (docs/protocol-decisions.md, Config.json). We reject
# it at load, naming the item, so nothing fails far from its cause.

_U16 = (0, 65535)
_MODES = (0, 3)  # SendProtocol[0]: shared memory, UDP, UDP raw pixels, UDP PNG


def _fail(index: int, item: str, expected: str, value: Any) -> ConfigError:
    shown = repr(value)  # cut short: a 4,000-digit width made a 4 KB line (rt59)
    shown = shown if len(shown) <= 80 else f"{shown[:77]}..."
    return ConfigError(f"VisionSensors[{index}].{item}: expected {expected}, got {shown}")


def _check_int(index: int, item: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(index, item, f"an integer {low}..{high}", value)


def _check_finite(index: int, item: str, value: Any) -> None:
    if isinstance(value, bool) or not _is_number(value) or not is_finite_number(value):
        raise _fail(index, item, "a finite number", value)


# A sensor's quaternion is normalised by the root of its squared norm: that square must be
# finite (rt32: [1e200, 1e200, 0, 0] failed on every reading) and, unless the quaternion is
# all zeros (unset: the Euler angles apply), a normal float (rt33: parts near 1e-162 squared
# into subnormals, and a 90 degree roll was mounted as 84).
QUATERNION_NORM: Final = (
    "a quaternion of zeros, or one whose squared norm is from 1e-300 to a float's largest"
)


def quaternion_norm_usable(squared_norm: float) -> bool:
    return squared_norm == 0 or 1e-300 <= squared_norm <= sys.float_info.max


# A range sensor's ``otherParams[0]`` is its range in metres, which bounds what its readings
# may claim. A point cloud scales its int16 coordinates by range / 32767: from 1 cm the step
# stays a normal float32 (red team rt34: 5e-324 put every point at 0 m, 1e308 made every one
# inf). No drone's rangefinder or LiDAR reaches 10 km: a larger range only lifted the bound,
# and a LiDAR return 5,000 km off made PROCEEDs (rt34).
MAX_SENSOR_RANGE_M: Final = 10_000.0
MIN_POINT_CLOUD_RANGE_M: Final = 0.01


def sensor_range_needed(type_id: int, range_m: float) -> str | None:
    """What a range sensor's ``otherParams[0]`` of ``range_m`` must be, when it is not that
    (``None``: it is usable; a type that is no range sensor's is not checked)."""
    if type_id in POINT_CLOUD_TYPES:
        if not MIN_POINT_CLOUD_RANGE_M <= range_m <= MAX_SENSOR_RANGE_M:
            return (
                f"the point-cloud range in metres, {MIN_POINT_CLOUD_RANGE_M:g} to "
                f"{MAX_SENSOR_RANGE_M:,.0f}"
            )
    elif type_id == TypeId.DISTANCE and range_m > MAX_SENSOR_RANGE_M:
        return f"the distance sensor's range in metres, at most {MAX_SENSOR_RANGE_M:,.0f} (0: 100)"
    return None


def is_finite_number(value: float) -> bool:
    """``math.isfinite`` for a JSON number, whose integer may be beyond a float's range (its
    ``OverflowError`` was a traceback where one error line is due: red team rt32)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _check_values(
    index: int,
    seq: int,
    ints: dict[str, int],
    fov: Any,
    protocol: list[Any],
    pos: list[Any],
    eoq: Any,
    ang: list[Any],
    quat: list[Any],
    other: list[Any],
) -> None:
    """Raise :class:`ConfigError` for a value the request record or a receiver cannot use."""
    _check_int(index, "SeqID", seq, *_U16)
    for key, value in ints.items():
        _check_int(index, key, value, *_U16)
    _check_finite(index, "CameraFOV", fov)
    _check_int(index, "SendProtocol[0]", protocol[0], *_MODES)
    for i in range(1, 5):
        _check_int(index, f"SendProtocol[{i}]", protocol[i], 0, 255)  # IPv4 address bytes
    _check_int(index, "SendProtocol[5]", protocol[5], 1, 65535)  # after the 9999+SeqID rewrite
    for i in (6, 7):
        _check_int(index, f"SendProtocol[{i}]", protocol[i], *_U16)
    _check_finite(index, "EularOrQuat", eoq)
    for key, values in (
        ("SensorPosXYZ", pos),
        ("SensorAngEular", ang),
        ("SensorAngQuat", quat),
        ("otherParams", other),
    ):
        for i, value in enumerate(values):
            _check_finite(index, f"{key}[{i}]", value)
    if not quaternion_norm_usable(sum(float(q) * float(q) for q in quat)):
        raise _fail(index, "SensorAngQuat", QUATERNION_NORM, quat)
    needed = sensor_range_needed(ints["TypeID"], float(other[0]))
    if needed is not None:
        raise _fail(index, "otherParams[0]", needed, other[0])


def _check_unique_ports(sensors: list[VisionSensorConfig]) -> None:
    """Two UDP sensors on one port cannot both be received (the second bind fails)."""
    seen: dict[int, VisionSensorConfig] = {}
    for sensor in sensors:
        if sensor.mode == 0:  # shared memory (Windows): no UDP port is used
            continue
        first = seen.setdefault(sensor.port, sensor)
        if first is not sensor:
            raise ConfigError(
                f"VisionSensors[{sensor.index}].SendProtocol[5]: expected a port no other "
                f"sensor uses, got {sensor.port} (effective), already used by "
                f"VisionSensors[{first.index}] (SeqID {first.seq_id})"
            )


def _some(skipped: list[tuple[int, str]], shown: int = 3, chars: int = 200) -> str:
    """The first few reasons, each cut short: one line for any file (red team rt59: 500,000
    entries of a 1 MB file made an error line of 18 MB)."""
    reasons = [
        f"{index}: {why[:chars]}{'...' if len(why) > chars else ''}"
        for index, why in skipped[:shown]
    ]
    more = len(skipped) - shown
    return "; ".join(reasons) + (f"; and {more} more" if more > 0 else "")
