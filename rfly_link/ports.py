"""RflySim's UDP port map: every port formula, what each port carries, and which way it flows.

docs/protocol-decisions.md gives the CopterSim and RflySim3D ports; the public SDK gives the
rest (the 20100/40100 series, 20002, 20005, 20007, 50000). A port's :class:`PortRole` decides which
structures may be decoded there (:mod:`rfly_link.dispatch`); ``MESSAGE_ROLES`` is the one map
from each structure to the roles it travels on (:mod:`rfly_link.port_table` renders it for
docs/rflysim.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from rfly_link import messages as m

# The largest CopterID whose ports stay unambiguous: state port 30100 + 2N - 1 must stay below
# the reply series at 31000 (N = 451 would put it on 31001, CopterID 2's reply port).
MAX_COPTERS = 450
MAX_WINDOWS = 90  # RflySim3D windows 20010..20099: 20100 starts CopterSim's PX4 series

MULTICAST_GROUP = "224.0.0.10"
COPTERSIM_REQUEST_PORT = 20002
TIME_STAMP_PORT = 20005
RFLYSIM3D_OUT_PORT = 20006
START_SIGNAL_PORT = 20007
RFLYSIM3D_MULTICAST_PORTS = (20008, 20009)
RFLYSIM3D_LAN_PORT = 20009
RFLYSIM3D_WINDOW_BASE = 20010
PX4_BASE = 20100
COPTERSIM_BASE = 30100
COPTERSIM_REPLY_BASE = 31000
PX4_EXT_BASE = 40100
CUSTOM_DATA_PORT = 50000
VISION_SENSOR_PORT_BASE = 9999  # a sensor's SendProtocol[5] of 0 means 9999 + SeqID


def _check_copter(copter_id: int) -> None:
    if not 1 <= copter_id <= MAX_COPTERS:
        raise ValueError(f"copter_id: expected 1..{MAX_COPTERS}, got {copter_id}")


def rflysim3d_window_port(window_id: int) -> int:
    if not 0 <= window_id < MAX_WINDOWS:
        raise ValueError(f"window_id: expected 0..{MAX_WINDOWS - 1}, got {window_id}")
    return RFLYSIM3D_WINDOW_BASE + window_id


def vision_sensor_default_port(seq_id: int) -> int:
    """``9999 + SeqID``: where RflySim3D sends a sensor whose ``SendProtocol[5]`` is 0 (CFG 4.3)."""
    return VISION_SENSOR_PORT_BASE + seq_id


def px4_control_port(copter_id: int) -> int:
    """``20100 + 2(N - 1)``: MAVLink and UDP-mode set points into CopterSim's PX4."""
    _check_copter(copter_id)
    return PX4_BASE + 2 * (copter_id - 1)


def px4_state_port(copter_id: int) -> int:
    """``20100 + 2N - 1``: MAVLink and UDP-mode estimates out of CopterSim's PX4."""
    _check_copter(copter_id)
    return PX4_BASE + 2 * copter_id - 1


def coptersim_control_port(copter_id: int) -> int:
    """``30100 + 2(N - 1)``: SIL control, sensor requests and DLL inputs into CopterSim."""
    _check_copter(copter_id)
    return COPTERSIM_BASE + 2 * (copter_id - 1)


def coptersim_state_port(copter_id: int) -> int:
    """``30100 + 2N - 1``: CopterSim's true state out."""
    _check_copter(copter_id)
    return COPTERSIM_BASE + 2 * copter_id - 1


def coptersim_reply_port(copter_id: int) -> int:
    """``31000 + N - 1``: the default reply port of IMU / odometry requests."""
    _check_copter(copter_id)
    return COPTERSIM_REPLY_BASE + copter_id - 1


def px4_ext_port(copter_id: int) -> int:
    """``40100 + 2N - 1``: PX4's actuator outputs."""
    _check_copter(copter_id)
    return PX4_EXT_BASE + 2 * copter_id - 1


