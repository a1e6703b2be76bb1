"""Which vision sensors the stand-in simulates: a built-in ``Config.json`` or the user's.

The stand-in reads the same ``VisionSensors`` file as the receivers (:mod:`rfly_link.config_json`),
so both sides agree on SeqIDs, ports and mounts. It simulates the sensors mounted on the ego
vehicle whose data are ranges or targets: the distance sensor (TypeID 5), LiDARs in the body or
world frame (20, 21), target boxes (30) and the gimbal's status (9: the status on port 20006,
not its images). Everything else is listed as ignored, with the reason.

Readings of the entries the Config.json spec leaves to RflySim3D: ``SensorAngEular`` is in
degrees (roll, pitch, yaw, Z-Y-X, from body FRD, as the host reads mounts), ``SensorPosXYZ`` is body
FRD metres, ``CameraFOV`` is horizontal; a distance sensor's ``otherParams[0]`` is its range
(0: 100 m); a LiDAR's rays span ``CameraFOV`` horizontally (``DataWidth`` rays) and -10° to
-40° vertically (``DataHeight`` rays).
"""

from __future__ import annotations

import json
import math
from typing import NamedTuple

from hil_geometry.pinhole import Pinhole
from hil_geometry.rotations import (
    Quat,
    Vec3,
    quat_from_euler_zyx_deg,
    quat_normalize,
    quat_to_euler_zyx,
)
from rfly_link import ports
from rfly_link.config_json import LoadedConfig, VisionSensorConfig, parse_config
from rfly_link.messages import TypeId

LIDAR_TYPES = frozenset({TypeId.LIDAR_BODY, TypeId.LIDAR_WORLD})
SIMULATED_TYPES = frozenset({TypeId.DISTANCE, TypeId.BOX_TARGETS, TypeId.GIMBAL, *LIDAR_TYPES})
DEFAULT_RATE_HZ = 30.0  # DataCheckFreq 0: RflySim3D's default
DEFAULT_DISTANCE_RANGE_M = 100.0


class _Entry(NamedTuple):
    seq_id: int
    type_id: TypeId
    width: int
    height: int
    rate_hz: int
    fov_deg: float
    position_frd_m: Vec3
    rpy_deg: Vec3
    other_params: tuple[float, ...]
    send_protocol_7: int  # point clouds: 1 adds the stencil channel


# Ports are 9999 + SeqID (SendProtocol[5] = 0).
_BUILTIN = (
    _Entry(1, TypeId.BOX_TARGETS, 640, 480, 30, 90.0, (0.1, 0.0, 0.05), (0, -45, 0), (100, 10), 0),
    _Entry(2, TypeId.DISTANCE, 0, 0, 20, 0.0, (0.1, 0.0, 0.05), (0, -45, 0), (100,), 0),
    _Entry(3, TypeId.LIDAR_BODY, 32, 4, 10, 360.0, (0.0, 0.0, -0.1), (0, 0, 0), (60,), 1),
    _Entry(4, TypeId.GIMBAL, 1280, 720, 30, 60.0, (0.2, 0.0, 0.1), (0, -45, 0), (), 0),
)


def builtin_config_text(host: str = "127.0.0.1", ego_id: int = 1) -> str:
    """The built-in ``Config.json``: boxes, distance, a small LiDAR and a gimbal on the ego.

    Write it to a file for the receiving side (``gizmo-host rfly --config``); every sensor
    sends to ``host`` on port 9999 + SeqID.
    """
    ip = [int(part) for part in host.split(".")]
    sensors = []
    for e in _BUILTIN:
        sensors.append(
            {
                "SeqID": e.seq_id,
                "TypeID": int(e.type_id),
                "TargetCopter": ego_id,
                "TargetMountType": 0,
                "DataWidth": e.width,
                "DataHeight": e.height,
                "DataCheckFreq": e.rate_hz,
                "SendProtocol": [1, *ip, 0, 0, e.send_protocol_7],
                "CameraFOV": e.fov_deg,
                "SensorPosXYZ": list(e.position_frd_m),
                "EularOrQuat": 0,
                "SensorAngEular": list(e.rpy_deg),
                "SensorAngQuat": [1, 0, 0, 0],
                "otherParams": [*e.other_params, *[0] * (16 - len(e.other_params))],
            }
        )
    return json.dumps({"VisionSensors": sensors}, indent=2) + "\n"


