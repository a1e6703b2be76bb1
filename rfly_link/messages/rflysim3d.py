"""RflySim3D values: what it reports on port 20006 and what it accepts on ``20010 + window``.

The 168 B and 112 B vehicle updates share CopterSim's state layouts (DEC: only the port tells
them apart). ``UE4ExtAct`` is the 144 B ``<2i1d16d`` the public SDK really sends (issue 13):
the 80 B ``2i1d16f`` in its comment never reaches RflySim3D.
"""

from __future__ import annotations

from rfly_link.messages.base import WireMessage, izeros, message_dataclass, wire_message, zeros
from rfly_link.messages.coptersim import SimpleTimeFields
from rfly_link.wire import checksums as cs
from rfly_link.wire import coptersim as wc
from rfly_link.wire import rflysim3d as w

# --- RflySim3D receive side (port 20006) -------------------------------------------------------


@wire_message(w.CRASH, cs.CRASH)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class CopterSimCrash(WireMessage):
    """Collision report from RflySim3D (12 B)."""

    checksum: int = cs.CRASH
    copter_id: int = 0
    target_id: int = 0


@wire_message(w.REQ_VE_CRASH_DATA, cs.REQ_VE_CRASH_DATA)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class ReqVeCrashData(WireMessage):
    """Per-vehicle crash/ray data (160 B)."""

    checksum: int = cs.REQ_VE_CRASH_DATA
    copter_id: int = 0
    vehicle_type: int = 0
    crash_type: int = 0
    runned_time_s: float = 0.0
    velocity_ned_m_s: tuple[float, ...] = zeros(3)
    position_ned_m: tuple[float, ...] = zeros(3)
    crash_position_m: tuple[float, ...] = zeros(3)
    target_position_m: tuple[float, ...] = zeros(3)
    euler_rad: tuple[float, ...] = zeros(3)
    motor_rpm: tuple[float, ...] = zeros(8)
    ray_m: tuple[float, ...] = zeros(6)
    crashed_name: bytes = b""


@wire_message(w.CAMERA_DATA_56, cs.OBJECT_DATA)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class CameraData(WireMessage):
    """Camera pose report, 56 B (after a reqCam console request)."""

    checksum: int = cs.OBJECT_DATA
    seq_id: int = 0
    type_id: int = 0
    data_height: int = 0
    data_width: int = 0
    camera_fov_deg: float = 0.0
    position_ue_m: tuple[float, ...] = zeros(3)
    euler: tuple[float, ...] = zeros(3)
    timestamp_s: float = 0.0


@wire_message(w.CAMERA_DATA_72, cs.OBJECT_DATA)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class CameraDataQuat(WireMessage):
    """Camera pose report with quaternion, 72 B."""

    checksum: int = cs.OBJECT_DATA
    seq_id: int = 0
    type_id: int = 0
    data_height: int = 0
    data_width: int = 0
    camera_fov_deg: float = 0.0
    position_ue_m: tuple[float, ...] = zeros(3)
    euler: tuple[float, ...] = zeros(3)
    quaternion_wxyz: tuple[float, ...] = zeros(4)
    timestamp_s: float = 0.0


@wire_message(w.COPT_REQ_DATA_64, cs.OBJECT_DATA)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class CoptReqData(WireMessage):
    """Vehicle pose and bounding box, 64 B (after reqCopt)."""

    checksum: int = cs.OBJECT_DATA
    copter_id: int = 0
    position_ue_m: tuple[float, ...] = zeros(3)
    euler: tuple[float, ...] = zeros(3)
    box_origin_m: tuple[float, ...] = zeros(3)
    box_extent_m: tuple[float, ...] = zeros(3)
    timestamp_s: float = 0.0


@wire_message(w.COPT_REQ_DATA_80, cs.OBJECT_DATA)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class CoptReqDataQuat(WireMessage):
    """Vehicle pose, box and quaternion, 80 B."""

    checksum: int = cs.OBJECT_DATA
    copter_id: int = 0
    position_ue_m: tuple[float, ...] = zeros(3)
    euler: tuple[float, ...] = zeros(3)
    quaternion_wxyz: tuple[float, ...] = zeros(4)
    box_origin_m: tuple[float, ...] = zeros(3)
    box_extent_m: tuple[float, ...] = zeros(3)
    timestamp_s: float = 0.0


