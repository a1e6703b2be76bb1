"""Decoders for reassembled vision-sensor payloads, one module per kind, chosen by TypeID.

:mod:`~rfly_link.sensors.point_clouds` (TypeID 7, 20-23), :mod:`~rfly_link.sensors.images`
(1-4, 8, 9, 40, 41), :mod:`~rfly_link.sensors.targets` (30, 31); the laser range finder (5)
and optical flow (10) are fixed-size :mod:`rfly_link.messages`. :func:`decode_sensor` picks
the decoder from the TypeID (VSP 2.1). Everything is re-exported here.
"""

from __future__ import annotations

from typing import Any

from rfly_link import messages as m
from rfly_link.errors import DecodeError, DropCause
from rfly_link.messages import TypeId
from rfly_link.sensors.images import (
    IMAGE_TYPES,
    Image,
    ImageEncoding,
    decode_image,
    raw_image_bytes,
    sniff_image,
)
from rfly_link.sensors.point_clouds import (
    INT16_FULL_SCALE,
    POINT_CLOUD_TYPES,
    PointCloud,
    PointLayout,
    decode_point_cloud,
    encode_point_cloud,
    find_point_layouts,
)
from rfly_link.sensors.targets import TARGET_TYPES, TargetList, decode_targets, encode_targets

__all__ = [
    "IMAGE_TYPES",
    "INT16_FULL_SCALE",
    "POINT_CLOUD_TYPES",
    "TARGET_TYPES",
    "Image",
    "ImageEncoding",
    "PointCloud",
    "PointLayout",
    "SensorValue",
    "TargetList",
    "decode_image",
    "decode_point_cloud",
    "decode_sensor",
    "decode_targets",
    "encode_point_cloud",
    "encode_targets",
    "find_point_layouts",
    "raw_image_bytes",
    "sniff_image",
]

SensorValue = PointCloud | Image | TargetList | m.DistanceSensor | m.OpticalFlow


def decode_sensor(
    type_id: int, payload: bytes | bytearray | memoryview, **params: Any
) -> SensorValue:
    """Decode one reassembled sensor payload to its typed value.

    Parameters (all optional; names follow Config.json):

    * ``scale_m`` (or ``other_params``, whose [0] is used): int16 point full-scale, metres;
    * ``channels`` or ``send_protocol`` ([7] > 0 means 4 channels) for point-cloud ties;
    * ``width``/``height`` (or ``data_width``/``data_height``) and ``mode`` (or
      ``send_protocol`` [0]) for images;
    * ``allocate(shape, dtype)`` to supply point-cloud output arrays (a recycling pool).

    Raises a :class:`DecodeError` subclass for bytes that fit no layout.
    """
    send_protocol = params.get("send_protocol")
    if type_id in POINT_CLOUD_TYPES:
        scale = params.get("scale_m")
        other = params.get("other_params")
        if scale is None and other is not None and len(other) > 0:
            scale = other[0]
        channels = params.get("channels")
        if channels is None and send_protocol is not None and len(send_protocol) > 7:
            channels = 4 if send_protocol[7] > 0 else 3
        return decode_point_cloud(
            type_id,
            payload,
            scale_m=None if scale is None else float(scale),
            channels=channels,
            allocate=params.get("allocate"),
        )
    if type_id in IMAGE_TYPES:
        mode = params.get("mode")
        if mode is None and send_protocol is not None and len(send_protocol) > 0:
            mode = send_protocol[0]
        return decode_image(
            type_id,
            payload,
            width=params.get("width", params.get("data_width")),
            height=params.get("height", params.get("data_height")),
            mode=mode,
        )
    if type_id == TypeId.DISTANCE:
        return m.DistanceSensor.decode(payload)
    if type_id == TypeId.OPTICAL_FLOW:
        return m.OpticalFlow.decode(payload)
    if type_id in TARGET_TYPES:
        return decode_targets(type_id, payload)
    raise DecodeError(f"sensor: TypeID {type_id} has no decoder", DropCause.INCONSISTENT)
