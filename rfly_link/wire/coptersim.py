"""CopterSim tables: vehicle state, SIL control, IMU/odometry replies, discovery and time.

Sources: VSP 3, BRIDGE 2.2 and DEC for the state, control and replies; the public SDK
(``SDK``: ``PX4MavCtrlV4.py``, ``ReqCopterSim.py``, ``VisionCaptureApi.py``) for the rest, which
no spec describes. Ports are in :mod:`rfly_link.ports`.
"""

from __future__ import annotations

from rfly_link.wire.layout import Layout, _f

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
# --- More on 30100 + 2N - 1 (SDK PX4MavCtrler.getTrueDataMsg) ---------------------------------

UE4_CMD_GPS = Layout(
    "Ue4CMDGPS",
    "SDK getTrueDataMsg, 32 B <ii3d: the map's GPS origin",
    [
        _f("checksum", "i", doc="1234567890"),
        _f("copter_id", "i"),
        _f("gps_origin", "d", 3, doc="lat deg, lon deg, alt m"),
    ],
)

NET_DATA_SHORT = Layout(
    "NetDataShort",
    "SDK getTrueDataMsg, 200 B netDataShort: <ii then SOut2SimulatorOld (native 2i1d27f3d, "
    "4 B padding before the doubles) in a 192 B payload; no checksum",
    [
        _f("crash_target", "i", doc="tg: the ID a crash hit, < 0 none"),
        _f("payload_len", "i", doc="152 for SOut2SimulatorOld"),
        _f("copter_id", "i"),
        _f("vehicle_type", "i"),
        _f("runned_time_s", "d"),
        _f("velocity_ned_m_s", "f", 3),
        _f("position_ned_m", "f", 3),
        _f("euler_rad", "f", 3),
        _f("quaternion_wxyz", "f", 4),
        _f("motor_rpm", "f", 8),
        _f("acceleration_frd_m_s2", "f", 3),
        _f("angular_rate_frd_rad_s", "f", 3),
        _f("padding", "s", 4, doc="native alignment of the doubles"),
        _f("position_gps", "d", 3, doc="lat deg, lon deg, alt m"),
        _f("unused", "s", 40, doc="rest of the 192 B payload"),
    ],
)

# --- Discovery, start and time (SDK ReqCopterSim, PX4MavCtrlV4, VisionCaptureApi) -------------

RFLY_TIME_STMP = Layout(
    "RflyTimeStmp",
    "SDK ReqCopterSim.RflyTimeStmp, 32 B <2i3q: CopterSim's heartbeat to port 20005",
    [
        _f("checksum", "i", doc="123456789"),
        _f("copter_id", "i"),
        _f("sys_start_time_ms", "q", doc="wall clock (Unix ms) when the simulation started"),
        _f("sys_current_time_ms", "q", doc="wall clock (Unix ms) when this was sent"),
        _f("heart_count", "q", doc="heartbeat counter"),
    ],
)

RE_COPTERSIM_MSG = Layout(
    "reCopterSimMsg",
    "SDK ReqCopterSim.sendReCopterSim, 48 B <2i4b4B4f2d",
    [
        _f("checksum", "i", doc="1234567"),
        _f("copter_id", "i"),
        _f("is_req_ip", "b", doc="> 0: send the flight data to the requesting PC"),
        _f("is_xy_yaw", "b", doc="> 0: redeploy at xy_m / yaw_deg (2 GPS origin, 3 GPS pos)"),
        _f("is_zrp", "b", doc="> 0: use z_roll_pitch"),
        _f("udp_mode", "b", doc=">= 0: switch CopterSim's UDP mode"),
        _f("other_params", "B", 4, doc="reserved"),
        _f("z_roll_pitch", "f", 3, doc="z m (down), roll deg, pitch deg"),
        _f("yaw_deg", "f"),
        _f("xy_m", "d", 2, doc="north, east"),
    ],
)

CPTSIM_CMD = Layout(
    "CptSimCMD",
    "SDK ReqCopterSim.sendReDllMap, 64 B <4i48s",
    [
        _f("checksum", "i", doc="1234567895"),
        _f("copter_id", "i", doc="0 none, -1 every CopterSim"),
        _f("flag", "i", doc="1 change the DLL model, 2 change the map"),
        _f("index", "i", doc=">= 0 selects by index, else by name"),
        _f("name", "s", 48),
    ],
)

UE4_REQ = Layout(
    "Ue4Req",
    "SDK ReqCopterSim.getSimIpID, 8 B <2i: ask CopterSim to send its heartbeat here",
    [_f("checksum", "i", doc="123450"), _f("req_index", "i", doc="90 broadcast, 91 unicast")],
)

START_SIGNAL = Layout(
    "startSignal",
    "SDK PX4MavCtrler.sendStartMsg, 12 B <3i to 224.0.0.10:20007",
    [
        _f("checksum", "i", doc="1234567890"),
        _f("is_start", "i"),
        _f("copter_id", "i", doc="-1: every vehicle"),
    ],
)
