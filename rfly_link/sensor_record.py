"""A :class:`~rfly_link.config_json.VisionSensorConfig` back from its record: the JSON a
capture holds (``dataclasses.asdict``, tuples as arrays), checked as the Config.json reader
checks its own entries, since a capture is a file that may be damaged or hostile.

A value of the wrong kind or out of range is a ``ValueError`` naming the field
(``range_sensors[0].other_params: expected an array of 16``), raised when the record is
read rather than on every datagram of that sensor (red team rt31: a nested list was a drop
interpreted and a model error compiled; ``other_params: []`` an uncaught ``IndexError``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from rfly_link.config_json import (
    QUATERNION_NORM,
    VisionSensorConfig,
    is_finite_number,
    quaternion_norm_usable,
    sensor_range_needed,
)

_U16: Final = (0, 65535)
# ``index`` is the entry's place in Config.json's list, which may hold skipped entries: a
# 1 MiB file can hold some 500,000 (rt33: 70,000 recorded live, refused at replay)
_INDEX: Final = (0, 2**31 - 1)
_INTS: Final = (
    "index",
    "seq_id",
    "type_id",
    "target_copter",
    "target_mount_type",
    "data_width",
    "data_height",
    "data_check_freq",
)
_FLOATS: Final = ("camera_fov_deg", "eular_or_quat")
_ARRAYS: Final = (
    ("sensor_pos_xyz_m", 3),
    ("sensor_ang_eular", 3),
    ("sensor_ang_quat", 4),
    ("other_params", 16),
)
# SendProtocol: the mode, the receiver's IPv4 address, its port, then two more fields
_PROTOCOL: Final = ((0, 3), *((0, 255),) * 4, (1, 65535), _U16, _U16)
_FIELDS: Final = frozenset(f.name for f in dataclasses.fields(VisionSensorConfig))


def sensors_from_record(entries: object, where: str) -> tuple[VisionSensorConfig, ...]:
    """The sensors of the array ``entries`` (``where``: its name, for the errors)."""
    if not isinstance(entries, list):
        raise ValueError(f"{where}: expected an array, got {entries!r}")
    return tuple(sensor_from_record(entry, f"{where}[{n}]") for n, entry in enumerate(entries))


def sensor_from_record(entry: object, where: str) -> VisionSensorConfig:
    """One sensor; ``ValueError`` naming the first field that is not right."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected an object, got {entry!r}")
    if set(entry) != _FIELDS:
        odd = sorted(set(entry) ^ _FIELDS)
        raise ValueError(f"{where}: expected the fields {sorted(_FIELDS)}, not {odd}")
    values: dict[str, Any] = {
        name: _integer(entry[name], *(_INDEX if name == "index" else _U16), f"{where}.{name}")
        for name in _INTS
    }
    for name in _FLOATS:
        values[name] = _finite(entry[name], f"{where}.{name}")
    for name, count in _ARRAYS:
        array = _array(entry[name], count, f"{where}.{name}")
        values[name] = tuple(_finite(v, f"{where}.{name}[{i}]") for i, v in enumerate(array))
    protocol = _array(entry["send_protocol"], len(_PROTOCOL), f"{where}.send_protocol")
    values["send_protocol"] = tuple(
        _integer(v, low, high, f"{where}.send_protocol[{i}]")
        for i, (v, (low, high)) in enumerate(zip(protocol, _PROTOCOL, strict=True))
    )
    if not quaternion_norm_usable(sum(q * q for q in values["sensor_ang_quat"])):
        raise ValueError(f"{where}.sensor_ang_quat: expected {QUATERNION_NORM}")
    if not isinstance(entry["has_eular_or_quat"], bool):
        raise ValueError(f"{where}.has_eular_or_quat: expected true or false")
    values["has_eular_or_quat"] = entry["has_eular_or_quat"]
    needed = sensor_range_needed(values["type_id"], values["other_params"][0])
    if needed is not None:
        raise ValueError(f"{where}.other_params[0]: expected {needed}")
    return VisionSensorConfig(**values)


def _array(value: object, count: int, where: str) -> list[Any]:
    if not isinstance(value, list) or len(value) != count:
        raise ValueError(f"{where}: expected an array of {count}, got {value!r}")
    return value


def _integer(value: object, low: int, high: int, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{where}: expected an integer {low}..{high}, got {value!r}")
    return value


def _finite(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not is_finite_number(value):
        raise ValueError(f"{where}: expected a finite number, got {value!r}")
    return float(value)
