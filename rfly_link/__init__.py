"""RflySim UDP protocols: sans-I/O codecs, fragment reassembly, endpoints and clients.

Core (no sockets, no clocks): :func:`decode` for CopterSim / RflySim3D datagrams,
:class:`Reassembler` for vision-sensor fragments, :func:`decode_sensor` for their payloads.
I/O lives in :mod:`rfly_link.endpoints` (receivers) and :mod:`rfly_link.clients` (senders).
"""

from __future__ import annotations

from rfly_link.dispatch import PortRole, decode, port_role
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
from rfly_link.reassembly import Reassembler, ReassemblerStats, SensorFrame, fragment_payload
from rfly_link.sensors import Image, PointCloud, PointLayout, TargetList, decode_sensor

__all__ = [
    "AmbiguousDatagram",
    "ConfigError",
    "DecodeError",
    "DropCause",
    "Image",
    "InconsistentPayload",
    "PointCloud",
    "PointLayout",
    "PortRole",
    "Reassembler",
    "ReassemblerStats",
    "RflyLinkError",
    "SensorFrame",
    "TargetList",
    "UnknownChecksum",
    "WrongLength",
    "WrongPort",
    "decode",
    "decode_sensor",
    "fragment_payload",
    "port_role",
]
