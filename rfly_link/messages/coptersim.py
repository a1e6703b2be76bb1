"""CopterSim values: vehicle state, SIL control, IMU/odometry replies (VSP 3, BRIDGE, DEC, SDK).

The state port ``30100 + 2N - 1`` carries SOut2Simulator, the 112 B state, RflySim3D's map
GPS origin, the legacy 200 B netDataShort, crash reports and the DLL model's outputs; the
control port ``30100 + 2(N - 1)`` carries SILIntFloat, the sensor request and the DLL inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum, IntFlag
from types import MappingProxyType
from typing import Any, ClassVar

from rfly_link.messages.base import WireMessage, izeros, message_dataclass, wire_message, zeros
from rfly_link.wire import checksums as cs
from rfly_link.wire import coptersim as w

# --- CopterSim --------------------------------------------------------------------------------


class CopterSimSensor(IntEnum):
    IMU = 0
    ODOMETRY = 1


@wire_message(w.SENSOR_REQ_COPTERSIM, cs.SENSOR_REQUEST)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class SensorReqCopterSim(WireMessage):
    """Ask CopterSim to stream IMU or odometry replies to ``ip:port`` at ``update_freq_hz``."""

    checksum: int = cs.SENSOR_REQUEST
    sensor_type: int = 0
    update_freq_hz: int = 0
    port: int = 0
    ip: tuple[int, ...] = izeros(4)
    params: tuple[float, ...] = zeros(6)

    @classmethod
    def build(
        cls, sensor: CopterSimSensor, rate_hz: int, reply_ip: str, reply_port: int
    ) -> SensorReqCopterSim:
        if not 1 <= rate_hz <= 1000:
            raise ValueError(f"update_freq_hz: expected 1..1000, got {rate_hz}")
        ip = tuple(int(part) for part in reply_ip.split("."))
        if len(ip) != 4:
            raise ValueError(f"ip: expected a dotted IPv4 address, got {reply_ip!r}")
        return cls(cs.SENSOR_REQUEST, int(sensor), rate_hz, reply_port, ip, (0.0,) * 6)

    @property
    def reply_ip(self) -> str:
        return ".".join(str(b) for b in self.ip)


@wire_message(w.IMU_REPLY, cs.IMU_REPLY)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class ImuReply(WireMessage):
    """Raw CopterSim IMU sample, body FRD (VSP 3.2)."""

    checksum: int = cs.IMU_REPLY
    sequence: int = 0
    simulation_time_s: float = 0.0
    acceleration_frd_m_s2: tuple[float, ...] = zeros(3)
    angular_rate_frd_rad_s: tuple[float, ...] = zeros(3)


class OdomFlags(IntFlag):
    POSITION_VALID = 1 << 0
    ATTITUDE_VALID = 1 << 1
    VELOCITY_VALID = 1 << 2
    ANGULAR_VELOCITY_VALID = 1 << 3
    DISCONTINUITY = 1 << 5


class OdomFrameType(IntEnum):
    NED_FRD = 1


@wire_message(w.ODOM_REPLY, cs.ODOM_REPLY)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class OdomReply(WireMessage):
    """CopterSim odometry: world NED, body FRD when ``frame_type == 1`` (VSP 3.3)."""

    checksum: int = cs.ODOM_REPLY
    sequence: int = 0
    simulation_time_s: float = 0.0
    copter_id: int = 0
    frame_type: int = 0
    flags: int = 0
    position_ned_m: tuple[float, ...] = zeros(3)
    quaternion_wxyz: tuple[float, ...] = zeros(4)
    velocity_ned_m_s: tuple[float, ...] = zeros(3)
    angular_velocity_frd_rad_s: tuple[float, ...] = zeros(3)

    @property
    def discontinuity(self) -> bool:
        return bool(self.flags & OdomFlags.DISCONTINUITY)

    @property
    def pose_valid(self) -> bool:
        need = OdomFlags.POSITION_VALID | OdomFlags.ATTITUDE_VALID
        return self.flags & need == need

    def _derived(self) -> dict[str, Any]:
        return {
            "flag_names": [f.name for f in OdomFlags if self.flags & f],
            "frame": "NED/FRD" if self.frame_type == OdomFrameType.NED_FRD else "unknown",
        }


@wire_message(w.SOUT2SIMULATOR, cs.STATE_168)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class SOut2Simulator(WireMessage):
    """CopterSim vehicle state (168 B) received on ``30100 + 2N - 1``."""

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


@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class SimpleTimeFields(WireMessage):
    """The fields of the 112 B ``SOUT2SIMULATOR_SIMPLE_TIME`` table, declared once: CopterSim's
    state (:class:`SOut2SimulatorSimpleTime`) and RflySim3D's ``sendUE4PosNew``
    (:class:`~rfly_link.messages.rflysim3d.UE4PosNew`) are the same struct with the same
    marker, told apart by port. Not a message itself: the two classes are siblings, so one
    is never taken for the other by ``isinstance``."""

    checksum: int = cs.STATE_112
    copter_id: int = 0
    vehicle_type: int = 0
    position_gps_int: tuple[int, ...] = izeros(3)
    motor_rpm: tuple[float, ...] = zeros(8)
    velocity_ned_m_s: tuple[float, ...] = zeros(3)
    euler_rad: tuple[float, ...] = zeros(3)
    position_ned_m: tuple[float, ...] = zeros(3)
    runned_time_s: float = 0.0

    @property
    def position_gps(self) -> tuple[float, float, float]:
        """(lat deg, lon deg, alt m) from the wire's 1e7 / 1e7 / 1e3 integers."""
        lat, lon, alt = self.position_gps_int
        return lat / 1e7, lon / 1e7, alt / 1e3


