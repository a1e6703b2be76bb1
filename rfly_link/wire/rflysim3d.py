"""RflySim3D tables: what it sends to port 20006 and what it receives on 20010 + window.

Sources (``rfly_link.wire`` names them): UE4 and DEC; field orders the specs leave open come
from the public SDK's ``UE4CtrlAPI.py``.
"""

from __future__ import annotations

from rfly_link.wire.layout import Layout, _f

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
    "UE4 sendUE4ExtAct, 144 B <2i1d16d: the struct's doubles, which the public SDK packs "
    "(its 'struct.pack 2i1d16f' note, 80 B, is not what RflySim3D receives)",
    [
        _f("checksum", "i", doc="1234567894"),
        _f("copter_id", "i"),
        _f("runned_time_s", "d"),
        _f("action_ext", "d", 16, doc="ExtToUE4[16]"),
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
