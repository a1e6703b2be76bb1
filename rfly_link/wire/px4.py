"""Tables for CopterSim's PX4 side: the 20100 and 40100 series ports in UDP (non-MAVLink) modes.

No spec describes these; the formats come from the public SDK (``PX4MavCtrlV4.py`` and
``DllSimCtrlAPI.ModelLoad``). MAVLink travels on the same 20100 ports and is not decoded here.
"""

from __future__ import annotations

from rfly_link.wire.layout import Layout, _f

PX4_EXT_MSG = Layout(
    "PX4ExtMsg",
    "SDK PX4MavCtrler.getPX4DataMsg, 48 B <iid8f on 40100 + 2N - 1",
    [
        _f("checksum", "i", doc="1234567898"),
        _f("copter_id", "i"),
        _f("runned_time_s", "d"),
        _f("controls", "f", 8, doc="PX4's actuator outputs"),
    ],
)

UORB_RFLY_CTRL = Layout(
    "PX4UorbRflyCtrl",
    "SDK PX4MavCtrler.sendPX4UorbRflyCtrl, 80 B <2i2I16f to 30100 + 2(N - 1)",
    [
        _f("checksum", "i", doc="1234567896"),
        _f("copter_id", "i"),
        _f("modes", "I"),
        _f("flags", "I"),
        _f("data", "f", 16),
    ],
)

OFFBOARD_SHORT = Layout(
    "inOffboardShortData",
    "SDK PX4MavCtrler.sendUDPSimpData, 24 B <2i4f to 20100 + 2(N - 1) (UDP_Simple mode)",
    [
        _f("checksum", "i", doc="1234567890"),
        _f("ctrl_mode", "i", doc="0 vel NED, 1 vel FRD, 2 pos NED, 3 pos FRD, 6-8 acc"),
        _f("controls", "f", 4, doc="x, y, z, then yaw or yaw rate"),
    ],
)

REBOOT_PIX = Layout(
    "RebootPix",
    "SDK PX4MavCtrler.sendRebootPix, 8 B <2i broadcast to 20100 + 2(N - 1)",
    [_f("checksum", "i", doc="987654321"), _f("delay", "i", doc="-1: at once")],
)

HIL_STATE_SHORT = Layout(
    "outHILStateShort",
    "SDK PX4MavCtrler.getMavMsg / ModelLoad.SendHILData, 52 B <4i9f on 20100 + 2N - 1",
    [
        _f("checksum", "i", doc="1234567890 state, 1234567891 EKF fixed, 1234567892 crash"),
        _f("gps_home_int", "i", 3, doc="lat*1e7, lon*1e7, alt*1e3 (crash: [1] is the ID hit)"),
        _f("euler_rad", "f", 3),
        _f("position_ned_m", "f", 3, doc="local, from home"),
        _f("velocity_ned_m_s", "f", 3),
    ],
)

HIL_STATE_DATA = Layout(
    "netDataShortShort/outHILStateData",
    "SDK PX4MavCtrler.getMavMsg (UDP_Full), 120 B <ii then 2I14i12f; no checksum",
    [
        _f("crash_target", "i", doc="tg: the ID a crash hit, < 0 none"),
        _f("payload_len", "i", doc="112"),
        _f("time_boot_ms", "I"),
        _f("copter_id", "I"),
        _f("gps_pos_int", "i", 3, doc="lat*1e7, lon*1e7, alt*1e3"),
        _f("gps_vel_cm_s", "i", 3, doc="NED"),
        _f("gps_home_int", "i", 3, doc="lat*1e7, lon*1e7, alt*1e3"),
        _f("relative_alt_mm", "i"),
        _f("heading_mdeg", "i", doc="0..360000"),
        _f("satellites_visible", "i"),
        _f("fix_type", "i", doc="3: 3D fix"),
        _f("reserve_int", "i"),
        _f("euler_rad", "f", 3),
        _f("position_ned_m", "f", 3),
        _f("velocity_ned_m_s", "f", 3),
        _f("pos_horiz_accuracy_m", "f"),
        _f("pos_vert_accuracy_m", "f"),
        _f("reserve_float", "f"),
    ],
)

HIL_CMD_DATA = Layout(
    "netDataShortShort/inHILCMDData",
    "SDK PX4MavCtrler.sendMavOffboardAPI (UDP_Full), 120 B <ii then 4I16f, zero-padded; "
    "no checksum",
    [
        _f("target", "i", doc="tg: 3 in the SDK"),
        _f("payload_len", "i", doc="80"),
        _f("time_boot_ms", "I"),
        _f("copter_id", "I"),
        _f("modes", "I", doc="MAVLink type_mask"),
        _f("flags", "I", doc="MAVLink coordinate_frame"),
        _f("controls", "f", 16, doc="pos[3], vel[3], acc[3], yaw, yaw rate, 0..."),
        _f("unused", "s", 32, doc="rest of the 112 B payload"),
    ],
)
