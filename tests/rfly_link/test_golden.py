"""Golden vectors built by hand at the offsets the spec tables give, never by our encoder."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

import rfly_link
from rfly_link import commands, reassembly, sensors
from rfly_link import messages as m


def put(buf: bytearray, offset: int, fmt: str, *values: object) -> None:
    struct.pack_into("<" + fmt, buf, offset, *values)


# Field values for the 168 B `<4i 24f 7d` structure: all distinct, non-symmetric and exact in
# float32, so a field read at the wrong offset, or two swapped fields, cannot pass.
_S168_VEL = (1.5, -2.5, 0.25)
_S168_EULER = (0.125, -0.375, 1.75)
_S168_QUAT = (0.875, 0.0625, -0.1875, 0.4375)  # raw wire values; decoding does not normalise
_S168_RPM = tuple(1000.0 + 25.0 * i for i in range(8))
_S168_ACC = (0.75, -1.25, -9.75)
_S168_RATE = (0.0625, -0.3125, 2.5)
_S168_POS = (10.0, 20.0, -30.0)
_S168_GPS = (40.1, 116.2, 50.0)


def _state_168() -> bytes:
    """SOut2Simulator / sendUE4PosFull at the offsets docs/protocol-decisions.md lists."""
    # docs/protocol-decisions.md: VelE@16, AngEuler@28, AngQuatern@40, MotorRPMS@56, AccB@88,
    # RateB@100, runnedTime f64@112, PosE f64[3]@120, PosGPS f64[3]@144.
    buf = bytearray(168)
    put(buf, 0, "i", 123456789)
    put(buf, 4, "i", 2)
    put(buf, 8, "i", 3)
    put(buf, 12, "i", 7)  # reserv
    put(buf, 16, "3f", *_S168_VEL)
    put(buf, 28, "3f", *_S168_EULER)
    put(buf, 40, "4f", *_S168_QUAT)
    put(buf, 56, "8f", *_S168_RPM)
    put(buf, 88, "3f", *_S168_ACC)
    put(buf, 100, "3f", *_S168_RATE)
    put(buf, 112, "d", 12.5)
    put(buf, 120, "3d", *_S168_POS)
    put(buf, 144, "3d", *_S168_GPS)
    return bytes(buf)


def _assert_state_168(value: m.SOut2Simulator | m.UE4PosFull) -> None:
    assert value.checksum == 123456789
    assert value.copter_id == 2 and value.vehicle_type == 3 and value.reserved == 7
    assert value.velocity_ned_m_s == _S168_VEL
    assert value.euler_rad == _S168_EULER
    assert value.quaternion_wxyz == _S168_QUAT
    assert value.motor_rpm == _S168_RPM
    assert value.acceleration_frd_m_s2 == _S168_ACC
    assert value.angular_rate_frd_rad_s == _S168_RATE
    assert value.runned_time_s == 12.5
    assert value.position_ned_m == _S168_POS
    assert value.position_gps == _S168_GPS


def test_sout2simulator_offsets_from_decisions() -> None:
    value = rfly_link.decode(_state_168(), port=30101)
    assert isinstance(value, m.SOut2Simulator)
    _assert_state_168(value)


def test_ue4_pos_full_168_decoded_by_port() -> None:
    # UE4 sendUE4PosFull sends the SOut2Simulator struct (4i24f7d) to RflySim3D. 168 B is
    # ambiguous with CopterSim's SOut2Simulator: only the port decides (docs/protocol-decisions.md).
    data = _state_168()
    value = rfly_link.decode(data, port=20010 + 2)
    assert type(value) is m.UE4PosFull
    _assert_state_168(value)
    assert type(rfly_link.decode(data, port=30100 + 2 * 3 - 1)) is m.SOut2Simulator
    with pytest.raises(rfly_link.errors.AmbiguousDatagram) as info:
        rfly_link.decode(data)
    assert set(info.value.candidates) == {"SOut2Simulator", "UE4PosFull"}
    with pytest.raises(rfly_link.errors.WrongPort):
        rfly_link.decode(data, port=20006)  # neither structure travels RflySim3D -> us
    full = m.UE4PosFull(
        copter_id=2,
        vehicle_type=3,
        reserved=7,
        velocity_ned_m_s=_S168_VEL,
        euler_rad=_S168_EULER,
        quaternion_wxyz=_S168_QUAT,
        motor_rpm=_S168_RPM,
        acceleration_frd_m_s2=_S168_ACC,
        angular_rate_frd_rad_s=_S168_RATE,
        runned_time_s=12.5,
        position_ned_m=_S168_POS,
        position_gps=_S168_GPS,
    )
    assert full.encode() == data


def test_state_112_gps_ints_and_positions() -> None:
    buf = bytearray(112)
    put(buf, 0, "3i", 1234567891, 1, 3)
    put(buf, 12, "3i", 401540302, 1162593683, 50000)
    put(buf, 24, "8f", *([1000.0] * 8))
    put(buf, 56, "3f", 1.0, 2.0, 3.0)
    put(buf, 68, "3f", 0.0, 0.0, 1.5)
    put(buf, 80, "3d", 5.0, 6.0, -7.0)
    put(buf, 104, "d", 99.0)
    value = rfly_link.decode(bytes(buf), port=30101)
    assert isinstance(value, m.SOut2SimulatorSimpleTime)
    assert value.position_gps == pytest.approx((40.1540302, 116.2593683, 50.0))
    assert value.position_ned_m == (5.0, 6.0, -7.0)
    assert value.runned_time_s == 99.0


def test_sensor_req_coptersim_36() -> None:
    buf = bytearray(36)
    put(buf, 0, "4H", 12345, 1, 100, 31000)
    put(buf, 8, "4B", 192, 168, 1, 20)
    put(buf, 12, "6f", 0, 0, 0, 0, 0, 0)
    req = m.SensorReqCopterSim.build(m.CopterSimSensor.ODOMETRY, 100, "192.168.1.20", 31000)
    assert req.encode() == bytes(buf)
    assert rfly_link.decode(bytes(buf)) == req


def test_imu_reply_40() -> None:
    buf = bytearray(40)
    put(buf, 0, "i", 1234567898)
    put(buf, 4, "i", 77)
    put(buf, 8, "d", 3.25)
    put(buf, 16, "3f", 0.5, -0.5, -9.75)
    put(buf, 28, "3f", 0.125, 0.25, -0.375)
    value = rfly_link.decode(bytes(buf), port=31000)
    assert isinstance(value, m.ImuReply)
    assert value.sequence == 77 and value.simulation_time_s == 3.25
    assert value.acceleration_frd_m_s2 == (0.5, -0.5, -9.75)
    assert value.angular_rate_frd_rad_s == (0.125, 0.25, -0.375)


def test_odom_reply_88_flags_and_frame() -> None:
    buf = bytearray(88)
    put(buf, 0, "I", 1234567888)
    put(buf, 4, "I", 5)
    put(buf, 8, "d", 1.5)
    put(buf, 16, "I", 4)
    put(buf, 20, "H", 1)
    put(buf, 22, "H", 0b101111)
    put(buf, 24, "3d", 1.0, 2.0, -3.0)
    put(buf, 48, "4f", 1.0, 0.0, 0.0, 0.0)
    put(buf, 64, "3f", 0.5, 0.25, -0.125)
    put(buf, 76, "3f", 0.0, 0.0, 0.75)
    value = rfly_link.decode(bytes(buf))
    assert isinstance(value, m.OdomReply)
    assert value.copter_id == 4 and value.frame_type == 1
    assert value.discontinuity and value.pose_valid
    assert value.position_ned_m == (1.0, 2.0, -3.0)
    assert value.angular_velocity_frd_rad_s == (0.0, 0.0, 0.75)
    d = value.to_dict()
    assert d["frame"] == "NED/FRD"
    assert d["flag_names"] == [
        "POSITION_VALID",
        "ATTITUDE_VALID",
        "VELOCITY_VALID",
        "ANGULAR_VELOCITY_VALID",
        "DISCONTINUITY",
    ]


def test_sil_int_float_120_position_helper() -> None:
    buf = bytearray(120)
    put(buf, 0, "2i", 1234567897, 1)
    put(buf, 8, "i", 1 | 2 | 4 | 512)  # CmdBase + CmdArmed + CmdPosition
    put(buf, 12, "i", 1 | 8)  # HasPos + HasYaw
    put(buf, 40, "3f", 10.0, -5.0, -2.0)
    put(buf, 40 + 11 * 4, "f", 1.5)  # in_floats[FAtt + 2]
    msg = m.SILIntFloat.position_ned(1, 10.0, -5.0, -2.0, 1.5)
    assert msg.encode() == bytes(buf)
    assert msg.command == m.SIL_CMD_BASE | m.SilCmd.ARMED | m.SilCmd.POSITION


def test_gimbal_control_148_offsets() -> None:
    buf = bytearray(148)
    put(buf, 0, "2H", 12345, 3)
    put(buf, 4, "I", (1 << 6) | (1 << 9))
    put(buf, 8, "6H", 9, 1, 0, 0, 0, 0)
    put(buf, 84 + 2 * 4, "2f", 10.0, -20.0)  # other_params[2:4], deg/s
    put(buf, 84 + 6 * 4, "f", 1.0)  # other_params[6] laser on
    put(buf, 36, "f", 0.0)
    msg = m.VisionSensorReqNew(seq_id=3, type_id=9, target_copter=1, camera_fov_deg=0.0)
    msg = msg.with_angular_rate(10.0, -20.0).with_laser_range(True)
    assert msg.encode() == bytes(buf)


def test_gimbal_status_accessors() -> None:
    buf = bytearray(148)
    put(buf, 0, "2H", 12346, 1)
    put(buf, 36, "f", 60.0)
    put(buf, 84, "16f", 8.0, 0, 0, 900.0, 905.0, 1280, 720, 42.5, *([0.0] * 8))
    status = rfly_link.decode(bytes(buf), port=20006)
    assert isinstance(status, m.GimbalStatus)
    assert status.camera_fov_deg == 60.0
    assert status.focal_length_mm == 8.0
    assert (status.fx_px, status.fy_px) == (900.0, 905.0)
    assert (status.width_px, status.height_px) == (1280, 720)
    assert status.laser_range_m == 42.5


def test_rflysim3d_receive_structures() -> None:
    crash = struct.pack("<3i", 1234567890, 2, 5)
    value = rfly_link.decode(crash, port=20006)
    assert isinstance(value, m.CopterSimCrash) and value.target_id == 5

    buf = bytearray(160)
    put(buf, 0, "4i", 1234567897, 1, 3, -2)
    put(buf, 16, "d", 7.5)
    put(buf, 24 + 3 * 4, "3f", 1.0, 2.0, 3.0)  # PosE after VelE
    put(buf, 140, "20s", b"Ground")
    value = rfly_link.decode(bytes(buf), port=20006)
    assert isinstance(value, m.ReqVeCrashData)
    assert value.crash_type == -2 and value.position_ned_m == (1.0, 2.0, 3.0)
    assert value.crashed_name == b"Ground" and value.to_dict()["crashed_name"] == "Ground"

    buf = bytearray(56)
    put(buf, 0, "5i", 1234567891, 1, 1, 480, 640)
    put(buf, 20, "f", 90.0)
    put(buf, 48, "d", 1.25)
    value = rfly_link.decode(bytes(buf), port=20006)
    assert isinstance(value, m.CameraData)
    assert (value.data_height, value.data_width, value.timestamp_s) == (480, 640, 1.25)

    buf = bytearray(96)
    put(buf, 0, "2i", 1234567891, 0)
    put(buf, 8, "3f", 1.0, 2.0, 3.0)
    put(buf, 56, "d", 2.5)
    put(buf, 64, "32s", b"Tree_01")
    value = rfly_link.decode(bytes(buf))
    assert isinstance(value, m.ObjReqData)
    assert value.object_name == b"Tree_01" and value.timestamp_s == 2.5

    buf = bytearray(64)
    put(buf, 0, "2i", 1234567891, 7)
    put(buf, 44, "3f", 0.5, 0.5, 0.25)  # BoxExtent
    put(buf, 56, "d", 3.0)
    value = rfly_link.decode(bytes(buf))
    assert isinstance(value, m.CoptReqData)
    assert value.copter_id == 7 and value.box_extent_m == (0.5, 0.5, 0.25)


def test_camera_data_72_with_quaternion() -> None:
    # docs/protocol-decisions.md: CameraData 72 B `<5i 11f d` adds the quaternion. The public SDK's
    # UE4CtrlAPI.CameraData (struct comment and CopyData) puts angQuat[4] after angEuler[3].
    buf = bytearray(72)
    put(buf, 0, "5i", 1234567891, 2, 1, 480, 640)  # checksum, SeqID, TypeID, Height, Width
    put(buf, 20, "f", 72.5)  # CameraFOV
    put(buf, 24, "3f", 1.25, -2.75, 3.5)  # PosUE
    put(buf, 36, "3f", 0.125, -0.25, 1.375)  # angEuler
    put(buf, 48, "4f", 0.875, 0.0625, -0.1875, 0.4375)  # angQuat
    put(buf, 64, "d", 4.75)  # timestmp
    value = rfly_link.decode(bytes(buf), port=20006)
    assert type(value) is m.CameraDataQuat
    assert (value.seq_id, value.type_id) == (2, 1)
    assert (value.data_height, value.data_width) == (480, 640)
    assert value.camera_fov_deg == 72.5
    assert value.position_ue_m == (1.25, -2.75, 3.5)
    assert value.euler == (0.125, -0.25, 1.375)
    assert value.quaternion_wxyz == (0.875, 0.0625, -0.1875, 0.4375)
    assert value.timestamp_s == 4.75
    assert value.encode() == bytes(buf)


# CoptReqData 80 B `<2i 16f d` and ObjReqData 112 B `<2i 16f d 32s` (docs/protocol-decisions.md).
# The documents do not order the 16 floats; the public SDK's UE4CtrlAPI (CoptReqData /
# ObjReqData struct comments and CopyData: angQuat = iv[8:12], boxOrigin = iv[12:15]) does:
# PosUE@8, angEuler@20, angQuat@32, boxOrigin@48, BoxExtent@60, timestmp@72 (then ObjName@80).
_OBJ_POS = (1.5, -2.5, 3.25)
_OBJ_EULER = (0.125, -0.375, 0.625)
_OBJ_QUAT = (0.875, 0.0625, -0.1875, 0.4375)
_OBJ_BOX_ORIGIN = (4.5, -5.75, 6.0)
_OBJ_BOX_EXTENT = (0.25, 0.75, 1.125)
# The specs give only the format; the field order (quaternion right after the Euler angles,
# then the box) is the public SDK's CoptReqData/ObjReqData, as for CameraData.


def _object_80_body(buf: bytearray) -> None:
    put(buf, 8, "3f", *_OBJ_POS)  # PosUE
    put(buf, 20, "3f", *_OBJ_EULER)  # angEuler
    put(buf, 32, "4f", *_OBJ_QUAT)  # angQuat
    put(buf, 48, "3f", *_OBJ_BOX_ORIGIN)  # boxOrigin
    put(buf, 60, "3f", *_OBJ_BOX_EXTENT)  # BoxExtent
    put(buf, 72, "d", 6.5)  # timestmp


def _copt_req_80() -> bytes:
    buf = bytearray(80)
    put(buf, 0, "2i", 1234567891, 7)  # checksum, CopterID
    _object_80_body(buf)
    return bytes(buf)


def _obj_req_112() -> bytes:
    buf = bytearray(112)
    put(buf, 0, "2i", 1234567891, 9)  # checksum, seqID
    _object_80_body(buf)
    put(buf, 80, "32s", b"Tree_01")  # ObjName
    return bytes(buf)


def test_copt_req_data_80_and_obj_req_data_112_shared_fields() -> None:
    # The fields whose offsets do not depend on where the quaternion sits.
    copt = rfly_link.decode(_copt_req_80(), port=20006)
    assert type(copt) is m.CoptReqDataQuat
    assert copt.copter_id == 7 and copt.timestamp_s == 6.5
    assert copt.position_ue_m == _OBJ_POS and copt.euler == _OBJ_EULER
    obj = rfly_link.decode(_obj_req_112(), port=20006)
    assert type(obj) is m.ObjReqDataQuat
    assert obj.seq_id == 9 and obj.timestamp_s == 6.5
    assert obj.position_ue_m == _OBJ_POS and obj.euler == _OBJ_EULER
    assert obj.object_name == b"Tree_01" and obj.to_dict()["object_name"] == "Tree_01"
    # 112 B / 1234567891 is also sendUE4PosNew and CopterSim's state: the port decides.
    with pytest.raises(rfly_link.errors.AmbiguousDatagram):
        rfly_link.decode(_obj_req_112())


def test_copt_req_data_80_quaternion_and_box() -> None:
    value = rfly_link.decode(_copt_req_80(), port=20006)
    assert value.quaternion_wxyz == _OBJ_QUAT
    assert value.box_origin_m == _OBJ_BOX_ORIGIN
    assert value.box_extent_m == _OBJ_BOX_EXTENT
    assert value.encode() == _copt_req_80()


def test_obj_req_data_112_quaternion_and_box() -> None:
    value = rfly_link.decode(_obj_req_112(), port=20006)
    assert value.quaternion_wxyz == _OBJ_QUAT
    assert value.box_origin_m == _OBJ_BOX_ORIGIN
    assert value.box_extent_m == _OBJ_BOX_EXTENT
    assert value.encode() == _obj_req_112()


def test_rflysim3d_send_structures() -> None:
    buf = bytearray(152)
    put(buf, 0, "6i", 1234567899, 3, -1, 0, 255, 0)
    put(buf, 24, "2f", 5.0, 20.0)
    put(buf, 32, "120s", "你好 label".encode())
    msg = m.label_message(3, "你好 label", font_size=20.0, rgb=(0, 255, 0), disp_time_s=5.0)
    assert msg.encode() == bytes(buf)

    buf = bytearray(304)
    put(buf, 0, "i", 1234567892)
    put(buf, 4, "2i", 2, 3)
    put(buf, 104, "2i", 1, 1)
    put(buf, 204, "2i", 3, 0)
    ids = (2, 3, *([0] * 23))
    msg = m.UE4Attach(1234567892, ids, (1, 1, *([0] * 23)), (3, *([0] * 24)))
    assert msg.encode() == bytes(buf)

    cmd = "RflyChangeMapbyName Grasslands"
    assert m.console_command(cmd).encode() == struct.pack("<i52s", 1234567890, cmd.encode())
    long_cmd = "RflyShowTextTime " + "x" * 60 + " 5"
    assert m.console_command(long_cmd).encode() == struct.pack(
        "<i252s", 1234567890, long_cmd.encode()
    )
    assert m.lan_command("RflyClearCapture").encode() == struct.pack(
        "<i92s", 1234567897, b"RflyClearCapture"
    )
    with pytest.raises(ValueError, match="at most 249"):
        m.console_command("x" * 250)

    pos = m.UE4PosSimple(m.UE4_FIT_GROUND, 1, 3, 1000.0, (1.0, 2.0, -3.0), (0.0, 0.0, 1.0))
    assert pos.encode() == struct.pack("<3i7f", 1234567891, 1, 3, 1000, 1, 2, -3, 0, 0, 1)
    assert pos.fit_ground
    simple = m.UE4PosSimpleTime(
        copter_id=1, vehicle_type=3, pwms=(1,) * 8, position_ned_m=(1, 2, 3), runned_time_s=2.0
    )
    assert simple.encode() == struct.pack(
        "<3i17f1d", 1234567890, 1, 3, *([1] * 8), 1, 2, 3, 0, 0, 0, 0, 0, 0, 2.0
    )


def test_ue4_ext_act_is_the_144_byte_doubles_the_sdk_sends() -> None:
    # Issue 13: UE4CtrlAPI.sendUE4ExtAct packs "2i1d16d" (struct Ue4ExtMsg: double ExtToUE4[16]);
    # its "struct.pack 2i1d16f" note (80 B) is not what RflySim3D receives.
    buf = bytearray(144)
    put(buf, 0, "2i", 1234567894, 4)  # checksum, CopterID
    put(buf, 8, "d", 1.5)  # runnedTime
    put(buf, 16, "16d", *(0.1 * i for i in range(16)))  # ExtToUE4[16]
    ext = m.UE4ExtAct(copter_id=4, runned_time_s=1.5, action_ext=tuple(0.1 * i for i in range(16)))
    assert ext.encode() == bytes(buf)
    assert rfly_link.decode(bytes(buf), port=20010) == ext
    assert ext.action_ext[3] == 0.1 * 3  # doubles: no float32 rounding
    old_80 = struct.pack("<2i1d16f", 1234567894, 4, 1.5, *([0.0] * 16))
    with pytest.raises(rfly_link.errors.WrongLength):
        rfly_link.decode(old_80, port=20010)


@pytest.mark.parametrize("checksum", [1234567890, 1234567891])
def test_ue4_pos_scale_52(checksum: int) -> None:
    # UE4 sendUE4PosScale / sendUE4PosScale2Ground: SOut2SimulatorSimple1 `3i10f`.
    buf = bytearray(52)
    put(buf, 0, "3i", checksum, 4, 5)  # checkSum, copterID, vehicleType
    put(buf, 12, "f", 1350.0)  # MotorRPMSMean
    put(buf, 16, "3f", 12.5, -7.25, -3.0)  # PosE
    put(buf, 28, "3f", 0.0625, -0.125, 2.25)  # AngEuler
    put(buf, 40, "3f", 1.5, 0.75, 2.0)  # Scale
    value = rfly_link.decode(bytes(buf), port=20010)
    assert type(value) is m.UE4PosScale
    assert value.checksum == checksum
    assert value.copter_id == 4 and value.vehicle_type == 5
    assert value.motor_rpm_mean == 1350.0
    assert value.position_ned_m == (12.5, -7.25, -3.0)
    assert value.euler_rad == (0.0625, -0.125, 2.25)
    assert value.scale == (1.5, 0.75, 2.0)
    msg = m.UE4PosScale(
        checksum, 4, 5, 1350.0, (12.5, -7.25, -3.0), (0.0625, -0.125, 2.25), (1.5, 0.75, 2.0)
    )
    assert msg.encode() == bytes(buf)


def test_fragment_headers_24_and_32() -> None:
    body = bytes(range(10))
    buf = bytearray(24 + 10)
    put(buf, 0, "4i", 1234567890, 34, 0, 1)
    put(buf, 16, "d", 2.5)
    buf[24:] = body
    (got,) = reassembly.fragment_payload(body, header_size=24, timestamp_s=2.5)
    assert got == bytes(buf)

    buf = bytearray(32 + 10)
    put(buf, 0, "6i", 1234567893, 42, 0, 1, 17, 0)
    put(buf, 24, "d", 2.5)
    buf[32:] = body
    (got,) = reassembly.fragment_payload(body, header_size=32, frame_id=17, timestamp_s=2.5)
    assert got == bytes(buf)
    (frame,) = rfly_link.Reassembler().feed(bytes(buf), ("h", 1), 0)
    assert frame.frame_id == 17 and bytes(frame.payload) == body and frame.timestamp_s == 2.5


def test_point_cloud_prefix36_int16_four_channels() -> None:
    buf = bytearray(36 + 2 * 8)
    put(buf, 0, "2i", 3, 1)
    put(buf, 8, "3f", 1.0, 2.0, -3.0)
    put(buf, 20, "3f", 0.0, 0.1, 1.5)
    put(buf, 32, "i", 2)
    put(buf, 36, "4h", 32766, -32766, 0, 7)
    put(buf, 44, "4h", 16384, 0, -16384, 255)
    cloud = rfly_link.decode_sensor(20, bytes(buf), scale_m=60.0)
    assert isinstance(cloud, sensors.PointCloud)
    assert cloud.layout is sensors.PointLayout.PREFIX36_INT16_XYZS
    assert cloud.copter_id == 3 and cloud.axis_type == 1
    assert cloud.position_m == (1.0, 2.0, -3.0)
    assert cloud.xyz_m.dtype == np.float32 and cloud.xyz_m.shape == (2, 3)
    np.testing.assert_allclose(cloud.xyz_m[0], [32766 * 60 / 32767, -32766 * 60 / 32767, 0.0])
    np.testing.assert_allclose(cloud.xyz_m[1], [16384 * 60 / 32767, 0, -16384 * 60 / 32767])
    assert cloud.stencil.tolist() == [7.0, 255.0]  # class values are not scaled


def test_an_int16_coordinate_at_its_limit_was_clipped_and_is_not_a_number() -> None:
    """A sender saturates an int16 coordinate past +-range (red team rt35: a world-frame
    point past N = 60 m came back at 60 m): its value is unknown. The others scale."""
    buf = bytearray(36 + 3 * 8)
    put(buf, 32, "i", 3)
    put(buf, 36, "4h", 32767, 1, 2, 0)
    put(buf, 44, "4h", 3, -32767, 4, 0)
    put(buf, 52, "4h", 5, 6, -32768, 9)
    cloud = rfly_link.decode_sensor(21, bytes(buf), scale_m=32767.0)  # 1 m a step
    got = cloud.xyz_m.tolist()
    assert math.isnan(got[0][0]) and got[0][1:] == [1.0, 2.0]
    assert got[1][0] == 3.0 and math.isnan(got[1][1]) and got[1][2] == 4.0
    assert got[2][:2] == [5.0, 6.0] and math.isnan(got[2][2])
    assert cloud.stencil.tolist() == [0.0, 0.0, 9.0]


def test_point_cloud_three_channels_and_old_prefix() -> None:
    buf = bytearray(36 + 3 * 6)
    put(buf, 32, "i", 3)
    put(buf, 36, "9h", 1, 2, 3, 4, 5, 6, 7, 8, 9)
    cloud = rfly_link.decode_sensor(21, bytes(buf), scale_m=32767.0)
    assert cloud.layout is sensors.PointLayout.PREFIX36_INT16_XYZ
    assert cloud.xyz_m.tolist() == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert not cloud.stencil.any()

    buf = bytearray(28 + 2 * 6)
    put(buf, 0, "3f", 5.0, 6.0, 7.0)
    put(buf, 24, "i", 2)
    put(buf, 28, "6h", 1, 1, 1, 2, 2, 2)
    cloud = rfly_link.decode_sensor(7, bytes(buf), scale_m=32767.0)
    assert cloud.layout is sensors.PointLayout.PREFIX28_INT16_XYZ
    assert cloud.copter_id is None and cloud.position_m == (5.0, 6.0, 7.0)

    buf = bytearray(36 + 16)
    put(buf, 32, "i", 1)
    put(buf, 36, "4f", 1.5, -2.5, 3.5, 4.0)
    cloud = rfly_link.decode_sensor(20, bytes(buf), scale_m=60.0)
    assert cloud.layout is sensors.PointLayout.PREFIX36_FLOAT32_XYZS
    assert cloud.xyz_m.tolist() == [[1.5, -2.5, 3.5]] and cloud.stencil.tolist() == [4.0]


def test_distance_and_optical_flow() -> None:
    buf = bytearray(56)
    put(buf, 0, "f", 12.5)
    put(buf, 4, "i", 2)
    put(buf, 8, "3f", 1, 2, 3)
    put(buf, 20, "3f", 0, 0.5, 0)
    put(buf, 32, "3f", 4, 5, 6)
    put(buf, 44, "3f", 7, 8, 9)
    dist = rfly_link.decode_sensor(5, bytes(buf))
    assert isinstance(dist, m.DistanceSensor)
    assert dist.distance_m == 12.5 and dist.impact_point_m == (4, 5, 6)
    assert dist.box_origin_m == (7, 8, 9)

    buf = bytearray(34)
    put(buf, 0, "Q", 123456789012)
    put(buf, 8, "B", 3)
    put(buf, 9, "2h", -12, 34)
    put(buf, 13, "2f", 0.5, -0.5)
    put(buf, 21, "B", 200)
    put(buf, 22, "f", 2.25)
    put(buf, 26, "2f", 0.125, -0.125)
    flow = rfly_link.decode_sensor(10, bytes(buf))
    assert isinstance(flow, m.OpticalFlow)
    assert (flow.time_usec, flow.sensor_id, flow.flow_x, flow.flow_y) == (123456789012, 3, -12, 34)
    assert (flow.quality, flow.ground_distance_m, flow.flow_rate_y) == (200, 2.25, -0.125)


def test_targets_30_and_31() -> None:
    buf = struct.pack("<i", 2) + struct.pack("<i5f", 4, 0.9, 1, 2, 3, 4)
    buf += struct.pack("<i5f", 5, 0.5, 10, 20, 30, 40)
    boxes = rfly_link.decode_sensor(30, buf)
    assert [t.copter_id for t in boxes.targets] == [4, 5]
    assert boxes.targets[1].max_y == 40
    buf = struct.pack("<i", 1) + struct.pack("<i3f", 9, 1.5, -2.5, 3.0)
    radar = rfly_link.decode_sensor(31, buf)
    assert radar.targets[0].relative_y_m == -2.5
    assert radar.to_dict()["targets"][0]["copter_id"] == 9


def test_vehicle_batches_100_and_20() -> None:
    buf = bytearray(3804)
    put(buf, 0, "i", 1234567891)  # fit to ground
    put(buf, 4, "2H", 1, 2)  # copterID[100]
    put(buf, 204, "2H", 3, 3)  # vehicleType[100]
    put(buf, 404, "6f", 1, 2, -3, 4, 5, -6)  # PosE[300]
    put(buf, 1604, "3f", 0, 0, 1.5)  # AngEuler[300]
    put(buf, 2804, "6H", 100, 100, 100, 50, 50, 50)  # Scale[300] x100
    put(buf, 3404, "2f", 1000, 1200)  # MotorRPMSMean[100]
    pos = (1.0, 2.0, -3.0, 4.0, 5.0, -6.0) + (0.0,) * 294
    msg = m.UE4PosScale100(
        m.UE4_FIT_GROUND,
        (1, 2) + (0,) * 98,
        (3, 3) + (0,) * 98,
        pos,
        (0.0, 0.0, 1.5) + (0.0,) * 297,
        (100, 100, 100, 50, 50, 50) + (0,) * 294,
        (1000.0, 1200.0) + (0.0,) * 98,
    )
    assert msg.encode() == bytes(buf)

    buf = bytearray(1324)
    put(buf, 0, "i", 1234567890)
    put(buf, 4, "H", 7)  # copterID[20]
    put(buf, 44, "H", 3)  # vehicleType[20]
    put(buf, 84, "3f", 1, 1, -1)  # PosE[60]
    put(buf, 564, "3H", 100, 100, 100)  # Scale[60]
    put(buf, 684, "8f", *([1500.0] * 8))  # PWMs[160]
    value = m.UE4PosScalePwm20.decode(bytes(buf))
    assert value.copter_id[0] == 7 and value.vehicle_type[0] == 3
    assert value.position_ned_m[:3] == (1.0, 1.0, -1.0)
    assert value.scale_x100[:3] == (100, 100, 100) and value.pwms[:8] == (1500.0,) * 8
    assert rfly_link.decode(bytes(buf)) == value


def test_vision_sensor_request_legacy_92() -> None:
    buf = bytearray(92)
    put(buf, 0, "8H", 12345, 4, 2, 1, 0, 640, 480, 30)
    put(buf, 16, "8H", 1, 127, 0, 0, 1, 10003, 0, 0)
    put(buf, 32, "f", 90.0)  # CameraFOV
    put(buf, 36, "3f", 0.1, 0.0, -0.2)  # SensorPosXYZ
    put(buf, 48, "3f", 0.0, -30.0, 0.0)  # SensorAngEular
    put(buf, 60, "8f", 1, 2, 3, 4, 5, 6, 7, 8)  # otherParams[0..7]
    value = rfly_link.decode(bytes(buf), port=20010)
    assert isinstance(value, m.VisionSensorReqLegacy)
    assert value.seq_id == 4 and value.send_protocol[5] == 10003
    assert value.sensor_ang_eular == (0.0, -30.0, 0.0) and value.other_params[7] == 8.0
    assert value.encode() == bytes(buf)


def test_vision_sensor_request_new_layout_144() -> None:
    # CFG 5 (docs/protocol-decisions.md, Config.json): 16 uint16, then 28 float32:
    # CameraFOV@32, SensorPosXYZ@36, EularOrQuat@48, SensorAngEular@52, SensorAngQuat@64,
    # otherParams[16]@80 (the v4.11 struct without the gimbal's bitmask).
    protocol = (1, 192, 168, 3, 14, 9999, 60000, 5)
    other = tuple(0.5 + i for i in range(16))
    buf = bytearray(144)
    put(buf, 0, "8H", 12345, 6, 1, 3, 2, 1280, 720, 30)
    put(buf, 16, "8H", *protocol)
    put(buf, 32, "f", 87.5)  # CameraFOV
    put(buf, 36, "3f", 0.3125, -0.15625, -0.5)  # SensorPosXYZ
    put(buf, 48, "f", 1.0)  # EularOrQuat: > 0.5 selects the quaternion
    put(buf, 52, "3f", 2.5, -35.0, 12.25)  # SensorAngEular
    put(buf, 64, "4f", 0.875, 0.0625, -0.1875, 0.4375)  # SensorAngQuat
    put(buf, 80, "16f", *other)  # otherParams
    value = rfly_link.decode(bytes(buf), port=20010)
    assert type(value) is m.VisionSensorReq
    assert (value.seq_id, value.type_id, value.target_copter) == (6, 1, 3)
    assert value.target_mount_type == 2
    assert (value.data_width, value.data_height, value.data_check_freq) == (1280, 720, 30)
    assert value.send_protocol == protocol
    assert value.camera_fov_deg == 87.5
    assert value.sensor_pos_xyz_m == (0.3125, -0.15625, -0.5)
    assert value.eular_or_quat == 1.0
    assert value.sensor_ang_eular == (2.5, -35.0, 12.25)
    assert value.sensor_ang_quat == (0.875, 0.0625, -0.1875, 0.4375)
    assert value.other_params == other
    expected = m.VisionSensorReq(
        seq_id=6,
        type_id=1,
        target_copter=3,
        target_mount_type=2,
        data_width=1280,
        data_height=720,
        data_check_freq=30,
        send_protocol=protocol,
        camera_fov_deg=87.5,
        sensor_pos_xyz_m=(0.3125, -0.15625, -0.5),
        eular_or_quat=1.0,
        sensor_ang_eular=(2.5, -35.0, 12.25),
        sensor_ang_quat=(0.875, 0.0625, -0.1875, 0.4375),
        other_params=other,
    )
    assert expected.encode() == bytes(buf)


def test_cesium_origin_formats_numpy_scalars_as_plain_numbers() -> None:
    text = commands.cesium_origin(np.float64(30.5), np.float32(114.25), np.int64(20))
    assert text == "RflyCesiumOriPos 30.5 114.25 20"  # not "np.float64(30.5) ..."
    assert commands.cesium_origin(30.123456789, 114.0, 0.5) == (
        "RflyCesiumOriPos 30.123456789 114 0.5"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The console commands of RflySim3D's UE4CtrlAPI (sendUE4Cmd), argument order as listed.
        (commands.show_text("hello"), "RflyShowText hello"),
        (commands.show_text("hello", 2.5), "RflyShowTextTime hello 2.5"),
        (commands.change_map_by_id(3), "RflyChangeMapbyID 3"),
        (commands.change_map_by_name("Grasslands"), "RflyChangeMapbyName Grasslands"),
        (commands.change_view_key("V", 1), "RflyChangeViewKeyCmd V 1"),
        (
            commands.camera_pos_ang(1, 2.5, -3, 0, 15, 90),
            "RflyCameraPosAng 1 2.5 -3 0 15 90",
        ),
        (
            commands.camera_pos_ang(0, 0, 1, 0, 0, 0, relative=True),
            "RflyCameraPosAngAdd 0 0 1 0 0 0",
        ),
        (commands.camera_fov(75.5), "RflyCameraFovDegrees 75.5"),
        (commands.change_3d_model(2, 5), "RflyChange3DModel 2 5"),
        (commands.change_vehicle_size(2, 1.5), "RflyChangeVehicleSize 2 1.5"),
        (
            commands.vehicle_pos_ang(4, 1, 2, -3, 0, 0, 45, fit_ground=True),
            "RflySetVehiclePosAng 4 1 1 2 -3 0 0 45",
        ),
        (
            commands.vehicle_pos_ang(4, 1, 0, 0, 0, 0, 0, relative=True),
            "RflyMoveVehiclePosAng 4 0 1 0 0 0 0 0",
        ),
        (
            commands.scan_terrain(-100, -100, 100, 100, 200, 0.5),
            "RflyScanTerrainH -100 -100 100 100 200 0.5",
        ),
        (commands.clear_capture(), "RflyClearCapture"),
        # UE4CtrlAPI.sendUE4SetStencilValueBy*: the regex flag as Python prints a bool.
        (
            commands.set_stencil_by_actor_name("Tree_01", 3),
            "RflySetStencilValueByActorName Tree_01 3 False",
        ),
        (
            commands.set_stencil_by_mesh_name("Mesh.*", 7, is_name_regex=True),
            "RflySetStencilValueByMeshComponentName Mesh.* 7 True",
        ),
        (commands.set_stencil_by_copter_id(2, 9), "RflySetStencilValueByCopterID 2 9"),
    ],
)
def test_console_commands_as_documented(text: str, expected: str) -> None:
    assert text == expected
    assert m.console_command(text).command == expected.encode()


@pytest.mark.parametrize(
    "bad",
    [
        lambda: commands.show_text("two words"),
        lambda: commands.change_map_by_name(""),
        lambda: commands.set_stencil_by_actor_name("a b", 1),
        lambda: commands.change_view_key(" ", 1),
    ],
)
def test_console_command_names_never_shift_the_arguments(bad: object) -> None:
    with pytest.raises(ValueError, match="without spaces"):
        bad()  # type: ignore[operator]


def test_gimbal_builders_set_the_documented_bit_and_fields() -> None:
    # VSP 4.2: each control's bit in bitmask and the fields or other_params it uses.
    base = m.VisionSensorReqNew.for_sensor(3)
    cases = [
        (base.with_fov(40.0), 1 << 1, {}, {"camera_fov_deg": 40.0}),
        (base.with_attitude_euler(1, 2, 3), 1 << 2, {}, {"sensor_ang_eular": (1, 2, 3)}),
        (
            base.with_attitude_quaternion(1, 0, 0, 0),
            (1 << 2) | (1 << 3),
            {},
            {"eular_or_quat": 1.0, "sensor_ang_quat": (1, 0, 0, 0)},
        ),
        (base.with_focal_length(35.0), 1 << 4, {0: 35.0}, {}),
        (base.with_recenter(), 1 << 5, {1: 1.0}, {}),
        (base.with_angular_rate(5.0, -5.0), 1 << 6, {2: 5.0, 3: -5.0}, {}),
        (base.with_optical_zoom(4.0), 1 << 7, {4: 4.0}, {}),
        (base.with_track_target(2), 1 << 8, {5: 2.0}, {}),
        (base.with_laser_range(True), 1 << 9, {6: 1.0}, {}),
        (base.with_image_source(m.GimbalImageSource.INFRARED_GREY), 1 << 10, {7: 2.0}, {}),
        (base.with_ai_select_all(), 1 << 11, {8: 1.0}, {}),
        (base.with_ai_select_pixel(320, 240), 1 << 11, {8: 2.0, 9: 320.0, 10: 240.0}, {}),
    ]
    for request, bit, params, fields in cases:
        decoded = m.VisionSensorReqNew.decode(request.encode())
        assert decoded.bitmask == bit and (decoded.seq_id, decoded.type_id) == (3, 9)
        assert decoded.other_params == tuple(params.get(i, 0.0) for i in range(16))
        for name, value in fields.items():
            assert getattr(decoded, name) == value
    both = base.with_fov(40.0).with_laser_range(True)
    assert both.bitmask == (1 << 1) | (1 << 9) and both.other_params[6] == 1.0