class PortRole(Enum):
    """What a UDP port carries in RflySim's port map."""

    COPTERSIM_REQUEST = "coptersim_request"  # 20002 (224.0.0.10): us -> every CopterSim
    TIME_STAMP = "time_stamp"  # 20005: CopterSim heartbeats -> us
    RFLYSIM3D_OUT = "rflysim3d_out"  # 20006 (and 224.0.0.10): RflySim3D -> us
    START_SIGNAL = "start_signal"  # 20007 (224.0.0.10): us -> scripts waiting to start
    RFLYSIM3D_IN = "rflysim3d_in"  # 20010 + window, 20008/20009 multicast: us -> RflySim3D
    PX4_CONTROL = "px4_control"  # 20100 + 2(N - 1): us -> CopterSim's PX4
    PX4_STATE = "px4_state"  # 20100 + 2N - 1: CopterSim's PX4 -> us
    COPTERSIM_CONTROL = "coptersim_control"  # 30100 + 2(N - 1): us -> CopterSim
    COPTERSIM_STATE = "coptersim_state"  # 30100 + 2N - 1: CopterSim -> us
    COPTERSIM_REPLY = "coptersim_reply"  # 31000 + N - 1: IMU / odometry replies
    PX4_EXT = "px4_ext"  # 40100 + 2N - 1: PX4 actuator outputs -> us
    CUSTOM_DATA = "custom_data"  # 50000: sendCustomData (Simulink and others)
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class RoleInfo:
    """Where a role's ports are and who sends to whom on them."""

    ports: str
    sender: str
    receiver: str


ROLE_INFO: Mapping[PortRole, RoleInfo] = MappingProxyType(
    {
        PortRole.COPTERSIM_REQUEST: RoleInfo("20002 (224.0.0.10)", "client", "CopterSim"),
        PortRole.TIME_STAMP: RoleInfo("20005", "CopterSim", "client"),
        PortRole.RFLYSIM3D_OUT: RoleInfo("20006 (224.0.0.10)", "RflySim3D", "client"),
        PortRole.START_SIGNAL: RoleInfo("20007 (224.0.0.10)", "client", "clients"),
        PortRole.RFLYSIM3D_IN: RoleInfo("20010 + window, 20008, 20009", "client", "RflySim3D"),
        PortRole.PX4_CONTROL: RoleInfo("20100 + 2(N-1)", "client", "CopterSim PX4"),
        PortRole.PX4_STATE: RoleInfo("20100 + 2N-1", "CopterSim PX4", "client"),
        PortRole.COPTERSIM_CONTROL: RoleInfo("30100 + 2(N-1)", "client", "CopterSim"),
        PortRole.COPTERSIM_STATE: RoleInfo("30100 + 2N-1", "CopterSim", "client"),
        PortRole.COPTERSIM_REPLY: RoleInfo("31000 + N-1", "CopterSim", "client"),
        PortRole.PX4_EXT: RoleInfo("40100 + 2N-1", "CopterSim PX4", "client"),
        PortRole.CUSTOM_DATA: RoleInfo("50000 (sender's choice)", "client", "Simulink, any"),
    }
)

_FIXED_PORTS: Mapping[int, PortRole] = MappingProxyType(
    {
        COPTERSIM_REQUEST_PORT: PortRole.COPTERSIM_REQUEST,
        TIME_STAMP_PORT: PortRole.TIME_STAMP,
        RFLYSIM3D_OUT_PORT: PortRole.RFLYSIM3D_OUT,
        START_SIGNAL_PORT: PortRole.START_SIGNAL,
        **dict.fromkeys(RFLYSIM3D_MULTICAST_PORTS, PortRole.RFLYSIM3D_IN),
        CUSTOM_DATA_PORT: PortRole.CUSTOM_DATA,
    }
)

# (first port, ports in the series, role of even offsets, role of odd offsets)
_SERIES = (
    (RFLYSIM3D_WINDOW_BASE, MAX_WINDOWS, PortRole.RFLYSIM3D_IN, PortRole.RFLYSIM3D_IN),
    (PX4_BASE, 2 * MAX_COPTERS, PortRole.PX4_CONTROL, PortRole.PX4_STATE),
    (COPTERSIM_BASE, 2 * MAX_COPTERS, PortRole.COPTERSIM_CONTROL, PortRole.COPTERSIM_STATE),
    (COPTERSIM_REPLY_BASE, MAX_COPTERS, PortRole.COPTERSIM_REPLY, PortRole.COPTERSIM_REPLY),
    (PX4_EXT_BASE, 2 * MAX_COPTERS, PortRole.UNKNOWN, PortRole.PX4_EXT),
)


def port_role(port: int | None) -> PortRole:
    """Classify a port by RflySim's port map; ``UNKNOWN`` for ``None`` or any other port."""
    if port is None:
        return PortRole.UNKNOWN
    fixed = _FIXED_PORTS.get(port)
    if fixed is not None:
        return fixed
    for first, count, even, odd in _SERIES:
        if first <= port < first + count:
            return odd if (port - first) % 2 else even
    return PortRole.UNKNOWN


_R = PortRole