@wire_message(w.SOUT2SIMULATOR_SIMPLE_TIME, cs.STATE_112)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class SOut2SimulatorSimpleTime(SimpleTimeFields):
    """CopterSim's 112 B state (GPS as scaled ints) on ``30100 + 2N - 1``."""


class SilCmd(IntFlag):
    """``in_ints[0]`` command bits (RflySimCP in the public SDK's DllSimCtrlAPI)."""

    ENABLE = 1
    SIL = 1 << 1
    ARMED = 1 << 2
    TAKEOFF = 1 << 8
    POSITION = 1 << 9
    LAND = 1 << 10
    RETURN = 1 << 11
    HORIZONTAL = 1 << 14
    OFFBOARD_POS = 1 << 16
    OFFBOARD_ATT = 1 << 17


SIL_CMD_BASE = SilCmd.ENABLE | SilCmd.SIL


class SilOffboard(IntFlag):
    """``in_ints[1]`` offboard bits: which ``in_floats`` are valid and in which frame."""

    HAS_POS = 1
    HAS_VEL = 1 << 1
    HAS_ACC = 1 << 2
    HAS_YAW = 1 << 3
    HAS_YAW_RATE = 1 << 4
    HAS_ATT = 1 << 8
    HAS_ROLL_RATE = 1 << 9
    HAS_PITCH_RATE = 1 << 10
    HAS_THRUST = 1 << 11
    FRD = 1 << 12
    LOCAL = 1 << 13
    HAS_FULL = 1 << 15
    NED = 1 << 16
    GLOBAL = 1 << 17


# in_floats slots (RflySimCP.FPos, FVel, FAcc, FAtt, FAttRate, FThrust)
SIL_POS, SIL_VEL, SIL_ACC, SIL_ATT, SIL_ATT_RATE, SIL_THRUST = 0, 3, 6, 9, 12, 15


