"""RflySim UDP protocols: sans-I/O codecs, fragment reassembly, receivers and clients.

Core (no sockets, no clocks): :func:`decode` for CopterSim / PX4 / RflySim3D datagrams, with
the port map in :mod:`rfly_link.ports`; :class:`Reassembler` for vision-sensor fragments,
:func:`decode_sensor` for their payloads; typed values in :mod:`rfly_link.messages`.
I/O lives in :mod:`rfly_link.io` (receivers, and senders in :mod:`rfly_link.io.clients`);
importing this package imports none of it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from rfly_link.coordinates import LocalOdometry, Odometry, WorldFrame, imu_flu, odometry_in
from rfly_link.dispatch import decode
from rfly_link.errors import (
    AmbiguousDatagram,
    ConfigError,
    DecodeError,
    DropCause,
    InconsistentPayload,
    RflyLinkError,
    UnknownChecksum,
    WrongLength,
    WrongPort,
)
from rfly_link.messages import (
    HILStateData,
    HILStateShort,
    ImuReply,
    NetDataShort,
    OdomFlags,
    OdomReply,
    PX4ExtMsg,
    RflyTimeStmp,
    SOut2Simulator,
    SOut2SimulatorSimpleTime,
    TypeId,
    WireMessage,
)
from rfly_link.ports import MESSAGE_ROLES, PortRole, port_role
from rfly_link.reassembly import Reassembler, ReassemblerStats, SensorFrame, fragment_payload
from rfly_link.sensors import Image, PointCloud, PointLayout, TargetList, decode_sensor

__all__ = [
    "MESSAGE_ROLES",
    "AmbiguousDatagram",
    "ConfigError",
    "DecodeError",
    "DropCause",
    "HILStateData",
    "HILStateShort",
    "Image",
    "ImuReply",
    "InconsistentPayload",
    "LocalOdometry",
    "NetDataShort",
    "OdomFlags",
    "OdomReply",
    "Odometry",
    "PX4ExtMsg",
    "PointCloud",
    "PointLayout",
    "PortRole",
    "Reassembler",
    "ReassemblerStats",
    "RflyLinkError",
    "RflyTimeStmp",
    "SOut2Simulator",
    "SOut2SimulatorSimpleTime",
    "SensorFrame",
    "TargetList",
    "TypeId",
    "UnknownChecksum",
    "WireMessage",
    "WorldFrame",
    "WrongLength",
    "WrongPort",
    "decode",
    "decode_sensor",
    "fragment_payload",
    "imu_flu",
    "odometry_in",
    "port_role",
]


def __getattr__(name: str) -> ModuleType:
    """``rfly_link.endpoints``, the I/O layer's former name, imported only when asked for."""
    if name == "endpoints":
        return importlib.import_module("rfly_link.io")
    raise AttributeError(f"module 'rfly_link' has no attribute {name!r}")
