"""CopterSim's PX4 side in its UDP modes: 20100 + 2(N - 1) in, 20100 + 2N - 1 out, 40100 + 2N - 1.

No spec describes these; formats and values come from the public SDK (``PX4MavCtrlV4.py`` and
``DllSimCtrlAPI.ModelLoad``, which stands in for CopterSim). MAVLink shares the 20100 ports
and is not decoded here: a MAVLink datagram of a length listed below fails its checksum or
``payload_len`` check and is counted, never mistaken for one of these.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from types import MappingProxyType
from typing import ClassVar

from rfly_link.messages.base import WireMessage, izeros, message_dataclass, wire_message, zeros
from rfly_link.wire import checksums as cs
from rfly_link.wire import px4 as w


@wire_message(w.PX4_EXT_MSG, cs.PX4_EXT)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class PX4ExtMsg(WireMessage):
    """PX4's eight actuator outputs with the simulation time (48 B on ``40100 + 2N - 1``)."""

    checksum: int = cs.PX4_EXT
    copter_id: int = 0
    runned_time_s: float = 0.0
    controls: tuple[float, ...] = zeros(8)


@wire_message(w.UORB_RFLY_CTRL, cs.UORB_RFLY_CTRL)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class PX4UorbRflyCtrl(WireMessage):
    """``sendPX4UorbRflyCtrl`` (80 B to ``30100 + 2(N - 1)``): the rfly_ctrl uORB topic."""

    checksum: int = cs.UORB_RFLY_CTRL
    copter_id: int = 0
    modes: int = 0
    flags: int = 0
    data: tuple[float, ...] = zeros(16)


class OffboardMode(IntEnum):
    """``inOffboardShortData.ctrl_mode`` (the SDK's ``ctrlMode``)."""

    VELOCITY_NED = 0
    VELOCITY_FRD = 1
    POSITION_NED = 2
    POSITION_FRD = 3
    ACCELERATION = 6
    ACCELERATION_YAW_RATE = 7
    ACCELERATION_YAW = 8


@wire_message(w.OFFBOARD_SHORT, cs.OFFBOARD_SHORT)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class OffboardShortData(WireMessage):
    """``sendUDPSimpData`` (24 B to ``20100 + 2(N - 1)``): UDP_Simple mode offboard set point.

    ``controls`` is x, y, z then yaw or yaw rate, as ``ctrl_mode`` says.
    """

    checksum: int = cs.OFFBOARD_SHORT
    ctrl_mode: int = 0
    controls: tuple[float, ...] = zeros(4)


@wire_message(w.REBOOT_PIX, cs.REBOOT)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class RebootPix(WireMessage):
    """``sendRebootPix`` (8 B, broadcast to ``20100 + 2(N - 1)``): restart the simulation."""

    checksum: int = cs.REBOOT
    delay: int = -1


@wire_message(w.HIL_STATE_SHORT, cs.HIL_STATE_SHORT, cs.HIL_EKF_3D_FIXED, cs.HIL_CRASH)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class HILStateShort(WireMessage):
    """PX4's estimate in UDP_Simple mode (52 B on ``20100 + 2N - 1``), also ``SendHILData``.

    The checksum says what it carries: 1234567890 the state, 1234567891 that the EKF has a
    3D fix, 1234567892 a crash (the ID hit in ``gps_home_int[1]``). Same length and marker as
    ``sendUE4PosScale``, so only the port identifies it.
    """

    checksum: int = cs.HIL_STATE_SHORT
    gps_home_int: tuple[int, ...] = izeros(3)
    euler_rad: tuple[float, ...] = zeros(3)
    position_ned_m: tuple[float, ...] = zeros(3)
    velocity_ned_m_s: tuple[float, ...] = zeros(3)

    @property
    def gps_home(self) -> tuple[float, float, float]:
        """(lat deg, lon deg, alt m) from the wire's 1e7 / 1e7 / 1e3 integers."""
        lat, lon, alt = self.gps_home_int
        return lat / 1e7, lon / 1e7, alt / 1e3

    @property
    def ekf_3d_fixed(self) -> bool:
        return self.checksum == cs.HIL_EKF_3D_FIXED

    @property
    def crash_target(self) -> int | None:
        """The vehicle ID a crash hit, or None when this is not a crash report."""
        if self.checksum != cs.HIL_CRASH or self.gps_home_int[1] < 0:
            return None
        return self.gps_home_int[1]


HIL_STATE_PAYLOAD = 112
HIL_CMD_PAYLOAD = 80
HIL_CMD_TARGET = 3  # the SDK's TargetType for offboard commands


@wire_message(w.HIL_STATE_DATA)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class HILStateData(WireMessage):
    """PX4's estimate in UDP_Full mode (120 B on ``20100 + 2N - 1``), identified by its port.

    No checksum: ``payload_len`` must be 112. ``crash_target`` >= 0 names the vehicle hit;
    ``reserve_float`` > 0.5 means the EKF has a 3D fix (the SDK reads it so).
    """

    FIXED: ClassVar[Mapping[str, int]] = MappingProxyType({"payload_len": HIL_STATE_PAYLOAD})

    crash_target: int = -1
    payload_len: int = HIL_STATE_PAYLOAD
    time_boot_ms: int = 0
    copter_id: int = 0
    gps_pos_int: tuple[int, ...] = izeros(3)
    gps_vel_cm_s: tuple[int, ...] = izeros(3)
    gps_home_int: tuple[int, ...] = izeros(3)
    relative_alt_mm: int = 0
    heading_mdeg: int = 0
    satellites_visible: int = 0
    fix_type: int = 0
    reserve_int: int = 0
    euler_rad: tuple[float, ...] = zeros(3)
    position_ned_m: tuple[float, ...] = zeros(3)
    velocity_ned_m_s: tuple[float, ...] = zeros(3)
    pos_horiz_accuracy_m: float = 0.0
    pos_vert_accuracy_m: float = 0.0
    reserve_float: float = 0.0


@wire_message(w.HIL_CMD_DATA)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class HILCmdData(WireMessage):
    """Offboard set point in UDP_Full mode (120 B to ``20100 + 2(N - 1)``), identified by port.

    No checksum: ``payload_len`` must be 80. ``modes`` and ``flags`` carry MAVLink's
    ``type_mask`` and ``coordinate_frame``; ``controls`` pos[3], vel[3], acc[3], yaw, yaw rate.
    """

    FIXED: ClassVar[Mapping[str, int]] = MappingProxyType({"payload_len": HIL_CMD_PAYLOAD})

    target: int = HIL_CMD_TARGET
    payload_len: int = HIL_CMD_PAYLOAD
    time_boot_ms: int = 0
    copter_id: int = 0
    modes: int = 0
    flags: int = 0
    controls: tuple[float, ...] = zeros(16)
    unused: bytes = b""
