"""Golden bytes for the structures only the public SDK describes (issue 13, "Missing").

Each buffer is built by hand at the offsets the SDK's struct formats give (explicit
little-endian, native padding spelled out), never by our encoder; both directions are checked:
our encoder produces exactly these bytes and the decoder, given the port, reads them back.
"""

from __future__ import annotations

import struct

import pytest

import rfly_link
from rfly_link import messages as m


def put(buf: bytearray, offset: int, fmt: str, *values: object) -> None:
    struct.pack_into("<" + fmt, buf, offset, *values)


def check(buf: bytearray, expected: m.WireMessage, port: int) -> m.WireMessage:
    assert expected.encode() == bytes(buf)
    value = rfly_link.decode(bytes(buf), port=port)
    assert type(value) is type(expected) and value == expected
    return value


# --- CopterSim state port, 30100 + 2N - 1 ----------------------------------------------------


def test_crash_report_on_the_state_port() -> None:
    # PX4MavCtrler.getTrueDataMsg's 12 B branch: RflySim3D also sends crashes to 30100 + 2N - 1.
    buf = bytearray(12)
    put(buf, 0, "3i", 1234567890, 3, 7)
    value = check(buf, m.CopterSimCrash(copter_id=3, target_id=7), 30105)
    assert value.target_id == 7


def test_ue4_cmd_gps_32() -> None:
    buf = bytearray(32)
    put(buf, 0, "2i", 1234567890, 2)
    put(buf, 8, "3d", 40.1540302, 116.2593683, 50.5)
    check(buf, m.UE4CmdGPS(copter_id=2, gps_origin=(40.1540302, 116.2593683, 50.5)), 30103)


def test_net_data_short_200_with_native_padding() -> None:
    # netDataShort {int tg; int len; char payload[192]}; payload = SOut2SimulatorOld, which the
    # SDK unpacks natively as "2i1d27f3d": 4 bytes of padding at 132 align PosGPS to 136.
    buf = bytearray(200)
    put(buf, 0, "2i", 4, 152)  # tg (crash target), len
    put(buf, 8, "2i", 2, 3)  # copterID, vehicleType
    put(buf, 16, "d", 12.5)  # runnedTime
    put(buf, 24, "3f", 1.5, -2.5, 0.25)  # VelE
    put(buf, 36, "3f", 10.0, 20.0, -30.0)  # PosE
    put(buf, 48, "3f", 0.125, -0.375, 1.75)  # AngEuler
    put(buf, 60, "4f", 0.875, 0.0625, -0.1875, 0.4375)  # AngQuatern
    put(buf, 76, "8f", *(1000.0 + 25 * i for i in range(8)))  # MotorRPMS
    put(buf, 108, "3f", 0.75, -1.25, -9.75)  # AccB
    put(buf, 120, "3f", 0.0625, -0.3125, 2.5)  # RateB
    put(buf, 136, "3d", 40.1, 116.2, 50.0)  # PosGPS
    expected = m.NetDataShort(
        crash_target=4,
        copter_id=2,
        vehicle_type=3,
        runned_time_s=12.5,
        velocity_ned_m_s=(1.5, -2.5, 0.25),
        position_ned_m=(10.0, 20.0, -30.0),
        euler_rad=(0.125, -0.375, 1.75),
        quaternion_wxyz=(0.875, 0.0625, -0.1875, 0.4375),
        motor_rpm=tuple(1000.0 + 25 * i for i in range(8)),
        acceleration_frd_m_s2=(0.75, -1.25, -9.75),
        angular_rate_frd_rad_s=(0.0625, -0.3125, 2.5),
        position_gps=(40.1, 116.2, 50.0),
    )
    value = check(buf, expected, 30103)
    assert isinstance(value, m.NetDataShort) and value.crashed
    # The SDK's native unpack of the payload sees the same values (x86-64 alignment).
    native = struct.unpack("@2i1d27f3d", bytes(buf[8:160]))
    assert native[2] == value.runned_time_s and native[6:9] == value.position_ned_m
    assert native[30:33] == value.position_gps


def test_net_data_short_with_another_payload_is_inconsistent_not_a_state() -> None:
    buf = bytearray(m.NetDataShort().encode())
    put(buf, 4, "i", 112)
    with pytest.raises(rfly_link.errors.InconsistentPayload, match=r"payload_len: expected 152"):
        rfly_link.decode(bytes(buf), port=30101)
    only_a_port = "only a port identifies NetDataShort"
    with pytest.raises(rfly_link.errors.AmbiguousDatagram, match=only_a_port):
        rfly_link.decode(m.NetDataShort().encode())


