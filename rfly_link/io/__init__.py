"""The I/O edge of rfly_link: UDP receivers with their reader threads, and senders.

Everything here touches sockets, threads or asyncio; the codecs it drives (:mod:`rfly_link.wire`,
:mod:`rfly_link.messages`, :mod:`rfly_link.dispatch`, :mod:`rfly_link.reassembly`,
:mod:`rfly_link.sensors`) import none of it.

* :mod:`~rfly_link.io.receiver`: the socket and its reader thread;
* :mod:`~rfly_link.io.handoff`: the bounded queue from that thread to the event loop;
* :mod:`~rfly_link.io.pipelines`: what the reader runs on each datagram;
* :mod:`~rfly_link.io.factories`: receivers by source (Config.json sensors, CopterSim, ...);
* :mod:`~rfly_link.io.group`: receivers started all or none, drained into one handler;
* :mod:`~rfly_link.io.sockinfo`: kernel facts about sockets (buffer sizes, drop counters);
* :mod:`~rfly_link.io.clients`: senders.

Receivers, their pipelines and socket facts are used together: their names are re-exported here.
"""

from __future__ import annotations

from rfly_link.io.factories import (
    coptersim_receivers,
    coptersim_request_receiver,
    custom_data_receiver,
    heartbeat_receiver,
    message_receiver,
    rflysim3d_receiver,
    start_signal_receiver,
    vision_sensor_receivers,
)
from rfly_link.io.group import ReceiverGroup
from rfly_link.io.pipelines import (
    DEFAULT_IN_FLIGHT,
    Event,
    MessagePipeline,
    Pipeline,
    SensorPipeline,
    sensor_reassembler,
)
from rfly_link.io.receiver import (
    DEFAULT_RCVBUF,
    SOCKET_ERROR_BACKOFF,
    ReceiverStats,
    UdpReceiver,
)
from rfly_link.io.sockinfo import (
    read_socket_drops,
    read_udp_rcvbuf_errors,
    serves_destination,
    usable_rcvbuf,
)

__all__ = [
    "DEFAULT_IN_FLIGHT",
    "DEFAULT_RCVBUF",
    "SOCKET_ERROR_BACKOFF",
    "Event",
    "MessagePipeline",
    "Pipeline",
    "ReceiverGroup",
    "ReceiverStats",
    "SensorPipeline",
    "UdpReceiver",
    "coptersim_receivers",
    "coptersim_request_receiver",
    "custom_data_receiver",
    "heartbeat_receiver",
    "message_receiver",
    "read_socket_drops",
    "read_udp_rcvbuf_errors",
    "rflysim3d_receiver",
    "sensor_reassembler",
    "serves_destination",
    "start_signal_receiver",
    "usable_rcvbuf",
    "vision_sensor_receivers",
]
