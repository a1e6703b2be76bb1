"""Receivers by what they listen to: a Config.json's vision sensors, a CopterSim, RflySim3D.

Each factory builds :class:`~rfly_link.io.receiver.UdpReceiver` objects (not started) on the
ports RflySim's port map gives, with the pipeline that decodes what those ports carry.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from rfly_link import ports
from rfly_link.config import LoadedConfig, VisionSensorConfig
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


def coptersim_receivers(
    copter_id: int, *, replies: bool = True, **kwargs: Any
) -> list[UdpReceiver]:
    """Receivers for CopterSim vehicle ``copter_id`` (1..``ports.MAX_COPTERS``): its state,
    and IMU/odometry replies."""
    state = ports.coptersim_state_port(copter_id)  # ValueError for a CopterID off the map
    listen = [state, ports.coptersim_reply_port(copter_id)] if replies else [state]
    return [
        UdpReceiver(MessagePipeline(p), port=p, name=f"rfly-coptersim{copter_id}-{p}", **kwargs)
        for p in listen
    ]


def rflysim3d_receiver(*, multicast: bool = False, **kwargs: Any) -> UdpReceiver:
    """Port 20006: crashes, gimbal status and object data; optionally group 224.0.0.10."""
    port = ports.RFLYSIM3D_OUT_PORT
    return UdpReceiver(
        MessagePipeline(port),
        port=kwargs.pop("port", port),
        multicast_group=ports.MULTICAST_GROUP if multicast else None,
        name=f"rfly-rflysim3d-{port}",
        **kwargs,
    )