@wire_message(w.OBJ_REQ_DATA_96, cs.OBJECT_DATA)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class ObjReqData(WireMessage):
    """Scene object pose, box and name, 96 B (after reqObj)."""

    checksum: int = cs.OBJECT_DATA
    seq_id: int = 0
    position_ue_m: tuple[float, ...] = zeros(3)
    euler: tuple[float, ...] = zeros(3)
    box_origin_m: tuple[float, ...] = zeros(3)
    box_extent_m: tuple[float, ...] = zeros(3)
    timestamp_s: float = 0.0
    object_name: bytes = b""


@wire_message(w.OBJ_REQ_DATA_112, cs.OBJECT_DATA)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class ObjReqDataQuat(WireMessage):
    """Scene object pose, box, quaternion and name, 112 B."""

    checksum: int = cs.OBJECT_DATA
    seq_id: int = 0
    position_ue_m: tuple[float, ...] = zeros(3)
    euler: tuple[float, ...] = zeros(3)
    quaternion_wxyz: tuple[float, ...] = zeros(4)
    box_origin_m: tuple[float, ...] = zeros(3)
    box_extent_m: tuple[float, ...] = zeros(3)
    timestamp_s: float = 0.0
    object_name: bytes = b""


# --- RflySim3D send side (port 20010 + window) -----------------------------------------------

UE4_NORMAL = cs.UE4_NORMAL
UE4_FIT_GROUND = cs.UE4_FIT_GROUND


@wire_message(w.UE4_POS_SIMPLE, cs.UE4_NORMAL, cs.UE4_FIT_GROUND)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4PosSimple(WireMessage):
    """``sendUE4Pos`` (checksum 1234567890) and ``sendUE4Pos2Ground`` (1234567891)."""

    checksum: int = cs.UE4_NORMAL
    copter_id: int = 0
    vehicle_type: int = 0
    motor_rpm_mean: float = 0.0
    position_ned_m: tuple[float, ...] = zeros(3)
    euler_rad: tuple[float, ...] = zeros(3)

    @property
    def fit_ground(self) -> bool:
        return self.checksum == UE4_FIT_GROUND


@wire_message(w.UE4_POS_SCALE, cs.UE4_NORMAL, cs.UE4_FIT_GROUND)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4PosScale(WireMessage):
    """``sendUE4PosScale`` / ``sendUE4PosScale2Ground``."""

    checksum: int = cs.UE4_NORMAL
    copter_id: int = 0
    vehicle_type: int = 0
    motor_rpm_mean: float = 0.0
    position_ned_m: tuple[float, ...] = zeros(3)
    euler_rad: tuple[float, ...] = zeros(3)
    scale: tuple[float, ...] = zeros(3)


@wire_message(w.UE4_POS_SIMPLE_TIME, cs.UE4_NORMAL)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4PosSimpleTime(WireMessage):
    """``sendUE4PosSimple`` (88 B)."""

    checksum: int = cs.UE4_NORMAL
    copter_id: int = 0
    vehicle_type: int = 0
    pwms: tuple[float, ...] = zeros(8)
    position_ned_m: tuple[float, ...] = zeros(3)
    velocity_ned_m_s: tuple[float, ...] = zeros(3)
    euler_rad: tuple[float, ...] = zeros(3)
    runned_time_s: float = 0.0


@wire_message(w.MULTI_3D_DATA_100, cs.UE4_NORMAL, cs.UE4_FIT_GROUND)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4PosScale100(WireMessage):
    """``sendUE4PosScale100``: 100 vehicles at once; copter_id 0 hides a slot."""

    checksum: int = cs.UE4_NORMAL
    copter_id: tuple[int, ...] = izeros(100)
    vehicle_type: tuple[int, ...] = izeros(100)
    position_ned_m: tuple[float, ...] = zeros(300)
    euler_rad: tuple[float, ...] = zeros(300)
    scale_x100: tuple[int, ...] = izeros(300)
    motor_rpm_mean: tuple[float, ...] = zeros(100)


@wire_message(w.MULTI_3D_DATA_20, cs.UE4_NORMAL, cs.UE4_FIT_GROUND)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4PosScalePwm20(WireMessage):
    """``sendUE4PosScalePwm20``: 20 vehicles with 8 PWMs each."""

    checksum: int = cs.UE4_NORMAL
    copter_id: tuple[int, ...] = izeros(20)
    vehicle_type: tuple[int, ...] = izeros(20)
    position_ned_m: tuple[float, ...] = zeros(60)
    euler_rad: tuple[float, ...] = zeros(60)
    scale_x100: tuple[int, ...] = izeros(60)
    pwms: tuple[float, ...] = zeros(160)