def test_out_copter_264_from_the_model() -> None:
    # ModelLoad.SendOutCopter: outCopterStruct "ii32d" to 30100 + 2N - 1.
    buf = bytearray(264)
    put(buf, 0, "2i", 1234567890, 5)
    put(buf, 8, "32d", *(0.5 * i - 3 for i in range(32)))
    check(buf, m.OutCopterData(copter_id=5, values=tuple(0.5 * i - 3 for i in range(32))), 30109)


# --- CopterSim control port, 30100 + 2(N - 1): DLL model inputs -------------------------------


def test_dll_in_doub_ctrls_232_from_sil_ints_and_values() -> None:
    # sendSILIntDouble: 8 ints and 20 values, all packed as 28 doubles ("2i28d").
    ints, values = (1 | 2 | 4 | 512, 1 | 8, 0, 0, 0, 0, 0, 7), tuple(0.25 * i for i in range(20))
    buf = bytearray(232)
    put(buf, 0, "2i", 1234567897, 3)
    put(buf, 8, "28d", *ints, *values)
    check(buf, m.DllInDoubCtrls.from_sil(3, ints, values), 30104)
    with pytest.raises(ValueError, match="8 ints and 20 values"):
        m.DllInDoubCtrls.from_sil(3, ints[:7], values)


@pytest.mark.parametrize(
    ("index", "update", "checksum"), [(1, True, 1234567801), (5, False, 1234567905)]
)
def test_in_ctrl_ext_doub_232(index: int, update: bool, checksum: int) -> None:
    buf = bytearray(232)
    put(buf, 0, "2i", checksum, 2)
    put(buf, 8, "28d", *(float(i) for i in range(28)))
    value = check(buf, m.DllInCtrlExtDoub.for_port(2, index, range(28), update=update), 30102)
    assert isinstance(value, m.DllInCtrlExtDoub)
    assert (value.index, value.update) == (index, update)
    with pytest.raises(ValueError, match=r"index: expected 1\.\.5"):
        m.DllInCtrlExtDoub.for_port(2, 6, range(28))


def test_in_ctrl_ext_120_is_not_sil() -> None:
    # sendInCtrlExt: SILIntFloat's "10i20f" with checksum 1234567800 + index.
    buf = bytearray(120)
    put(buf, 0, "2i", 1234567803, 1)
    put(buf, 8, "8i", *range(8))
    put(buf, 40, "20f", *(0.5 * i for i in range(20)))
    expected = m.DllInCtrlExt(1234567803, 1, tuple(range(8)), tuple(0.5 * i for i in range(20)))
    value = check(buf, expected, 30100)
    assert isinstance(value, m.DllInCtrlExt) and value.index == 3
    with pytest.raises(rfly_link.errors.WrongPort):
        rfly_link.decode(bytes(buf), port=20006)  # RflySim3D sends SILIntFloat only


@pytest.mark.parametrize(
    ("cls", "checksum"), [(m.PX4ModelInParams, 1234567891), (m.PX4InitInParams, 1234567892)]
)
def test_model_and_init_in_params_264(
    cls: type[m.PX4ModelInParams] | type[m.PX4InitInParams], checksum: int
) -> None:
    buf = bytearray(264)
    put(buf, 0, "iI", checksum, (1 << 0) | (1 << 31))  # Bitmask: params 0 and 31
    put(buf, 8, "d", 1.25)
    put(buf, 8 + 31 * 8, "d", -2.5)
    check(buf, cls.from_params({0: 1.25, 31: -2.5}), 30100)
    with pytest.raises(ValueError, match=r"parameter index expected 0\.\.31, got 32"):
        cls.from_params({32: 1.0})


def test_dyn_modi_params_528() -> None:
    buf = bytearray(528)
    put(buf, 0, "2i", 1234567893, 4)
    put(buf, 8, "Q", (1 << 63) | (1 << 2))  # uint64 Bitmask
    put(buf, 8 + 8 + 2 * 8, "d", 0.5)
    put(buf, 8 + 8 + 63 * 8, "d", 9.0)
    check(buf, m.PX4DynModiParams.from_params(4, {2: 0.5, 63: 9.0}), 30106)


def test_ue_to_coptersim_264() -> None:
    buf = bytearray(264)
    put(buf, 0, "2i", 1234567899, 1)
    put(buf, 8, "32d", *([0.1] * 32))
    check(buf, m.UEToCopterData(copter_id=1, values=(0.1,) * 32), 30100)


def test_ray_trace_drone_60() -> None:
    # sendFloatsColl: Ue4RayTraceDrone "ii13f": size, velE[3], ray[6], posE[3].
    buf = bytearray(60)
    put(buf, 0, "2i", 1234567890, 2)
    put(buf, 8, "f", 0.5)
    put(buf, 12, "3f", 1.0, -1.0, 0.25)
    put(buf, 24, "6f", 1, 2, 3, 4, 5, 6)
    put(buf, 48, "3f", 10.0, 20.0, -5.0)
    expected = m.RayTraceDrone(
        copter_id=2,
        size_m=0.5,
        velocity_ned_m_s=(1.0, -1.0, 0.25),
        ray_m=(1, 2, 3, 4, 5, 6),
        position_ned_m=(10.0, 20.0, -5.0),
    )
    check(buf, expected, 30102)