@wire_message(w.SIL_INT_FLOAT, cs.SIL_INT_FLOAT)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class SILIntFloat(WireMessage):
    """Inputs to the CopterSim DLL model (120 B), sent to ``30100 + 2(N - 1)``.

    The flag meanings come from the public SDK (``RflySimCP``); the specs name only
    ``CmdArmed | CmdPosition`` and ``HasPos | HasYaw``.
    """

    checksum: int = cs.SIL_INT_FLOAT
    copter_id: int = 0
    in_ints: tuple[int, ...] = izeros(8)
    in_floats: tuple[float, ...] = zeros(20)

    @classmethod
    def _offboard(
        cls, copter_id: int, cmd: SilCmd, offboard: SilOffboard, slots: dict[int, float]
    ) -> SILIntFloat:
        ints = [0] * 8
        ints[0] = int(cmd)
        ints[1] = int(offboard)
        floats = [0.0] * 20
        for index, value in slots.items():
            floats[index] = float(value)
        return cls(cs.SIL_INT_FLOAT, copter_id, tuple(ints), tuple(floats))

    @classmethod
    def position_ned(
        cls, copter_id: int, north_m: float, east_m: float, down_m: float, yaw_rad: float = 0.0
    ) -> SILIntFloat:
        """Armed position hold at a NED point with a yaw (``RflySimCP.getPosNED``)."""
        cmd = SIL_CMD_BASE | SilCmd.ARMED | SilCmd.POSITION
        slots = {SIL_POS: north_m, SIL_POS + 1: east_m, SIL_POS + 2: down_m, SIL_ATT + 2: yaw_rad}
        return cls._offboard(copter_id, cmd, SilOffboard.HAS_POS | SilOffboard.HAS_YAW, slots)

    @classmethod
    def velocity_ned(
        cls,
        copter_id: int,
        vn_m_s: float,
        ve_m_s: float,
        vd_m_s: float,
        yaw_rate_rad_s: float = 0.0,
    ) -> SILIntFloat:
        """Armed NED velocity with a yaw rate (``RflySimCP.getVelNED``)."""
        slots = {SIL_VEL: vn_m_s, SIL_VEL + 1: ve_m_s, SIL_VEL + 2: vd_m_s}
        slots[SIL_ATT_RATE + 2] = yaw_rate_rad_s
        flags = SilOffboard.HAS_VEL | SilOffboard.HAS_YAW_RATE
        return cls._offboard(copter_id, SIL_CMD_BASE | SilCmd.ARMED, flags, slots)

    @classmethod
    def velocity_frd(
        cls,
        copter_id: int,
        vf_m_s: float,
        vr_m_s: float,
        vd_m_s: float,
        yaw_rate_rad_s: float = 0.0,
    ) -> SILIntFloat:
        """Armed body-FRD velocity with a yaw rate (``RflySimCP.getVelFRD``)."""
        slots = {SIL_VEL: vf_m_s, SIL_VEL + 1: vr_m_s, SIL_VEL + 2: vd_m_s}
        slots[SIL_ATT_RATE + 2] = yaw_rate_rad_s
        flags = SilOffboard.HAS_VEL | SilOffboard.HAS_YAW_RATE | SilOffboard.FRD
        return cls._offboard(copter_id, SIL_CMD_BASE | SilCmd.ARMED, flags, slots)

    @classmethod
    def yaw(cls, copter_id: int, yaw_rad: float) -> SILIntFloat:
        """Armed yaw-only set point."""
        slots = {SIL_ATT + 2: yaw_rad}
        return cls._offboard(copter_id, SIL_CMD_BASE | SilCmd.ARMED, SilOffboard.HAS_YAW, slots)

    @property
    def command(self) -> SilCmd:
        return SilCmd(self.in_ints[0] & sum(SilCmd))

    @property
    def offboard(self) -> SilOffboard:
        return SilOffboard(self.in_ints[1] & sum(SilOffboard))

    def _derived(self) -> dict[str, Any]:
        return {
            "command_flags": [f.name for f in SilCmd if self.in_ints[0] & f],
            "offboard_flags": [f.name for f in SilOffboard if self.in_ints[1] & f],
        }


# --- More on the state port (the public SDK's PX4MavCtrler.getTrueDataMsg) --------------------


@wire_message(w.UE4_CMD_GPS, cs.UE4_CMD_GPS)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UE4CmdGPS(WireMessage):
    """The GPS origin of RflySim3D's map (32 B), on ``30100 + 2N - 1``."""

    checksum: int = cs.UE4_CMD_GPS
    copter_id: int = 0
    gps_origin: tuple[float, ...] = zeros(3)


NET_DATA_SHORT_PAYLOAD = 152  # SOut2SimulatorOld with native padding


@wire_message(w.NET_DATA_SHORT)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class NetDataShort(WireMessage):
    """CopterSim's legacy 200 B state on ``30100 + 2N - 1``, identified by its port alone.

    It has no checksum: ``payload_len`` must be 152 (SOut2SimulatorOld), otherwise the
    datagram is rejected as inconsistent. ``crash_target`` >= 0 names the vehicle hit.
    """

    FIXED: ClassVar[Mapping[str, int]] = MappingProxyType({"payload_len": NET_DATA_SHORT_PAYLOAD})

    crash_target: int = -1
    payload_len: int = NET_DATA_SHORT_PAYLOAD
    copter_id: int = 0
    vehicle_type: int = 0
    runned_time_s: float = 0.0
    velocity_ned_m_s: tuple[float, ...] = zeros(3)
    position_ned_m: tuple[float, ...] = zeros(3)
    euler_rad: tuple[float, ...] = zeros(3)
    quaternion_wxyz: tuple[float, ...] = zeros(4)
    motor_rpm: tuple[float, ...] = zeros(8)
    acceleration_frd_m_s2: tuple[float, ...] = zeros(3)
    angular_rate_frd_rad_s: tuple[float, ...] = zeros(3)
    padding: bytes = b""
    position_gps: tuple[float, ...] = zeros(3)
    unused: bytes = b""

    @property
    def crashed(self) -> bool:
        return self.crash_target >= 0
