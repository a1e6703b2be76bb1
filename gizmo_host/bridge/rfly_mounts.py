"""Config.json and gimbal attitudes, mounts and ranges as fusion values: the small
conversions the RflySim adapter needs, pure."""

from __future__ import annotations

import math
from typing import Final

from fusion import SensorMount
from fusion.geometry import (
    Quat,
    Vec3,
    quat_from_euler_zyx,
    quat_norm,
    quat_normalize,
    quat_to_euler_zyx,
)
from rfly_link.config_json import VisionSensorConfig

_UNIT_TOLERANCE: Final = 1e-3  # as fusion.PoseSample checks
_QUATERNION_MODE: Final = 0.5  # Config.json / gimbal EularOrQuat above this: the quaternion applies


def finite(values: tuple[float, ...]) -> bool:
    return all(map(math.isfinite, values))


def vec3(values: tuple[float, ...]) -> Vec3:
    return (values[0], values[1], values[2])


def quat(values: tuple[float, ...]) -> Quat:
    return (values[0], values[1], values[2], values[3])


def attitude(quaternion: tuple[float, ...] | None, euler_rad: tuple[float, ...]) -> Quat | None:
    """The wire quaternion when it is a unit one, else the Z-Y-X Euler angles; None if neither."""
    if quaternion is not None and finite(quaternion):
        q = quat(quaternion)
        if abs(quat_norm(q) - 1.0) <= _UNIT_TOLERANCE:
            return q
    if finite(euler_rad):
        return quat_from_euler_zyx(euler_rad[0], euler_rad[1], euler_rad[2])
    return None


def sensor_rpy_deg(
    has_quaternion: float, euler: tuple[float, ...], quaternion: tuple[float, ...]
) -> Vec3:
    """A Config.json / gimbal attitude as roll, pitch, yaw in degrees (Z-Y-X from body FRD).

    ``SensorAngEular`` is taken as degrees (the spec leaves the unit to RflySim3D; its examples,
    such as a pitch of -15, are degrees); ``EularOrQuat > 0.5`` selects ``SensorAngQuat``.
    """
    if has_quaternion > _QUATERNION_MODE and finite(quaternion) and quat_norm(quat(quaternion)):
        roll, pitch, yaw = quat_to_euler_zyx(quat_normalize(quat(quaternion)))
        return (math.degrees(roll), math.degrees(pitch), math.degrees(yaw))
    return vec3(euler)


DEFAULT_DISTANCE_RANGE_M: Final = 100.0  # a distance sensor's otherParams[0] of 0 means this


def distance_range_m(sensor: VisionSensorConfig) -> float:
    """A distance sensor's range from its Config.json entry (``otherParams[0]``, 0: 100 m)."""
    configured = sensor.other_params[0] if sensor.other_params else 0.0
    return configured if math.isfinite(configured) and configured > 0 else DEFAULT_DISTANCE_RANGE_M


def sensor_mount(sensor: VisionSensorConfig) -> SensorMount:
    """Where a Config.json sensor sits on the body (``SensorPosXYZ`` is body FRD, metres)."""
    rpy = sensor_rpy_deg(sensor.eular_or_quat, sensor.sensor_ang_eular, sensor.sensor_ang_quat)
    return SensorMount(sensor.sensor_pos_xyz_m, rpy)