def builtin_config(host: str = "127.0.0.1", ego_id: int = 1) -> LoadedConfig:
    """:func:`builtin_config_text` loaded as the receivers load it."""
    return parse_config(builtin_config_text(host, ego_id), source="built-in Config.json")


class SensorSet(NamedTuple):
    simulated: tuple[VisionSensorConfig, ...]
    ignored: tuple[tuple[int, int, str], ...]  # (SeqID, TypeID, why)

    def of_type(self, *type_ids: int) -> tuple[VisionSensorConfig, ...]:
        return tuple(s for s in self.simulated if s.type_id in type_ids)


def select_sensors(config: LoadedConfig, ego_id: int) -> SensorSet:
    """The sensors of ``config`` the stand-in simulates for the ego ``ego_id``, and the rest."""
    simulated, ignored = [], []
    for sensor in config.sensors:
        why = None
        if sensor.type_id not in SIMULATED_TYPES:
            why = f"TypeID {sensor.type_id} is not simulated (5, 9, 20, 21, 30 are)"
        elif sensor.target_copter != ego_id or sensor.target_mount_type not in (0, 1):
            why = f"not mounted on the ego vehicle (CopterID {ego_id}, mount type 0 or 1)"
        elif sensor.mode == 0:
            why = "shared memory (SendProtocol[0] = 0) is not sent over UDP"
        elif sensor.type_id in (TypeId.BOX_TARGETS, TypeId.GIMBAL) and not _has_image(sensor):
            why = "needs DataWidth, DataHeight >= 2 and 0 < CameraFOV < 180"
        if why is None:
            simulated.append(sensor)
        else:
            ignored.append((sensor.seq_id, sensor.type_id, why))
    return SensorSet(tuple(simulated), tuple(ignored))


def _has_image(sensor: VisionSensorConfig) -> bool:
    return sensor.data_width >= 2 and sensor.data_height >= 2 and 0 < sensor.camera_fov_deg < 180


def rate_hz(sensor: VisionSensorConfig) -> float:
    return float(sensor.data_check_freq) or DEFAULT_RATE_HZ


def mount_quaternion(sensor: VisionSensorConfig) -> Quat:
    """The sensor's attitude in body FRD: ``SensorAngQuat`` when ``EularOrQuat > 0.5``."""
    if sensor.eular_or_quat > 0.5:
        return quat_normalize(sensor.sensor_ang_quat)
    r, p, y = sensor.sensor_ang_eular
    return quat_from_euler_zyx_deg((r, p, y))


def mount_rpy_deg(sensor: VisionSensorConfig) -> Vec3:
    r, p, y = quat_to_euler_zyx(mount_quaternion(sensor))
    return (math.degrees(r), math.degrees(p), math.degrees(y))


def sensor_camera(sensor: VisionSensorConfig) -> Pinhole:
    """The simulator's camera for an image sensor's entry, read from the entry's own fields
    (size, horizontal FOV, ``SensorAngEular`` or ``SensorAngQuat``, ``SensorPosXYZ``)."""
    return Pinhole.from_sensor(
        sensor.data_width,
        sensor.data_height,
        sensor.camera_fov_deg,
        rpy_deg=sensor.sensor_ang_eular,
        quaternion_wxyz=sensor.sensor_ang_quat if sensor.eular_or_quat > 0.5 else None,
        position_frd_m=sensor.sensor_pos_xyz_m,
    )


def fragment_size(sensor: VisionSensorConfig) -> int | None:
    """``SendProtocol[6]``, the fragment payload size (``None``: the SDK's 60000)."""
    return sensor.send_protocol[6] or None


def check_ego(ego_id: int) -> None:
    if not 1 <= ego_id <= ports.MAX_COPTERS:
        raise ValueError(f"ego copter: expected 1..{ports.MAX_COPTERS}, got {ego_id}")