@pytest.mark.parametrize(
    ("cls", "checksum"), [(m.Collision20d, 1234567880), (m.TerrainIn15d, 1234567881)]
)
def test_collision_and_terrain_88(
    cls: type[m.Collision20d] | type[m.TerrainIn15d], checksum: int
) -> None:
    buf = bytearray(88)
    put(buf, 0, "2i", checksum, 1)
    put(buf, 8, "15f", *(float(i) for i in range(15)))
    check(buf, cls(copter_id=1, values=(*map(float, range(15)), 0, 0, 0, 0, 0)), 30100)


def test_custom_data_136_any_checksum_on_its_port() -> None:
    buf = bytearray(136)
    put(buf, 0, "2i", 777, 3)  # the sender chose checksum 777
    put(buf, 8, "16d", *(float(i) for i in range(16)))
    check(buf, m.CustomData(777, 3, tuple(map(float, range(16)))), 50000)
    assert m.CustomData().checksum == 123456  # the SDK's default


def test_px4_uorb_rfly_ctrl_80() -> None:
    buf = bytearray(80)
    put(buf, 0, "2i2I", 1234567896, 1, 1, 0xFFFFFFFF)
    put(buf, 16, "16f", *(float(i) for i in range(16)))
    expected = m.PX4UorbRflyCtrl(
        copter_id=1, modes=1, flags=0xFFFFFFFF, data=tuple(map(float, range(16)))
    )
    check(buf, expected, 30100)


# --- discovery, start and time ---------------------------------------------------------------


def test_rfly_time_stmp_32_on_20005() -> None:
    buf = bytearray(32)
    put(buf, 0, "2i", 123456789, 1)
    put(buf, 8, "3q", 1_700_000_000_000, 1_700_000_012_345, 42)
    value = check(
        buf,
        m.RflyTimeStmp(
            copter_id=1,
            sys_start_time_ms=1_700_000_000_000,
            sys_current_time_ms=1_700_000_012_345,
            heart_count=42,
        ),
        20005,
    )
    assert isinstance(value, m.RflyTimeStmp) and value.running_ms == 12_345


def test_re_coptersim_msg_48() -> None:
    buf = bytearray(48)
    put(buf, 0, "2i", 1234567, 2)
    put(buf, 8, "4b", 1, 2, -1, 3)  # isReqIP, isXyYaw, isZRP, UDP_mode
    put(buf, 12, "4B", 0, 0, 0, 255)  # otherParams
    put(buf, 16, "3f", -5.0, 1.5, -2.5)  # zRollPitch
    put(buf, 28, "f", 90.0)  # yaw
    put(buf, 32, "2d", 123.25, -456.5)  # xy
    expected = m.ReCopterSimMsg(
        copter_id=2,
        is_req_ip=1,
        is_xy_yaw=2,
        is_zrp=-1,
        udp_mode=3,
        other_params=(0, 0, 0, 255),
        z_roll_pitch=(-5.0, 1.5, -2.5),
        yaw_deg=90.0,
        xy_m=(123.25, -456.5),
    )
    check(buf, expected, 20002)
    check(buf, expected, 30102)


def test_cptsim_cmd_64() -> None:
    buf = bytearray(64)
    put(buf, 0, "4i", 1234567895, -1, 2, -1)
    put(buf, 16, "48s", b"Grasslands")
    check(buf, m.CptSimCmd.switch(-1, m.CptSimTarget.MAP, "Grasslands"), 20002)
    by_index = bytearray(64)
    put(by_index, 0, "4i", 1234567895, 3, 1, 4)
    check(by_index, m.CptSimCmd.switch(3, m.CptSimTarget.DLL_MODEL, 4), 30104)


def test_heartbeat_request_and_start_signal() -> None:
    check(bytearray(struct.pack("<2i", 123450, 91)), m.HeartbeatRequest(req_index=91), 30100)
    start = bytearray(struct.pack("<3i", 1234567890, 1, -1))
    check(start, m.StartSignal(), 20007)


# --- CopterSim's PX4 side ---------------------------------------------------------------------


def test_offboard_short_24_and_reboot_8() -> None:
    buf = bytearray(24)
    put(buf, 0, "2i", 1234567890, 2)
    put(buf, 8, "4f", 1.0, 2.0, -3.0, 0.5)
    check(
        buf,
        m.OffboardShortData(ctrl_mode=m.OffboardMode.POSITION_NED, controls=(1, 2, -3, 0.5)),
        20100,
    )
    check(bytearray(struct.pack("<2i", 987654321, -1)), m.RebootPix(), 20102)