@wire_message(w.COPTER_MSG, cs.UE4_LABEL)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4LabelMsg(WireMessage):
    """``sendUE4LabelMsg``: text shown above a vehicle (UTF-8, at most 119 bytes + NUL)."""

    checksum: int = cs.UE4_LABEL
    copter_id: int = 0
    disp_flag: int = 0
    rgb: tuple[int, ...] = izeros(3)
    disp_time_s: float = 0.0
    font_size: float = 0.0
    text: bytes = b""


@wire_message(w.VEHICLE_ATTACH_25, cs.UE4_ATTACH)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4Attach(WireMessage):
    """``sendUE4Attatch``: attach up to 25 vehicles to others."""

    checksum: int = cs.UE4_ATTACH
    copter_ids: tuple[int, ...] = izeros(25)
    attach_ids: tuple[int, ...] = izeros(25)
    attach_types: tuple[int, ...] = izeros(25)


@wire_message(w.UE4_EXT_MSG, cs.UE4_EXT_ACT)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4ExtAct(WireMessage):
    """``sendUE4ExtAct``: 16 values for the vehicle's extended blueprint actions."""

    checksum: int = cs.UE4_EXT_ACT
    copter_id: int = 0
    runned_time_s: float = 0.0
    action_ext: tuple[float, ...] = zeros(16)


@wire_message(w.UE4_CMD_SHORT, cs.UE4_COMMAND)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4Command(WireMessage):
    """Console command, up to 51 bytes (``i52s``)."""

    checksum: int = cs.UE4_COMMAND
    command: bytes = b""


@wire_message(w.UE4_CMD_LONG, cs.UE4_COMMAND)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4CommandLong(WireMessage):
    """Console command, up to 249 bytes (``i252s``)."""

    checksum: int = cs.UE4_COMMAND
    command: bytes = b""


@wire_message(w.UE4_CMD_NET, cs.UE4_COMMAND_NET)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4CommandNet(WireMessage):
    """LAN console command to 224.0.0.10:20009, up to 91 bytes (``i92s``)."""

    checksum: int = cs.UE4_COMMAND_NET
    command: bytes = b""


def console_command(command: str) -> UE4Command | UE4CommandLong:
    """Pick the short or long console structure as the SDK does (51 / 249 byte limits)."""
    data = command.encode("utf-8")
    if len(data) <= 51:
        return UE4Command(UE4_NORMAL, data)
    if len(data) <= 249:
        return UE4CommandLong(UE4_NORMAL, data)
    raise ValueError(f"command: at most 249 UTF-8 bytes, got {len(data)}")


def lan_command(command: str) -> UE4CommandNet:
    data = command.encode("utf-8")
    if len(data) > 91:
        raise ValueError(f"command: at most 91 UTF-8 bytes, got {len(data)}")
    return UE4CommandNet(cs.UE4_COMMAND_NET, data)


def label_message(
    copter_id: int,
    text: str,
    *,
    font_size: float = 30.0,
    rgb: tuple[int, int, int] = (255, 0, 0),
    disp_time_s: float = 0.0,
    disp_flag: int = -1,
) -> UE4LabelMsg:
    data = text.encode("utf-8")
    if len(data) > 119:
        raise ValueError(f"text: at most 119 UTF-8 bytes, got {len(data)}")
    return UE4LabelMsg(cs.UE4_LABEL, copter_id, disp_flag, rgb, disp_time_s, font_size, data)


@wire_message(wc.SOUT2SIMULATOR, cs.STATE_168)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4PosFull(WireMessage):
    """``sendUE4PosFull``: the SOut2Simulator layout sent to RflySim3D on ``20010 + window``."""

    checksum: int = cs.STATE_168
    copter_id: int = 0
    vehicle_type: int = 0
    reserved: int = 0
    velocity_ned_m_s: tuple[float, ...] = zeros(3)
    euler_rad: tuple[float, ...] = zeros(3)
    quaternion_wxyz: tuple[float, ...] = zeros(4)
    motor_rpm: tuple[float, ...] = zeros(8)
    acceleration_frd_m_s2: tuple[float, ...] = zeros(3)
    angular_rate_frd_rad_s: tuple[float, ...] = zeros(3)
    runned_time_s: float = 0.0
    position_ned_m: tuple[float, ...] = zeros(3)
    position_gps: tuple[float, ...] = zeros(3)


@wire_message(wc.SOUT2SIMULATOR_SIMPLE_TIME, cs.STATE_112)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4PosNew(SimpleTimeFields):
    """``sendUE4PosNew``: the 112 B vehicle update sent to RflySim3D on ``20010 + window``."""
