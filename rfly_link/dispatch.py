"""Identify a CopterSim or RflySim3D datagram by (length, checksum), and by port when ambiguous.

DECISIONS.md, "RflySim3D receive side": some structures share both length and checksum
(112 B / 1234567891 and 168 B / 123456789). Given a port, the port's role decides, and a
structure that never travels on that role is rejected (:class:`WrongPort`); without one,
:func:`decode` raises :class:`AmbiguousDatagram` listing the candidates instead of guessing.
Fragmented vision-sensor data is not handled here: see :mod:`rfly_link.reassembly`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType

from rfly_link import messages as m
from rfly_link.errors import (
    AmbiguousDatagram,
    DecodeError,
    UnknownChecksum,
    WrongLength,
    WrongPort,
)

MAX_COPTERS = 256  # port ranges below are sized for this many CopterIDs


class PortRole(Enum):
    """What a UDP port carries in RflySim's port map."""

    RFLYSIM3D_OUT = "rflysim3d_out"  # 20006 (and 224.0.0.10): RflySim3D -> us
    RFLYSIM3D_IN = "rflysim3d_in"  # 20010 + window, 20008/20009 multicast: us -> RflySim3D
    COPTERSIM_STATE = "coptersim_state"  # 30100 + 2N - 1: CopterSim -> us
    COPTERSIM_CONTROL = "coptersim_control"  # 30100 + 2(N - 1): us -> CopterSim
    COPTERSIM_REPLY = "coptersim_reply"  # 31000 + N - 1: IMU / odometry replies
    UNKNOWN = "unknown"


def port_role(port: int | None) -> PortRole:
    """Classify a port by the RflySim port map (DECISIONS.md, CopterSim and RflySim3D)."""
    if port is None:
        return PortRole.UNKNOWN
    if port == 20006:
        return PortRole.RFLYSIM3D_OUT
    if port in (20008, 20009) or 20010 <= port < 20010 + 100:
        return PortRole.RFLYSIM3D_IN
    if 30100 <= port < 30100 + 2 * MAX_COPTERS:
        return PortRole.COPTERSIM_STATE if port % 2 else PortRole.COPTERSIM_CONTROL
    if 31000 <= port < 31000 + MAX_COPTERS:
        return PortRole.COPTERSIM_REPLY
    return PortRole.UNKNOWN


_OUT = PortRole.RFLYSIM3D_OUT
_IN = PortRole.RFLYSIM3D_IN
_STATE = PortRole.COPTERSIM_STATE
_CONTROL = PortRole.COPTERSIM_CONTROL
_REPLY = PortRole.COPTERSIM_REPLY

# Every datagram structure and the port roles it travels on.
MESSAGE_ROLES: Mapping[type[m.WireMessage], frozenset[PortRole]] = MappingProxyType(
    {
        m.SensorReqCopterSim: frozenset({_CONTROL}),
        m.ImuReply: frozenset({_REPLY}),
        m.OdomReply: frozenset({_REPLY}),
        m.SOut2Simulator: frozenset({_STATE}),
        m.UE4PosFull: frozenset({_IN}),
        m.SOut2SimulatorSimpleTime: frozenset({_STATE}),
        m.UE4PosNew: frozenset({_IN}),
        m.SILIntFloat: frozenset({_CONTROL, _OUT}),
        m.VisionSensorReq: frozenset({_IN}),
        m.VisionSensorReqLegacy: frozenset({_IN}),
        m.VisionSensorReqNew: frozenset({_IN}),
        m.GimbalStatus: frozenset({_OUT}),
        m.CopterSimCrash: frozenset({_OUT}),
        m.ReqVeCrashData: frozenset({_OUT}),
        m.CameraData: frozenset({_OUT}),
        m.CameraDataQuat: frozenset({_OUT}),
        m.CoptReqData: frozenset({_OUT}),
        m.CoptReqDataQuat: frozenset({_OUT}),
        m.ObjReqData: frozenset({_OUT}),
        m.ObjReqDataQuat: frozenset({_OUT}),
        m.UE4PosSimple: frozenset({_IN}),
        m.UE4PosScale: frozenset({_IN}),
        m.UE4PosSimpleTime: frozenset({_IN}),
        m.UE4PosScale100: frozenset({_IN}),
        m.UE4PosScalePwm20: frozenset({_IN}),
        m.UE4LabelMsg: frozenset({_IN}),
        m.UE4Attach: frozenset({_IN}),
        m.UE4ExtAct: frozenset({_IN}),
        m.UE4Command: frozenset({_IN}),
        m.UE4CommandLong: frozenset({_IN}),
        m.UE4CommandNet: frozenset({_IN}),
    }
)