# Every datagram structure and the port roles it travels on: the one port map.
MESSAGE_ROLES: Mapping[type[m.WireMessage], frozenset[PortRole]] = MappingProxyType(
    {
        # CopterSim state, control and replies
        m.SOut2Simulator: frozenset({_R.COPTERSIM_STATE}),
        m.SOut2SimulatorSimpleTime: frozenset({_R.COPTERSIM_STATE}),
        m.NetDataShort: frozenset({_R.COPTERSIM_STATE}),
        m.UE4CmdGPS: frozenset({_R.COPTERSIM_STATE}),
        m.CopterSimCrash: frozenset({_R.RFLYSIM3D_OUT, _R.COPTERSIM_STATE}),
        m.OutCopterData: frozenset({_R.COPTERSIM_STATE}),
        m.SILIntFloat: frozenset({_R.COPTERSIM_CONTROL, _R.RFLYSIM3D_OUT}),
        m.SensorReqCopterSim: frozenset({_R.COPTERSIM_CONTROL}),
        m.PX4UorbRflyCtrl: frozenset({_R.COPTERSIM_CONTROL}),
        m.ImuReply: frozenset({_R.COPTERSIM_REPLY}),
        m.OdomReply: frozenset({_R.COPTERSIM_REPLY}),
        # DLL model inputs
        m.DllInDoubCtrls: frozenset({_R.COPTERSIM_CONTROL}),
        m.DllInCtrlExtDoub: frozenset({_R.COPTERSIM_CONTROL}),
        m.DllInCtrlExt: frozenset({_R.COPTERSIM_CONTROL}),
        m.PX4ModelInParams: frozenset({_R.COPTERSIM_CONTROL}),
        m.PX4InitInParams: frozenset({_R.COPTERSIM_CONTROL}),
        m.PX4DynModiParams: frozenset({_R.COPTERSIM_CONTROL}),
        m.UEToCopterData: frozenset({_R.COPTERSIM_CONTROL}),
        m.RayTraceDrone: frozenset({_R.COPTERSIM_CONTROL}),
        m.Collision20d: frozenset({_R.COPTERSIM_CONTROL}),
        m.TerrainIn15d: frozenset({_R.COPTERSIM_CONTROL}),
        m.CustomData: frozenset({_R.CUSTOM_DATA}),
        # discovery, start and time
        m.RflyTimeStmp: frozenset({_R.TIME_STAMP}),
        m.ReCopterSimMsg: frozenset({_R.COPTERSIM_REQUEST, _R.COPTERSIM_CONTROL}),
        m.CptSimCmd: frozenset({_R.COPTERSIM_REQUEST, _R.COPTERSIM_CONTROL}),
        m.HeartbeatRequest: frozenset({_R.COPTERSIM_CONTROL}),
        m.StartSignal: frozenset({_R.START_SIGNAL}),
        # CopterSim's PX4 in UDP modes
        m.OffboardShortData: frozenset({_R.PX4_CONTROL}),
        m.HILCmdData: frozenset({_R.PX4_CONTROL}),
        m.RebootPix: frozenset({_R.PX4_CONTROL}),
        m.HILStateShort: frozenset({_R.PX4_STATE}),
        m.HILStateData: frozenset({_R.PX4_STATE}),
        m.PX4ExtMsg: frozenset({_R.PX4_EXT}),
        # RflySim3D -> us
        m.GimbalStatus: frozenset({_R.RFLYSIM3D_OUT}),
        m.ReqVeCrashData: frozenset({_R.RFLYSIM3D_OUT}),
        m.CameraData: frozenset({_R.RFLYSIM3D_OUT}),
        m.CameraDataQuat: frozenset({_R.RFLYSIM3D_OUT}),
        m.CoptReqData: frozenset({_R.RFLYSIM3D_OUT}),
        m.CoptReqDataQuat: frozenset({_R.RFLYSIM3D_OUT}),
        m.ObjReqData: frozenset({_R.RFLYSIM3D_OUT}),
        m.ObjReqDataQuat: frozenset({_R.RFLYSIM3D_OUT}),
        # us -> RflySim3D
        m.VisionSensorReq: frozenset({_R.RFLYSIM3D_IN}),
        m.VisionSensorReqLegacy: frozenset({_R.RFLYSIM3D_IN}),
        m.VisionSensorReqNew: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4PosFull: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4PosNew: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4PosSimple: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4PosScale: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4PosSimpleTime: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4PosScale100: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4PosScalePwm20: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4LabelMsg: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4Attach: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4ExtAct: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4Command: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4CommandLong: frozenset({_R.RFLYSIM3D_IN}),
        m.UE4CommandNet: frozenset({_R.RFLYSIM3D_IN}),
    }
)


def identified_by_port(cls: type[m.WireMessage]) -> bool:
    """True for structures without a fixed marker: only their port identifies them."""
    return not cls.CHECKSUMS or cls.ANY_CHECKSUM
