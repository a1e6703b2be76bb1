"""Every RflySim wire layout as a field table, compiled once into a little-endian ``struct.Struct``.

A :class:`Layout` is the single definition of a structure: the typed values in
:mod:`rfly_link.messages` take their fields, defaults, encoder, decoder and ``to_dict`` from it,
and the tests check its offsets against the spec tables. Each layout cites its source:

* ``VSP``: ``rflysim-vision-sensor-protocol.txt`` (newest; wins where DECISIONS.md is silent);
* ``V411``: ``rflysim-visioncomm-sdk-v4.11.txt``;
* ``BRIDGE``: ``rflysim-dll-ros-bridge-sdk-v4.10.txt``;
* ``UE4``: ``rflysim3d-ue4ctrlapi.txt``;
* ``CFG``: ``rflysim-config-json.md``;
* ``DEC``: ``DECISIONS.md``.

The SDK packs with native ``struct`` formats; every format here is explicit ``<`` (no padding).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_SCALAR_DEFAULT = {"s": b""}


@dataclass(frozen=True, slots=True)
class Field:
    """One named field: ``code`` is a struct code, ``count`` an array length (byte length for s)."""

    name: str
    code: str
    count: int = 1
    doc: str = ""

    @property
    def is_array(self) -> bool:
        return self.count > 1 and self.code != "s"

    @property
    def fmt(self) -> str:
        return f"{self.count}{self.code}" if self.count > 1 or self.code == "s" else self.code

    def default(self) -> Any:
        zero: Any = _SCALAR_DEFAULT.get(self.code, 0.0 if self.code in "fd" else 0)
        return (zero,) * self.count if self.is_array else zero


class Layout:
    """A field table compiled to one ``struct.Struct``; values are grouped per field."""

    __slots__ = (
        "_groups",
        "_has_text",
        "fields",
        "name",
        "names",
        "offsets",
        "size",
        "spec",
        "struct",
    )

    def __init__(self, name: str, spec: str, fields: Sequence[Field]) -> None:
        self.name = name
        self.spec = spec
        self.fields = tuple(fields)
        self.names = tuple(f.name for f in self.fields)
        self.struct = struct.Struct("<" + "".join(f.fmt for f in self.fields))
        self.size = self.struct.size
        groups = []
        offsets = {}
        flat = 0
        offset = 0
        for f in self.fields:
            width = 1 if not f.is_array else f.count
            groups.append((flat, flat + width, f.is_array))
            offsets[f.name] = offset
            offset += struct.calcsize("<" + f.fmt)
            flat += width
        self._groups = tuple(groups)
        self._has_text = any(f.code == "s" for f in self.fields)
        self.offsets = offsets

    def __repr__(self) -> str:
        return f"Layout({self.name!r}, {self.size} B, {self.struct.format!r})"

    def unpack(self, data: bytes | bytearray | memoryview, offset: int = 0) -> tuple[Any, ...]:
        """Decode ``size`` bytes at ``offset`` into one value per field (arrays as tuples).

        Text fields (``s``) lose their trailing NUL padding, so they round-trip.
        """
        flat = self.struct.unpack_from(data, offset)
        values = tuple(flat[a:b] if arr else flat[a] for a, b, arr in self._groups)
        if self._has_text:
            values = tuple(
                v.rstrip(b"\0") if f.code == "s" else v
                for f, v in zip(self.fields, values, strict=True)
            )
        return values

    def pack(self, values: Sequence[Any]) -> bytes:
        """Encode one value per field; a bad value raises ``ValueError`` naming the field."""
        flat: list[Any] = []
        for f, value in zip(self.fields, values, strict=True):
            if f.is_array:
                items = tuple(value)
                if len(items) != f.count:
                    raise ValueError(
                        f"{self.name}.{f.name}: expected {f.count} values, got {len(items)}"
                    )
                flat.extend(items)
            else:
                flat.append(value)
        try:
            return self.struct.pack(*flat)
        except struct.error:
            self._raise_field_error(values)
            raise

    def _raise_field_error(self, values: Sequence[Any]) -> None:
        for f, value in zip(self.fields, values, strict=True):
            items = tuple(value) if f.is_array else (value,)
            try:
                struct.pack("<" + f.fmt, *items)
            except struct.error as exc:
                raise ValueError(f"{self.name}.{f.name}: {value!r} does not fit {f.fmt}") from exc

    def checksum_of(self, data: bytes | bytearray | memoryview) -> int:
        """Read the first field (the checksum marker) with its own width."""
        first = self.fields[0]
        return struct.unpack_from("<" + first.code, data, 0)[0]


def _f(name: str, code: str, count: int = 1, doc: str = "") -> Field:
    return Field(name, code, count, doc)


# --- Vision-sensor UDP fragment headers (VSP 1.2; DEC "vision-sensor UDP fragments") ---------

FRAGMENT_CHECKSUM_24 = 1234567890
FRAGMENT_CHECKSUM_32 = 1234567893

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

# --- CopterSim (VSP 3; BRIDGE 2.2; DEC CopterSim) --------------------------------------------

SENSOR_REQ_COPTERSIM = Layout(
    "SensorReqCopterSim",
    "VSP 3.1 request, 36 B <4H4B6f; DEC",
    [
        _f("checksum", "H", doc="12345"),
        _f("sensor_type", "H", doc="0 IMU, 1 odometry"),
        _f("update_freq_hz", "H", doc="1..1000"),
        _f("port", "H", doc="reply UDP port"),
        _f("ip", "B", 4, doc="reply IPv4 address"),
        _f("params", "f", 6, doc="reserved"),
    ],
)

IMU_REPLY = Layout(
    "ImuReply",
    "VSP 3.2 IMU reply, 40 B <iid6f",
    [
        _f("checksum", "i", doc="1234567898"),
        _f("sequence", "i"),
        _f("simulation_time_s", "d"),
        _f("acceleration_frd_m_s2", "f", 3),
        _f("angular_rate_frd_rad_s", "f", 3),
    ],
)

ODOM_REPLY = Layout(
    "OdomReply",
    "VSP 3.3 odometry reply, 88 B <IIdIHH3d4f3f3f",
    [
        _f("checksum", "I", doc="1234567888"),
        _f("sequence", "I"),
        _f("simulation_time_s", "d"),
        _f("copter_id", "I"),
        _f("frame_type", "H", doc="1 = world NED, body FRD"),
        _f("flags", "H", doc="validity bits 0-3, discontinuity bit 5"),
        _f("position_ned_m", "d", 3),
        _f("quaternion_wxyz", "f", 4, doc="attitude of FRD body in NED"),
        _f("velocity_ned_m_s", "f", 3),
        _f("angular_velocity_frd_rad_s", "f", 3),
    ],
)

SOUT2SIMULATOR = Layout(
    "SOut2Simulator",
    "UE4 sendUE4PosFull struct; DEC (runnedTime@112, PosE@120; BRIDGE table is wrong)",
    [
        _f("checksum", "i", doc="123456789"),
        _f("copter_id", "i"),
        _f("vehicle_type", "i"),
        _f("reserved", "i"),
        _f("velocity_ned_m_s", "f", 3),
        _f("euler_rad", "f", 3),
        _f("quaternion_wxyz", "f", 4),
        _f("motor_rpm", "f", 8),
        _f("acceleration_frd_m_s2", "f", 3),
        _f("angular_rate_frd_rad_s", "f", 3),
        _f("runned_time_s", "d"),
        _f("position_ned_m", "d", 3),
        _f("position_gps", "d", 3, doc="lat deg, lon deg, alt m"),
    ],
)

SOUT2SIMULATOR_SIMPLE_TIME = Layout(
    "SOut2SimulatorSimpleTime",
    "UE4 sendUE4PosNew struct, 112 B <6i14f4d; DEC (also CopterSim's 112 B state)",
    [
        _f("checksum", "i", doc="1234567891"),
        _f("copter_id", "i"),
        _f("vehicle_type", "i"),
        _f("position_gps_int", "i", 3, doc="lat*1e7, lon*1e7, alt*1e3"),
        _f("motor_rpm", "f", 8),
        _f("velocity_ned_m_s", "f", 3),
        _f("euler_rad", "f", 3),
        _f("position_ned_m", "d", 3),
        _f("runned_time_s", "d"),
    ],
)

SIL_INT_FLOAT = Layout(
    "SILIntFloat",
    "BRIDGE 2.2 / UE4 PX4SILIntFloat, 120 B <10i20f; DEC",
    [
        _f("checksum", "i", doc="1234567897"),
        _f("copter_id", "i"),
        _f("in_ints", "i", 8),
        _f("in_floats", "f", 20),
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

# --- RflySim3D receive side, port 20006 (UE4 UE4MsgRecLoop; DEC RflySim3D receive) ---------

CRASH = Layout(
    "CopterSimCrash",
    "UE4 UE4MsgRecLoop 1) 12 B <3i",
    [_f("checksum", "i", doc="1234567890"), _f("copter_id", "i"), _f("target_id", "i")],
)

REQ_VE_CRASH_DATA = Layout(
    "ReqVeCrashData",
    "UE4 UE4MsgRecLoop 3) 160 B <4id29f20s; DEC",
    [
        _f("checksum", "i", doc="1234567897"),
        _f("copter_id", "i"),
        _f("vehicle_type", "i"),
        _f("crash_type", "i", doc="-2 ground, -1 static object, 0 none, >0 vehicle ID"),
        _f("runned_time_s", "d"),
        _f("velocity_ned_m_s", "f", 3),
        _f("position_ned_m", "f", 3),
        _f("crash_position_m", "f", 3),
        _f("target_position_m", "f", 3),
        _f("euler_rad", "f", 3),
        _f("motor_rpm", "f", 8),
        _f("ray_m", "f", 6, doc="front, back, left, right, up, down"),
        _f("crashed_name", "s", 20),
    ],
)

_CAMERA_HEAD = [
    _f("checksum", "i", doc="1234567891"),
    _f("seq_id", "i"),
    _f("type_id", "i"),
    _f("data_height", "i"),
    _f("data_width", "i"),
    _f("camera_fov_deg", "f"),
    _f("position_ue_m", "f", 3),
    _f("euler", "f", 3),
]
CAMERA_DATA_56 = Layout(
    "CameraData56", "UE4 UE4MsgRecLoop 4) 56 B <5i7fd", [*_CAMERA_HEAD, _f("timestamp_s", "d")]
)
CAMERA_DATA_72 = Layout(
    "CameraData72",
    "DEC 72 B <5i11fd (adds the quaternion, assumed after the Euler angles)",
    [*_CAMERA_HEAD, _f("quaternion_wxyz", "f", 4), _f("timestamp_s", "d")],
)

_OBJECT_BODY = [
    _f("position_ue_m", "f", 3),
    _f("euler", "f", 3),
    _f("box_origin_m", "f", 3),
    _f("box_extent_m", "f", 3, doc="half of the box size"),
]
_QUAT = _f("quaternion_wxyz", "f", 4)
_COPT_HEAD = [_f("checksum", "i", doc="1234567891"), _f("copter_id", "i")]
_OBJ_HEAD = [_f("checksum", "i", doc="1234567891"), _f("seq_id", "i")]

COPT_REQ_DATA_64 = Layout(
    "CoptReqData64",
    "UE4 UE4MsgRecLoop 5) 64 B <2i12fd",
    [*_COPT_HEAD, *_OBJECT_BODY, _f("timestamp_s", "d")],
)
COPT_REQ_DATA_80 = Layout(
    "CoptReqData80",
    "DEC 80 B <2i16fd; field order from the public SDK (quaternion after the Euler angles)",
    [*_COPT_HEAD, *_OBJECT_BODY[:2], _QUAT, *_OBJECT_BODY[2:], _f("timestamp_s", "d")],
)
OBJ_REQ_DATA_96 = Layout(
    "ObjReqData96",
    "UE4 UE4MsgRecLoop 6) 96 B <2i12fd32s",
    [*_OBJ_HEAD, *_OBJECT_BODY, _f("timestamp_s", "d"), _f("object_name", "s", 32)],
)
OBJ_REQ_DATA_112 = Layout(
    "ObjReqData112",
    "DEC 112 B <2i16fd32s; field order from the public SDK (quaternion after the Euler angles)",
    [
        *_OBJ_HEAD,
        *_OBJECT_BODY[:2],
        _QUAT,
        *_OBJECT_BODY[2:],
        _f("timestamp_s", "d"),
        _f("object_name", "s", 32),
    ],
)

# --- RflySim3D send side, port 20010 + window (UE4) -----------------------------------------

UE4_POS_SIMPLE = Layout(
    "SOut2SimulatorSimple",
    "UE4 sendUE4Pos/sendUE4Pos2Ground, 40 B <3i7f",
    [
        _f("checksum", "i", doc="1234567890 normal, 1234567891 fit to ground"),
        _f("copter_id", "i"),
        _f("vehicle_type", "i"),
        _f("motor_rpm_mean", "f"),
        _f("position_ned_m", "f", 3),
        _f("euler_rad", "f", 3),
    ],
)
UE4_POS_SCALE = Layout(
    "SOut2SimulatorSimple1",
    "UE4 sendUE4PosScale/sendUE4PosScale2Ground, 52 B <3i10f",
    [*UE4_POS_SIMPLE.fields, _f("scale", "f", 3)],
)
UE4_POS_SIMPLE_TIME = Layout(
    "SOut2SimulatorSimpleTime88",
    "UE4 sendUE4PosSimple, 88 B <3i17f1d (checksum 1234567890 in the public SDK)",
    [
        _f("checksum", "i", doc="1234567890"),
        _f("copter_id", "i"),
        _f("vehicle_type", "i"),
        _f("pwms", "f", 8),
        _f("position_ned_m", "f", 3),
        _f("velocity_ned_m_s", "f", 3),
        _f("euler_rad", "f", 3),
        _f("runned_time_s", "d"),
    ],
)
MULTI_3D_DATA_100 = Layout(
    "Multi3DData100New",
    "UE4 sendUE4PosScale100, 3804 B",
    [
        _f("checksum", "i", doc="1234567890 normal, 1234567891 fit to ground"),
        _f("copter_id", "H", 100),
        _f("vehicle_type", "H", 100),
        _f("position_ned_m", "f", 300),
        _f("euler_rad", "f", 300),
        _f("scale_x100", "H", 300),
        _f("motor_rpm_mean", "f", 100),
    ],
)
MULTI_3D_DATA_20 = Layout(
    "Multi3DData2New",
    "UE4 sendUE4PosScalePwm20, 1324 B",
    [
        _f("checksum", "i", doc="1234567890 normal, 1234567891 fit to ground"),
        _f("copter_id", "H", 20),
        _f("vehicle_type", "H", 20),
        _f("position_ned_m", "f", 60),
        _f("euler_rad", "f", 60),
        _f("scale_x100", "H", 60),
        _f("pwms", "f", 160),
    ],
)
COPTER_MSG = Layout(
    "CopterMsg",
    "UE4 sendUE4LabelMsg, 152 B <6i2f120s",
    [
        _f("checksum", "i", doc="1234567899"),
        _f("copter_id", "i", doc="<= 0: all vehicles"),
        _f("disp_flag", "i"),
        _f("rgb", "i", 3),
        _f("disp_time_s", "f"),
        _f("font_size", "f"),
        _f("text", "s", 120),
    ],
)
VEHICLE_ATTACH_25 = Layout(
    "VehicleAttatch25",
    "UE4 sendUE4Attatch, 304 B <i25i25i25i",
    [
        _f("checksum", "i", doc="1234567892"),
        _f("copter_ids", "i", 25),
        _f("attach_ids", "i", 25),
        _f("attach_types", "i", 25, doc="0 normal, 1 pos, 2 pos+yaw, 3 pos+attitude"),
    ],
)
UE4_EXT_MSG = Layout(
    "Ue4ExtMsg",
    "UE4 sendUE4ExtAct, 80 B <2i1d16f (the pack format, not the struct comment's doubles)",
    [
        _f("checksum", "i", doc="1234567894"),
        _f("copter_id", "i"),
        _f("runned_time_s", "d"),
        _f("action_ext", "f", 16),
    ],
)
UE4_CMD_SHORT = Layout(
    "Ue4CMD0", "UE4 sendUE4Cmd, 56 B <i52s", [_f("checksum", "i"), _f("command", "s", 52)]
)
UE4_CMD_LONG = Layout(
    "Ue4CMD", "UE4 sendUE4Cmd, 256 B <i252s", [_f("checksum", "i"), _f("command", "s", 252)]
)
UE4_CMD_NET = Layout(
    "Ue4CMDNet", "UE4 sendUE4CmdNet, 96 B <i92s", [_f("checksum", "i"), _f("command", "s", 92)]
)
