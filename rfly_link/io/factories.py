"""Receivers by what they listen to: Config.json's sensors, CopterSim, RflySim3D, the SDK's ports.

Each factory builds :class:`~rfly_link.io.receiver.UdpReceiver` objects (not started) on the
ports RflySim's port map gives, with the pipeline that decodes what those ports carry.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from rfly_link import ports
from rfly_link.config_json import LoadedConfig, VisionSensorConfig
from rfly_link.io.pipelines import MessagePipeline, SensorPipeline
from rfly_link.io.receiver import UdpReceiver

log = logging.getLogger(__name__)


def vision_sensor_receivers(
    config: LoadedConfig | Iterable[VisionSensorConfig], **kwargs: Any
) -> list[UdpReceiver]:
    """One receiver per UDP vision sensor, on the port its ``SendProtocol[5]`` names.

    Sensor frames are large (megabytes), so their event queue defaults to 8 frames (the oldest
    is dropped and counted when the consumer falls behind).
    """
    sensors = config.sensors if isinstance(config, LoadedConfig) else tuple(config)
    kwargs.setdefault("queue_size", 8)
    receivers = []
    for sensor in sensors:
        if sensor.mode == 0:
            log.info("sensor SeqID %d uses shared memory: no UDP receiver", sensor.seq_id)
            continue
        receivers.append(
            UdpReceiver(
                SensorPipeline(sensor),
                port=sensor.port,
                name=f"rfly-sensor{sensor.seq_id}-{sensor.port}",
                **kwargs,
            )
        )
    return receivers


def message_receiver(
    logical_port: int, source: str, *, multicast: bool = False, **kwargs: Any
) -> UdpReceiver:
    """A receiver for ``logical_port`` of RflySim's port map, decoding what that port carries.

    ``multicast`` also joins :data:`rfly_link.ports.MULTICAST_GROUP`. ``port`` binds another
    port than the logical one (the loopback tests use 0); ``name`` defaults to ``source``.
    """
    return UdpReceiver(
        MessagePipeline(logical_port),
        port=kwargs.pop("port", logical_port),
        multicast_group=ports.MULTICAST_GROUP if multicast else None,
        name=kwargs.pop("name", f"rfly-{source}-{logical_port}"),
        **kwargs,
    )


def coptersim_receivers(
    copter_id: int, *, replies: bool = True, px4: bool = True, **kwargs: Any
) -> list[UdpReceiver]:
    """Receivers for CopterSim vehicle ``copter_id`` (1..``ports.MAX_COPTERS``).

    Its true state and, with ``replies``, its IMU/odometry replies; with ``px4``, its PX4's
    state in the UDP modes (MAVLink on that port is counted as dropped) and actuator outputs.
    """
    listen = [ports.coptersim_state_port(copter_id)]  # ValueError for a CopterID off the map
    if replies:
        listen.append(ports.coptersim_reply_port(copter_id))
    if px4:
        listen += [ports.px4_state_port(copter_id), ports.px4_ext_port(copter_id)]
    return [message_receiver(p, f"coptersim{copter_id}", **kwargs) for p in listen]


def heartbeat_receiver(**kwargs: Any) -> UdpReceiver:
    """Port 20005: every CopterSim's :class:`~rfly_link.messages.RflyTimeStmp` heartbeat."""
    return message_receiver(ports.TIME_STAMP_PORT, "heartbeat", **kwargs)


def rflysim3d_receiver(*, multicast: bool = False, **kwargs: Any) -> UdpReceiver:
    """Port 20006: crashes, gimbal status and object data; optionally group 224.0.0.10."""
    return message_receiver(ports.RFLYSIM3D_OUT_PORT, "rflysim3d", multicast=multicast, **kwargs)


def start_signal_receiver(**kwargs: Any) -> UdpReceiver:
    """Port 20007 in group 224.0.0.10: the start signal scripts wait for (``sendStartMsg``)."""
    return message_receiver(ports.START_SIGNAL_PORT, "start", multicast=True, **kwargs)


def coptersim_request_receiver(**kwargs: Any) -> UdpReceiver:
    """Port 20002 in group 224.0.0.10: what clients ask of every CopterSim (set-up, DLL, map)."""
    return message_receiver(ports.COPTERSIM_REQUEST_PORT, "requests", multicast=True, **kwargs)


def custom_data_receiver(**kwargs: Any) -> UdpReceiver:
    """Port 50000: ``sendCustomData``'s 16 doubles (the SDK's default port)."""
    return message_receiver(ports.CUSTOM_DATA_PORT, "custom", **kwargs)