def _build_table() -> dict[int, tuple[type[m.WireMessage], ...]]:
    table: dict[int, list[type[m.WireMessage]]] = defaultdict(list)
    for cls in MESSAGE_ROLES:
        table[cls.LAYOUT.size].append(cls)
    return {size: tuple(classes) for size, classes in table.items()}


_BY_LENGTH = _build_table()
KNOWN_LENGTHS = frozenset(_BY_LENGTH)


def candidates(data: bytes | bytearray | memoryview) -> tuple[type[m.WireMessage], ...]:
    """Every structure whose length and checksum match ``data`` (checksum read per layout)."""
    classes = _BY_LENGTH.get(len(data), ())
    return tuple(c for c in classes if c.LAYOUT.checksum_of(data) in c.CHECKSUMS)


def decode(data: bytes | bytearray | memoryview, *, port: int | None = None) -> m.WireMessage:
    """Decode one CopterSim / RflySim3D datagram to its typed value.

    ``port`` is the UDP port the datagram was sent to (ours when receiving). When it has a role
    in RflySim's port map, only structures that travel on that role are accepted (others raise
    :class:`WrongPort`), which also chooses between structures that share length and checksum.
    A port outside the map (or ``None``) gives no information. Raises :class:`WrongLength`,
    :class:`UnknownChecksum`, :class:`WrongPort` or :class:`AmbiguousDatagram` (all
    :class:`DecodeError`).
    """
    classes = _BY_LENGTH.get(len(data))
    if classes is None:
        raise WrongLength(f"datagram: no known structure is {len(data)} bytes long")
    found = candidates(data)
    if not found:
        markers = sorted({c.LAYOUT.checksum_of(data) for c in classes})
        expected = sorted({x for c in classes for x in c.CHECKSUMS})
        raise UnknownChecksum(
            f"datagram of {len(data)} B: checksum {markers} is none of {expected}"
        )
    role = port_role(port)
    if role is not PortRole.UNKNOWN:
        # DECISIONS.md: check length *and* port (1234567898 is the IMU only on reply ports).
        by_port = tuple(c for c in found if role in MESSAGE_ROLES[c])
        if not by_port:
            names = ", ".join(c.__name__ for c in found)
            allowed = sorted({r.value for c in found for r in MESSAGE_ROLES[c]})
            raise WrongPort(
                f"datagram of {len(data)} B ({names}) on port {port} ({role.value}): "
                f"expected a port of role {' or '.join(allowed)}"
            )
        found = by_port
    if len(found) > 1:
        names = tuple(c.__name__ for c in found)
        where = f"port {port} ({role.value})" if port is not None else "no port given"
        raise AmbiguousDatagram(
            f"datagram of {len(data)} B fits {', '.join(names)}; {where}", names
        )
    return found[0].decode(data)


def try_decode(
    data: bytes | bytearray | memoryview, *, port: int | None = None
) -> m.WireMessage | DecodeError:
    """Like :func:`decode` but returns the error, for receive loops that count causes."""
    try:
        return decode(data, port=port)
    except DecodeError as exc:
        return exc
