"""Vision-sensor tables: UDP fragment headers, fixed-size sensor payloads, sensor requests.

Sources: VSP 1.2 (fragments), VSP 2.x (payloads), CFG 5 (requests), VSP 4.1 (gimbal);
see :mod:`rfly_link.wire` for the abbreviations.
"""

from __future__ import annotations

import struct

from rfly_link.wire import checksums as cs
from rfly_link.wire.layout import Layout, _f

FRAGMENT_CHECKSUM_24 = cs.FRAGMENT_24
FRAGMENT_CHECKSUM_32 = cs.FRAGMENT_32

# --- Vision-sensor UDP fragment headers (VSP 1.2; DEC "vision-sensor UDP fragments") ---------

FRAGMENT_HEADER_24 = Layout(
    "FragmentHeader24",
    "VSP 1.2 24-byte header (4i1d); DEC",
    [
        _f("checksum", "i", doc="1234567890"),
        _f("packet_len", "i", doc="whole datagram length, header included"),
        _f("packet_seq", "i", doc="fragment index from 0"),
        _f("packet_count", "i", doc="fragments in the frame"),
        _f("timestamp_s", "d", doc="RflySim3D simulation time of the frame"),
    ],
)

FRAGMENT_HEADER_32 = Layout(
    "FragmentHeader32",
    "VSP 1.2 32-byte header (6i1d); V411 1.1; DEC",
    [
        _f("checksum", "i", doc="1234567893"),
        _f("packet_len", "i"),
        _f("packet_seq", "i"),
        _f("packet_count", "i"),
        _f("frame_id", "i"),
        _f("reserved", "i"),
        _f("timestamp_s", "d"),
    ],
)

# --- Sensor payloads (after reassembly) -----------------------------------------------------

POINT_CLOUD_PREFIX_36 = Layout(
    "PointCloudPrefix36",
    "VSP 2.3 point-cloud common payload; DEC point clouds",
    [
        _f("copter_id", "i"),
        _f("axis_type", "i", doc="0 vehicle pose, 1 sensor pose, 2 sensor pose relative to start"),
        _f("position_m", "f", 3),
        _f("euler_rad", "f", 3, doc="roll, pitch, yaw"),
        _f("point_count", "i"),
    ],
)

POINT_CLOUD_PREFIX_28 = Layout(
    "PointCloudPrefix28",
    "DEC point clouds: older senders, no copter_id/axis_type",
    [_f("position_m", "f", 3), _f("euler_rad", "f", 3), _f("point_count", "i")],
)

DISTANCE_SENSOR = Layout(
    "DistanceSensor",
    "VSP 2.6 / V411 1.3 laser range finder, 56 B",
    [
        _f("distance_m", "f"),
        _f("copter_id", "i"),
        _f("ray_start_m", "f", 3),
        _f("angle_euler", "f", 3),
        _f("impact_point_m", "f", 3),
        _f("box_origin_m", "f", 3),
    ],
)

OPTICAL_FLOW = Layout(
    "OpticalFlow",
    "VSP 2.7 optical flow, 34 B packed",
    [
        _f("time_usec", "Q"),
        _f("sensor_id", "B"),
        _f("flow_x", "h"),
        _f("flow_y", "h"),
        _f("flow_comp_m_x", "f"),
        _f("flow_comp_m_y", "f"),
        _f("quality", "B"),
        _f("ground_distance_m", "f"),
        _f("flow_rate_x", "f"),
        _f("flow_rate_y", "f"),
    ],
)

TARGET_COUNT = struct.Struct("<i")
BOX_TARGET = Layout(
    "BoxTarget",
    "VSP 2.8 TypeID 30 entry",
    [
        _f("copter_id", "i"),
        _f("credibility", "f"),
        _f("min_x", "f"),
        _f("min_y", "f"),
        _f("max_x", "f"),
        _f("max_y", "f"),
    ],
)
RADAR_TARGET = Layout(
    "RadarTarget",
    "VSP 2.8 TypeID 31 entry",
    [
        _f("copter_id", "i"),
        _f("relative_x_m", "f"),
        _f("relative_y_m", "f"),
        _f("relative_z_m", "f"),
    ],
)

_VISION_HEAD = [
    _f("checksum", "H", doc="12345"),
    _f("seq_id", "H"),
    _f("type_id", "H"),
    _f("target_copter", "H"),
    _f("target_mount_type", "H"),
    _f("data_width", "H"),
    _f("data_height", "H"),
    _f("data_check_freq", "H"),
    _f("send_protocol", "H", 8),
]

VISION_SENSOR_REQ = Layout(
    "VisionSensorReq",
    "CFG 5 new layout, 144 B <16H28f",
    [
        *_VISION_HEAD,
        _f("camera_fov_deg", "f"),
        _f("sensor_pos_xyz_m", "f", 3),
        _f("eular_or_quat", "f"),
        _f("sensor_ang_eular", "f", 3),
        _f("sensor_ang_quat", "f", 4),
        _f("other_params", "f", 16),
    ],
)

VISION_SENSOR_REQ_LEGACY = Layout(
    "VisionSensorReqLegacy",
    "CFG 5 legacy layout, 92 B <16H15f",
    [
        *_VISION_HEAD,
        _f("camera_fov_deg", "f"),
        _f("sensor_pos_xyz_m", "f", 3),
        _f("sensor_ang_eular", "f", 3),
        _f("other_params", "f", 8),
    ],
)

VISION_SENSOR_REQ_NEW = Layout(
    "VisionSensorReqNew",
    "VSP 4.1 gimbal control/status, 148 B <2HI14H28f; DEC gimbal",
    [
        _f("checksum", "H", doc="12345 control, 12346 status"),
        _f("seq_id", "H"),
        _f("bitmask", "I"),
        _f("type_id", "H"),
        _f("target_copter", "H"),
        _f("target_mount_type", "H"),
        _f("data_width", "H"),
        _f("data_height", "H"),
        _f("data_check_freq", "H"),
        _f("send_protocol", "H", 8),
        _f("camera_fov_deg", "f"),
        _f("sensor_pos_xyz_m", "f", 3),
        _f("eular_or_quat", "f"),
        _f("sensor_ang_eular", "f", 3),
        _f("sensor_ang_quat", "f", 4),
        _f("other_params", "f", 16),
    ],
)
