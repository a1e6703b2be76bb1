"""RflySim UDP protocols: sans-I/O codecs, fragment reassembly, receivers and clients.

Core (no sockets, no clocks): :func:`decode` for CopterSim / PX4 / RflySim3D datagrams, with
the port map in :mod:`rfly_link.ports`; :class:`Reassembler` for vision-sensor fragments,
:func:`decode_sensor` for their payloads; typed values in :mod:`rfly_link.messages`.
I/O lives in :mod:`rfly_link.io` (receivers, and senders in :mod:`rfly_link.io.clients`);
importing this package imports none of it.
"""

from __future__ import annotations

from rfly_link.coordinates import LocalOdometry, Odometry, WorldFrame, imu_flu, odometry_in
from rfly_link.dispatch import decode
from rfly_link.errors import DecodeError, DropCause, RflyLinkError
from rfly_link.messages import (
    ImuReply,
    OdomReply,
    RflyTimeStmp,
    SOut2Simulator,
    SOut2SimulatorSimpleTime,
    TypeId,
)
from rfly_link.reassembly import Reassembler, SensorFrame
from rfly_link.sensors import Image, PointCloud, TargetList, decode_sensor

# What a user needs: the two decoders, the messages a world model consumes, the odometry
# conversions and the errors to catch. Every message, each decode error, the port roles and
# the reassembler's internals are in their modules (rfly_link.messages, .errors, .ports,
# .reassembly, .sensors).
__all__ = [
    "DecodeError",
    "DropCause",
    "Image",
    "ImuReply",
    "LocalOdometry",
    "OdomReply",
    "Odometry",
    "PointCloud",
    "Reassembler",
    "RflyLinkError",
    "RflyTimeStmp",
    "SOut2Simulator",
    "SOut2SimulatorSimpleTime",
    "SensorFrame",
    "TargetList",
    "TypeId",
    "WorldFrame",
    "decode",
    "decode_sensor",
    "imu_flu",
    "odometry_in",
]
