"""Decoders for reassembled vision-sensor payloads, one module per kind, chosen by TypeID.

:mod:`~rfly_link.sensors.point_clouds` (TypeID 7, 20-23), :mod:`~rfly_link.sensors.images`
(1-4, 8, 9, 40, 41), :mod:`~rfly_link.sensors.targets` (30, 31); the laser range finder (5)
and optical flow (10) are fixed-size :mod:`rfly_link.messages`. :func:`decode_sensor` picks
the decoder from the TypeID (VSP 2.1). Everything is re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy.typing as npt

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
    "SensorParams",
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
Allocate = Callable[[tuple[int, ...], Any], npt.NDArray[Any]]


@dataclass(frozen=True, slots=True)
class SensorParams:
    """What a decoder needs to know about a sensor that its payload does not say.

    ``VisionSensorConfig.decode_params()`` builds it from Config.json (``otherParams[0]``,
    ``SendProtocol[0]`` and ``[7]``, ``DataWidth``/``DataHeight``). Typed fields: a misspelt
    name is an error, never silently ignored.
    """

    scale_m: float | None = None  # int16 point full scale in metres (otherParams[0])
    channels: int | None = None  # 3 or 4 int16 per point, for layouts that tie (SendProtocol[7])
    width: int | None = None  # raw image size in pixels (DataWidth, DataHeight)
    height: int | None = None
    mode: int | None = None  # image encoding: SendProtocol[0]
    allocate: Allocate | None = None  # supplies point-cloud output arrays (a recycling pool)


def decode_sensor(
    type_id: int,
    payload: bytes | bytearray | memoryview,
    params: SensorParams | None = None,
    *,
    scale_m: float | None = None,
    channels: int | None = None,
    width: int | None = None,
    height: int | None = None,
    mode: int | None = None,
) -> SensorValue:
    """Decode one reassembled sensor payload to its typed value.

    ``params`` describes the sensor (all optional); the keywords override its fields. Raises a
    :class:`DecodeError` subclass for bytes that fit no layout.
    """
    p = params or _NO_PARAMS
    if (scale_m, channels, width, height, mode) != (None,) * 5:
        p = SensorParams(
            p.scale_m if scale_m is None else scale_m,
            p.channels if channels is None else channels,
            p.width if width is None else width,
            p.height if height is None else height,
            p.mode if mode is None else mode,
            p.allocate,
        )
    if type_id in POINT_CLOUD_TYPES:
        return decode_point_cloud(
            type_id,
            payload,
            scale_m=None if p.scale_m is None else float(p.scale_m),
            channels=p.channels,
            allocate=p.allocate,
        )
    if type_id in IMAGE_TYPES:
        return decode_image(type_id, payload, width=p.width, height=p.height, mode=p.mode)
    if type_id == TypeId.DISTANCE:
        return m.DistanceSensor.decode(payload)
    if type_id == TypeId.OPTICAL_FLOW:
        return m.OpticalFlow.decode(payload)
    if type_id in TARGET_TYPES:
        return decode_targets(type_id, payload)
    raise DecodeError(f"sensor: TypeID {type_id} has no decoder", DropCause.INCONSISTENT)


_NO_PARAMS = SensorParams()
