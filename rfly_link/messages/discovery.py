"""CopterSim discovery, start and time: the heartbeat, remote set-up requests, the start signal.

No spec describes these; formats and values come from the public SDK (``ReqCopterSim.py``,
``VisionCaptureApi.py``, ``PX4MavCtrlV4.py``). Ports are in :mod:`rfly_link.ports`.
"""

from __future__ import annotations

from enum import IntEnum

from rfly_link.messages.base import WireMessage, izeros, message_dataclass, wire_message, zeros
from rfly_link.wire import checksums as cs
from rfly_link.wire import coptersim as w


@wire_message(w.RFLY_TIME_STMP, cs.TIME_STAMP)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class RflyTimeStmp(WireMessage):
    """CopterSim's heartbeat to port 20005 (32 B): start time, current time, a counter.

    Both times are the simulator PC's wall clock in Unix milliseconds, so a receiver can tell a
    live simulator (``heart_count`` advancing) and anchor the simulation clock to its own.
    """

    checksum: int = cs.TIME_STAMP
    copter_id: int = 0
    sys_start_time_ms: int = 0
    sys_current_time_ms: int = 0
    heart_count: int = 0

    @property
    def running_ms(self) -> int:
        """Milliseconds since CopterSim started the simulation (its own wall clock)."""
        return self.sys_current_time_ms - self.sys_start_time_ms


@wire_message(w.RE_COPTERSIM_MSG, cs.RE_COPTERSIM)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class ReCopterSimMsg(WireMessage):
    """``ReqCopterSim.sendReCopterSim`` (48 B): reconfigure a CopterSim from afar.

    Sent to 224.0.0.10:20002 and to ``30100 + 2(N - 1)``. A flag <= 0 (``udp_mode`` < 0)
    leaves that setting alone, which the defaults do.
    """

    checksum: int = cs.RE_COPTERSIM
    copter_id: int = 0
    is_req_ip: int = -1
    is_xy_yaw: int = 0
    is_zrp: int = 0
    udp_mode: int = -1
    other_params: tuple[int, ...] = izeros(4)
    z_roll_pitch: tuple[float, ...] = zeros(3)
    yaw_deg: float = 0.0
    xy_m: tuple[float, ...] = zeros(2)


class CptSimTarget(IntEnum):
    """``CptSimCMD.flag``: what to switch."""

    DLL_MODEL = 1
    MAP = 2


@wire_message(w.CPTSIM_CMD, cs.CPTSIM_CMD)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class CptSimCmd(WireMessage):
    """``ReqCopterSim.sendReDllMap`` (64 B): switch a CopterSim's DLL model or map.

    Selected by ``index`` when it is >= 0, else by ``name`` (at most 48 bytes).
    """

    checksum: int = cs.CPTSIM_CMD
    copter_id: int = 0
    flag: int = 0
    index: int = -1
    name: bytes = b""

    @classmethod
    def switch(cls, copter_id: int, target: CptSimTarget, choice: str | int) -> CptSimCmd:
        """Switch ``target`` to the model or map named (str) or numbered (int) ``choice``."""
        if isinstance(choice, int):
            return cls(copter_id=copter_id, flag=int(target), index=choice)
        return cls(copter_id=copter_id, flag=int(target), name=choice.encode("utf-8"))


class HeartbeatReach(IntEnum):
    """``Ue4Req.req_index``: how the SDK reached CopterSim when multicast failed."""

    BROADCAST = 90
    UNICAST = 91


@wire_message(w.UE4_REQ, cs.HEARTBEAT_REQUEST)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class HeartbeatRequest(WireMessage):
    """Ask CopterSim to send its :class:`RflyTimeStmp` to this PC (8 B, ``30100 + 2(N - 1)``)."""

    checksum: int = cs.HEARTBEAT_REQUEST
    req_index: int = int(HeartbeatReach.BROADCAST)


@wire_message(w.START_SIGNAL, cs.START_SIGNAL)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class StartSignal(WireMessage):
    """``sendStartMsg`` (12 B to 224.0.0.10:20007): release scripts waiting to start.

    ``copter_id`` -1 starts every vehicle. Same length and marker as the crash report, so only
    port 20007 identifies it.
    """

    checksum: int = cs.START_SIGNAL
    is_start: int = 1
    copter_id: int = -1