@pytest.mark.parametrize("checksum", [1234567890, 1234567891, 1234567892])
def test_hil_state_short_52(checksum: int) -> None:
    # ModelLoad.SendHILData / getMavMsg's UDP_Simple branch: outHILStateShort "4i9f".
    buf = bytearray(52)
    put(buf, 0, "i", checksum)
    put(buf, 4, "3i", 401540302, 5 if checksum == 1234567892 else 1162593683, 50000)
    put(buf, 16, "3f", 0.125, -0.25, 1.5)  # AngEular
    put(buf, 28, "3f", 1.0, 2.0, -3.0)  # localPos
    put(buf, 40, "3f", 0.5, 0.0, -0.5)  # localVel
    home = (401540302, 5 if checksum == 1234567892 else 1162593683, 50000)
    expected = m.HILStateShort(checksum, home, (0.125, -0.25, 1.5), (1, 2, -3), (0.5, 0, -0.5))
    value = check(buf, expected, 20101)
    assert isinstance(value, m.HILStateShort)
    assert value.ekf_3d_fixed is (checksum == 1234567891)
    assert value.crash_target == (5 if checksum == 1234567892 else None)
    if checksum != 1234567892:  # a crash puts the vehicle hit where the longitude was
        assert value.gps_home == pytest.approx((40.1540302, 116.2593683, 50.0))


def test_hil_state_data_120_and_hil_cmd_data_120() -> None:
    buf = bytearray(120)
    put(buf, 0, "2i", -1, 112)  # tg, len
    put(buf, 8, "2I", 123456, 2)  # time_boot_ms, copterID
    put(buf, 16, "3i", 401540302, 1162593683, 50000)  # GpsPos
    put(buf, 28, "3i", 10, -20, 5)  # GpsVel
    put(buf, 40, "3i", 401540000, 1162593000, 49000)  # gpsHome
    put(buf, 52, "5i", 1000, 90000, 12, 3, 0)  # relative_alt, hdg, sats, fix_type, reserve
    put(buf, 72, "3f", 0.0, 0.0, 1.5)  # AngEular
    put(buf, 84, "3f", 1.0, 2.0, -1.0)  # localPos
    put(buf, 96, "3f", 0.5, 0.25, 0.0)  # localVel
    put(buf, 108, "3f", 0.5, 0.75, 1.0)  # accuracies, reserve (EKF fixed)
    expected = m.HILStateData(
        time_boot_ms=123456,
        copter_id=2,
        gps_pos_int=(401540302, 1162593683, 50000),
        gps_vel_cm_s=(10, -20, 5),
        gps_home_int=(401540000, 1162593000, 49000),
        relative_alt_mm=1000,
        heading_mdeg=90000,
        satellites_visible=12,
        fix_type=3,
        euler_rad=(0.0, 0.0, 1.5),
        position_ned_m=(1.0, 2.0, -1.0),
        velocity_ned_m_s=(0.5, 0.25, 0.0),
        pos_horiz_accuracy_m=0.5,
        pos_vert_accuracy_m=0.75,
        reserve_float=1.0,
    )
    check(buf, expected, 20103)

    cmd = bytearray(120)
    put(cmd, 0, "2i", 3, 80)
    put(cmd, 8, "4I", 5000, 2, 0b110111000111, 1)  # time_boot_ms, copterID, modes, flags
    put(cmd, 24, "16f", 1.0, 2.0, -3.0, *([0.0] * 6), 0.5, *([0.0] * 6))
    ctrls = (1.0, 2.0, -3.0, *([0.0] * 6), 0.5, *([0.0] * 6))
    check(cmd, m.HILCmdData(3, 80, 5000, 2, 0b110111000111, 1, ctrls), 20102)
    # Both 120 B structures carry no checksum: without their port they are never guessed.
    with pytest.raises(rfly_link.errors.AmbiguousDatagram):
        rfly_link.decode(bytes(cmd))
    with pytest.raises(rfly_link.errors.InconsistentPayload, match="payload_len: expected 112"):
        rfly_link.decode(bytes(cmd), port=20101)


def test_px4_ext_msg_48_on_40100_series() -> None:
    buf = bytearray(48)
    put(buf, 0, "2i", 1234567898, 1)
    put(buf, 8, "d", 3.5)
    put(buf, 16, "8f", *(0.125 * i for i in range(8)))
    expected = m.PX4ExtMsg(
        copter_id=1, runned_time_s=3.5, controls=tuple(0.125 * i for i in range(8))
    )
    check(buf, expected, 40101)
