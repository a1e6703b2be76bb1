"""Vision-sensor values: fixed-size sensor payloads, sensor requests and the gimbal (VSP, CFG).

Variable-size payloads (point clouds, images, target lists) are in :mod:`rfly_link.sensors`.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import Any

from rfly_link.messages.base import WireMessage, izeros, message_dataclass, wire_message, zeros
from rfly_link.wire import checksums as cs
from rfly_link.wire import vision as w


class TypeId(IntEnum):
    """Vision-sensor TypeIDs (VSP 2.1): what a sensor is and how its payload decodes."""

    RGB = 1
    DEPTH = 2
    GRAY = 3
    SEGMENTATION = 4
    DISTANCE = 5
    DEPTH_POINT_CLOUD = 7
    FISHEYE = 8
    GIMBAL = 9
    OPTICAL_FLOW = 10
    LIDAR_BODY = 20
    LIDAR_WORLD = 21
    LIVOX_PETAL = 22
    LIVOX_MID360 = 23
    BOX_TARGETS = 30
    RADAR_TARGETS = 31
    INFRARED_GRAY = 40
    INFRARED_COLOUR = 41


# --- Sensor payloads with a fixed size -------------------------------------------------------


@wire_message(w.DISTANCE_SENSOR)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class DistanceSensor(WireMessage):
    """TypeID 5 laser range finder (56 B)."""

    distance_m: float = 0.0
    copter_id: int = 0
    ray_start_m: tuple[float, ...] = zeros(3)
    angle_euler: tuple[float, ...] = zeros(3)
    impact_point_m: tuple[float, ...] = zeros(3)
    box_origin_m: tuple[float, ...] = zeros(3)


@wire_message(w.OPTICAL_FLOW)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class OpticalFlow(WireMessage):
    """TypeID 10 optical flow (34 B, packed; flow_x/flow_y raw int16)."""

    time_usec: int = 0
    sensor_id: int = 0
    flow_x: int = 0
    flow_y: int = 0
    flow_comp_m_x: float = 0.0
    flow_comp_m_y: float = 0.0
    quality: int = 0
    ground_distance_m: float = 0.0
    flow_rate_x: float = 0.0
    flow_rate_y: float = 0.0


@wire_message(w.BOX_TARGET)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class BoxTarget(WireMessage):
    """One TypeID 30 detection box (image coordinates as sent)."""

    copter_id: int = 0
    credibility: float = 0.0
    min_x: float = 0.0
    min_y: float = 0.0
    max_x: float = 0.0
    max_y: float = 0.0


@wire_message(w.RADAR_TARGET)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class RadarTarget(WireMessage):
    """One TypeID 31 target position relative to the sensor."""

    copter_id: int = 0
    relative_x_m: float = 0.0
    relative_y_m: float = 0.0
    relative_z_m: float = 0.0


# --- Vision-sensor requests and the gimbal -----------------------------------------------------


@wire_message(w.VISION_SENSOR_REQ, cs.SENSOR_REQUEST)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class VisionSensorReq(WireMessage):
    """Sensor creation request, new 144 B layout, sent to ``20010 + window``."""

    checksum: int = cs.SENSOR_REQUEST
    seq_id: int = 0
    type_id: int = 0
    target_copter: int = 0
    target_mount_type: int = 0
    data_width: int = 0
    data_height: int = 0
    data_check_freq: int = 0
    send_protocol: tuple[int, ...] = izeros(8)
    camera_fov_deg: float = 0.0
    sensor_pos_xyz_m: tuple[float, ...] = zeros(3)
    eular_or_quat: float = 0.0
    sensor_ang_eular: tuple[float, ...] = zeros(3)
    sensor_ang_quat: tuple[float, ...] = zeros(4)
    other_params: tuple[float, ...] = zeros(16)


@wire_message(w.VISION_SENSOR_REQ_LEGACY, cs.SENSOR_REQUEST)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class VisionSensorReqLegacy(WireMessage):
    """Sensor creation request, legacy 92 B layout (files without ``EularOrQuat``)."""

    checksum: int = cs.SENSOR_REQUEST
    seq_id: int = 0
    type_id: int = 0
    target_copter: int = 0
    target_mount_type: int = 0
    data_width: int = 0
    data_height: int = 0
    data_check_freq: int = 0
    send_protocol: tuple[int, ...] = izeros(8)
    camera_fov_deg: float = 0.0
    sensor_pos_xyz_m: tuple[float, ...] = zeros(3)
    sensor_ang_eular: tuple[float, ...] = zeros(3)
    other_params: tuple[float, ...] = zeros(8)


class GimbalBit(IntFlag):
    """VisionSensorReqNew ``bitmask`` controls (VSP 4.2) and the ``other_params`` they use."""

    FOV = 1 << 1  # camera_fov_deg
    ATTITUDE = 1 << 2  # sensor_ang_eular / sensor_ang_quat
    QUATERNION_MODE = 1 << 3  # eular_or_quat, sensor_ang_quat
    FOCAL_LENGTH = 1 << 4  # other_params[0], mm
    RECENTER = 1 << 5  # other_params[1] > 0
    ANGULAR_RATE = 1 << 6  # other_params[2:4] pitch, yaw deg/s (DEC)
    OPTICAL_ZOOM = 1 << 7  # other_params[4]
    TRACK_TARGET = 1 << 8  # other_params[5]
    LASER_RANGE = 1 << 9  # other_params[6]
    IMAGE_SOURCE = 1 << 10  # other_params[7]: 0 RGB, 1 IR colour, 2 IR grey
    AI_SELECT = 1 << 11  # other_params[8:11]


class GimbalImageSource(IntEnum):
    RGB = 0
    INFRARED_COLOUR = 1
    INFRARED_GREY = 2


@wire_message(w.VISION_SENSOR_REQ_NEW, cs.SENSOR_REQUEST)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class VisionSensorReqNew(WireMessage):
    """Gimbal control request (148 B, checksum 12345), sent to ``20010 + window``.

    Build one with :meth:`for_sensor` then chain the ``with_*`` helpers; each sets its bit and
    the fields or ``other_params`` entries that bit selects.
    """

    checksum: int = cs.SENSOR_REQUEST
    seq_id: int = 0
    bitmask: int = 0
    type_id: int = 0
    target_copter: int = 0
    target_mount_type: int = 0
    data_width: int = 0
    data_height: int = 0
    data_check_freq: int = 0
    send_protocol: tuple[int, ...] = izeros(8)
    camera_fov_deg: float = 0.0
    sensor_pos_xyz_m: tuple[float, ...] = zeros(3)
    eular_or_quat: float = 0.0
    sensor_ang_eular: tuple[float, ...] = zeros(3)
    sensor_ang_quat: tuple[float, ...] = zeros(4)
    other_params: tuple[float, ...] = zeros(16)

    @classmethod
    def for_sensor(
        cls, seq_id: int, *, type_id: int = TypeId.GIMBAL, target_copter: int = 1
    ) -> VisionSensorReqNew:
        return cls(seq_id=seq_id, type_id=type_id, target_copter=target_copter)

    def _with(
        self, bit: GimbalBit, params: dict[int, float] | None = None, **fields: Any
    ) -> VisionSensorReqNew:
        other = list(self.other_params)
        for index, value in (params or {}).items():
            other[index] = float(value)
        values = {name: getattr(self, name) for name in self.LAYOUT.names}
        values.update(fields)
        values["bitmask"] = self.bitmask | int(bit)
        values["other_params"] = tuple(other)
        return type(self)(**values)

    def with_fov(self, fov_deg: float) -> VisionSensorReqNew:
        return self._with(GimbalBit.FOV, camera_fov_deg=fov_deg)

    def with_attitude_euler(self, roll: float, pitch: float, yaw: float) -> VisionSensorReqNew:
        return self._with(GimbalBit.ATTITUDE, sensor_ang_eular=(roll, pitch, yaw))

    def with_attitude_quaternion(
        self, w: float, x: float, y: float, z: float
    ) -> VisionSensorReqNew:
        bits = GimbalBit.ATTITUDE | GimbalBit.QUATERNION_MODE
        return self._with(bits, eular_or_quat=1.0, sensor_ang_quat=(w, x, y, z))

    def with_focal_length(self, focal_mm: float) -> VisionSensorReqNew:
        return self._with(GimbalBit.FOCAL_LENGTH, {0: focal_mm})

    def with_recenter(self) -> VisionSensorReqNew:
        return self._with(GimbalBit.RECENTER, {1: 1.0})

    def with_angular_rate(self, pitch_deg_s: float, yaw_deg_s: float) -> VisionSensorReqNew:
        return self._with(GimbalBit.ANGULAR_RATE, {2: pitch_deg_s, 3: yaw_deg_s})

    def with_optical_zoom(self, zoom: float) -> VisionSensorReqNew:
        return self._with(GimbalBit.OPTICAL_ZOOM, {4: zoom})

    def with_track_target(self, copter_id: int) -> VisionSensorReqNew:
        return self._with(GimbalBit.TRACK_TARGET, {5: copter_id})

    def with_laser_range(self, on: bool) -> VisionSensorReqNew:
        return self._with(GimbalBit.LASER_RANGE, {6: 1.0 if on else 0.0})

    def with_image_source(self, source: GimbalImageSource) -> VisionSensorReqNew:
        return self._with(GimbalBit.IMAGE_SOURCE, {7: int(source)})

    def with_ai_select_all(self) -> VisionSensorReqNew:
        return self._with(GimbalBit.AI_SELECT, {8: 1.0})

    def with_ai_select_pixel(self, x_px: float, y_px: float) -> VisionSensorReqNew:
        return self._with(GimbalBit.AI_SELECT, {8: 2.0, 9: x_px, 10: y_px})

    def _derived(self) -> dict[str, Any]:
        return {"bits": [b.name for b in GimbalBit if self.bitmask & b]}


@wire_message(w.VISION_SENSOR_REQ_NEW, cs.GIMBAL_STATUS)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class GimbalStatus(WireMessage):
    """Gimbal status (148 B, checksum 12346) received on port 20006.

    ``other_params`` meanings depend on the RflySim3D version (DEC gimbal): the named
    accessors below follow the documented ones and are **version-dependent**.
    """

    checksum: int = cs.GIMBAL_STATUS
    seq_id: int = 0
    bitmask: int = 0
    type_id: int = 0
    target_copter: int = 0
    target_mount_type: int = 0
    data_width: int = 0
    data_height: int = 0
    data_check_freq: int = 0
    send_protocol: tuple[int, ...] = izeros(8)
    camera_fov_deg: float = 0.0
    sensor_pos_xyz_m: tuple[float, ...] = zeros(3)
    eular_or_quat: float = 0.0
    sensor_ang_eular: tuple[float, ...] = zeros(3)
    sensor_ang_quat: tuple[float, ...] = zeros(4)
    other_params: tuple[float, ...] = zeros(16)

    @property
    def focal_length_mm(self) -> float:
        return self.other_params[0]

    @property
    def fx_px(self) -> float:
        return self.other_params[3]

    @property
    def fy_px(self) -> float:
        return self.other_params[4]

    @property
    def width_px(self) -> float:
        return self.other_params[5]

    @property
    def height_px(self) -> float:
        return self.other_params[6]

    @property
    def laser_range_m(self) -> float:
        return self.other_params[7]

    def _derived(self) -> dict[str, Any]:
        return {
            "version_dependent": {
                "fx_px": self.fx_px,
                "fy_px": self.fy_px,
                "width_px": self.width_px,
                "height_px": self.height_px,
                "laser_range_m": self.laser_range_m,
            }
        }
