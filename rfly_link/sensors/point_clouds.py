"""Decoders for reassembled vision-sensor payloads, chosen by TypeID (VSP 2.1).

Point clouds pick their layout from the exact payload length (DECISIONS.md, point clouds):
``len == prefix + point_count * bytes_per_point`` is checked for every known layout before
``point_count`` is used for anything. Images stay bytes when compressed (JPEG/PNG); they are
decoded to numpy only on request, through OpenCV from the optional ``images`` extra.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from rfly_link import messages as m
from rfly_link import wire
from rfly_link.errors import DecodeError, DropCause, InconsistentPayload, WrongLength

POINT_CLOUD_TYPES = frozenset({7, 20, 21, 22, 23})
IMAGE_TYPES = frozenset({1, 2, 3, 4, 8, 9, 40, 41})
INT16_FULL_SCALE = 32767.0


class PointLayout(Enum):
    """Point-cloud wire layouts: (prefix bytes, point dtype, channels per point)."""

    PREFIX36_INT16_XYZ = (36, "<i2", 3)
    PREFIX36_INT16_XYZS = (36, "<i2", 4)
    PREFIX36_FLOAT32_XYZS = (36, "<f4", 4)
    PREFIX36_FLOAT32_XYZ = (36, "<f4", 3)
    PREFIX28_INT16_XYZ = (28, "<i2", 3)
    PREFIX28_INT16_XYZS = (28, "<i2", 4)

    @property
    def prefix(self) -> wire.Layout:
        return wire.POINT_CLOUD_PREFIX_36 if self.value[0] == 36 else wire.POINT_CLOUD_PREFIX_28

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(self.value[1])

    @property
    def channels(self) -> int:
        return self.value[2]

    @property
    def bytes_per_point(self) -> int:
        return self.dtype.itemsize * self.channels

    @property
    def scaled(self) -> bool:
        """int16 coordinates are scaled by ``otherParams[0] / 32767``; float32 ones are metres."""
        return self.dtype.kind == "i"


# Preference when several layouts fit the same bytes (only plausible for tiny clouds).
_LAYOUT_ORDER = tuple(PointLayout)


@dataclass(frozen=True, slots=True, eq=False)
class PointCloud:
    """A decoded point cloud: ``xyz_m`` is N×3 float32; ``stencil`` holds the N class values as
    sent (int16 for int16 layouts, float32 for float32 ones; zeros for 3-channel layouts).

    ``xyz_m`` may be a strided view (row stride 16 B for 4-channel layouts); use
    ``np.ascontiguousarray`` where a packed array is needed.

    The pose is the one carried with the cloud (VSP 3.4), as sent: position in metres and
    Euler angles roll, pitch, yaw. ``copter_id`` and ``axis_type`` are ``None`` for the older
    28-byte prefix.
    """

    type_id: int
    layout: PointLayout
    copter_id: int | None
    axis_type: int | None
    position_m: tuple[float, float, float]
    euler_rad: tuple[float, float, float]
    scale_m: float | None  # None for float32 layouts, which are metres already
    xyz_m: np.ndarray
    stencil: np.ndarray

    @property
    def point_count(self) -> int:
        return int(self.xyz_m.shape[0])

    def to_dict(self, *, include_points: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "PointCloud",
            "type_id": self.type_id,
            "layout": self.layout.name,
            "copter_id": self.copter_id,
            "axis_type": self.axis_type,
            "position_m": list(self.position_m),
            "euler_rad": list(self.euler_rad),
            "scale_m": self.scale_m,
            "point_count": self.point_count,
        }
        if include_points:
            out["xyz_m"] = self.xyz_m.tolist()
            out["stencil"] = self.stencil.tolist()
        return out


_AXIS_TYPES = frozenset({0, 1, 2})  # vision-sensor protocol 2.3: AxisMask values


def find_point_layouts(payload: bytes | bytearray | memoryview) -> list[PointLayout]:
    """Every layout whose prefix ``point_count`` matches the payload length exactly.

    A 36-byte prefix must also hold a documented ``axis_type`` (0, 1 or 2) and a finite pose:
    the older 28-byte prefix read as a 36-byte one puts float bits there.
    """
    size = len(payload)
    found = []
    for layout in _LAYOUT_ORDER:
        prefix = layout.prefix
        if size < prefix.size:
            continue
        head = prefix.unpack(payload)
        count = head[-1]
        if count < 0 or size != prefix.size + count * layout.bytes_per_point:
            continue
        if prefix.size == 36 and (
            head[1] not in _AXIS_TYPES or not all(map(math.isfinite, (*head[2], *head[3])))
        ):
            continue
        found.append(layout)
    return found


def decode_point_cloud(
    type_id: int,
    payload: bytes | bytearray | memoryview,
    *,
    scale_m: float | None = None,
    channels: int | None = None,
    allocate: Callable[[tuple[int, ...], Any], np.ndarray] | None = None,
) -> PointCloud:
    """Decode TypeID 7/20-23. ``scale_m`` is ``otherParams[0]`` (full-scale range, metres).

    int16 layouts need ``scale_m``: without it the coordinates would not be metres, so the call
    fails (ValueError naming it) rather than returning mislabelled ``xyz_m``.

    ``channels`` (3 or 4, from ``SendProtocol[7]``) only breaks ties between layouts that fit
    the same length. The stencil channel is a class value and is never scaled.
    ``allocate(shape, dtype)`` may supply the float32 output (e.g. ``ArrayPool.take``).
    """
    layouts = find_point_layouts(payload)
    if channels is not None and len(layouts) > 1:
        layouts = [lay for lay in layouts if lay.channels == channels] or layouts
    if not layouts:
        raise InconsistentPayload(
            f"point cloud TypeID {type_id}: {len(payload)} B fits no layout "
            f"(prefix 36 or 28 + point_count * 6/8/12/16)"
        )
    if len({lay.value[0] for lay in layouts}) > 1:
        raise InconsistentPayload(
            f"point cloud TypeID {type_id}: {len(payload)} B fits both the 36- and the 28-byte "
            f"prefix ({', '.join(lay.name for lay in layouts)}): expected exactly one layout; "
            f"pass channels or send_protocol (SendProtocol[7]) to choose"
        )
    layout = layouts[0]  # several left only for an empty cloud, where they agree
    head = layout.prefix.unpack(payload)
    count = head[-1]
    points = np.frombuffer(
        payload, dtype=layout.dtype, count=count * layout.channels, offset=layout.prefix.size
    ).reshape(count, layout.channels)
    if layout.scaled and scale_m is None:
        raise ValueError(
            f"point cloud TypeID {type_id}: layout {layout.name} has int16 points, so scale_m "
            f"(Config.json otherParams[0], metres) is required"
        )
    if layout.scaled:
        # Converting and scaling the whole contiguous block is ~8x faster than working on a
        # strided N×3 slice; the scaled fourth column stays hidden behind the N×3 view.
        if allocate is None:
            block = points.astype(np.float32)
        else:
            block = allocate(points.shape, np.float32)
            np.copyto(block, points, casting="unsafe")
        block *= np.float32(scale_m / INT16_FULL_SCALE)
        xyz = block[:, :3]
    else:
        xyz = points[:, :3]  # already metres: a read-only view, no copy
    # The stencil is a class value as sent (never scaled): a zero-copy view when present.
    stencil = points[:, 3] if layout.channels == 4 else np.zeros(count, dtype=layout.dtype)
    if layout.value[0] == 36:
        copter_id, axis_type, position, euler = head[0], head[1], head[2], head[3]
    else:
        copter_id, axis_type, position, euler = None, None, head[0], head[1]
    return PointCloud(
        type_id,
        layout,
        copter_id,
        axis_type,
        position,
        euler,
        None if scale_m is None else float(scale_m),
        xyz,
        stencil,
    )


def encode_point_cloud(
    layout: PointLayout,
    points: np.ndarray,
    *,
    copter_id: int = 0,
    axis_type: int = 0,
    position_m: Sequence[float] = (0.0, 0.0, 0.0),
    euler_rad: Sequence[float] = (0.0, 0.0, 0.0),
) -> bytes:
    """Build a payload from raw wire points (N×channels of the layout's dtype); for tests/bench."""
    pts = np.ascontiguousarray(points, dtype=layout.dtype)
    if pts.ndim != 2 or pts.shape[1] != layout.channels:
        raise ValueError(f"points: expected N×{layout.channels}, got shape {pts.shape}")
    count = pts.shape[0]
    if layout.value[0] == 36:
        head = layout.prefix.pack([copter_id, axis_type, position_m, euler_rad, count])
    else:
        head = layout.prefix.pack([position_m, euler_rad, count])
    return head + pts.tobytes()


# --- Images ---------------------------------------------------------------------------------


class ImageEncoding(Enum):
    RAW = "raw"
    JPEG = "jpeg"
    PNG = "png"


# TypeID -> (numpy dtype, channels) of the raw pixels (VSP 2.1).
_RAW_PIXELS: Mapping[int, tuple[str, int]] = {
    1: ("u1", 3),
    2: ("<u2", 1),
    3: ("u1", 1),
    4: ("u1", 3),
    8: ("u1", 3),
    9: ("u1", 3),
    40: ("u1", 1),
    41: ("u1", 3),
}


def raw_image_bytes(type_id: int, width: int, height: int) -> int:
    """Size of a raw-pixel (mode 2) frame of an image TypeID."""
    dtype, channels = _RAW_PIXELS[type_id]
    return width * height * channels * np.dtype(dtype).itemsize


@dataclass(frozen=True, slots=True, eq=False)
class Image:
    """An image payload. ``pixels`` is set for raw mode; compressed data stays in ``data``.

    Raw pixels are H×W×3 BGR uint8, H×W uint16 (depth) or H×W uint8 (grey), per TypeID.
    """

    type_id: int
    encoding: ImageEncoding
    data: bytes
    pixels: np.ndarray | None = None

    def to_numpy(self) -> np.ndarray:
        """Pixels as numpy; JPEG/PNG are decoded with OpenCV (install the ``images`` extra)."""
        if self.pixels is not None:
            return self.pixels
        try:
            import cv2  # noqa: PLC0415  (optional extra, imported only when needed)
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError(
                "decoding JPEG/PNG needs OpenCV: pip install 'gizmo-host[images]'"
            ) from exc
        array = cv2.imdecode(np.frombuffer(self.data, np.uint8), cv2.IMREAD_UNCHANGED)
        if array is None:
            raise DecodeError(
                f"image TypeID {self.type_id}: {self.encoding.value} data does not decode",
                DropCause.DECODE_FAILED,
            )
        return array

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "Image",
            "type_id": self.type_id,
            "encoding": self.encoding.value,
            "nbytes": len(self.data),
        }
        if self.pixels is not None:
            out["shape"] = list(self.pixels.shape)
            out["dtype"] = str(self.pixels.dtype)
        return out


def sniff_image(data: bytes | bytearray | memoryview) -> ImageEncoding | None:
    head = bytes(data[:8])
    if head.startswith(b"\xff\xd8\xff"):
        return ImageEncoding.JPEG
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return ImageEncoding.PNG
    return None


def decode_image(
    type_id: int,
    payload: bytes | bytearray | memoryview,
    *,
    width: int | None = None,
    height: int | None = None,
    mode: int | None = None,
) -> Image:
    """Decode an image payload. ``mode`` is ``SendProtocol[0]`` (1 JPEG, 2 raw, 3 PNG).

    Without a mode, JPEG/PNG are recognised by their signature and anything else is treated as
    raw pixels, which needs ``width`` and ``height`` (``DataWidth``/``DataHeight``).
    """
    if type_id not in _RAW_PIXELS:
        raise DecodeError(f"image: TypeID {type_id} is not an image type", DropCause.INCONSISTENT)
    sniffed = sniff_image(payload)
    if mode in (1, 3) or (mode is None and sniffed is not None):
        if sniffed is None:
            raise InconsistentPayload(
                f"image TypeID {type_id}: mode {mode} but no JPEG/PNG signature"
            )
        return Image(type_id, sniffed, bytes(payload))
    dtype, channels = _RAW_PIXELS[type_id]
    if not width or not height:
        raise InconsistentPayload(f"image TypeID {type_id}: raw pixels need width and height")
    expected = raw_image_bytes(type_id, width, height)
    if len(payload) != expected:
        raise WrongLength(
            f"image TypeID {type_id}: raw {width}x{height}x{channels} {dtype} "
            f"needs {expected} B, got {len(payload)}"
        )
    data = bytes(payload)
    shape = (height, width, channels) if channels > 1 else (height, width)
    pixels = np.frombuffer(data, dtype=dtype).reshape(shape)
    return Image(type_id, ImageEncoding.RAW, data, pixels)


# --- Targets (TypeID 30, 31) ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TargetList:
    """TypeID 30 boxes or TypeID 31 relative positions."""

    type_id: int
    targets: tuple[m.BoxTarget, ...] | tuple[m.RadarTarget, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "TargetList",
            "type_id": self.type_id,
            "targets": [t.to_dict() for t in self.targets],
        }


def decode_targets(type_id: int, payload: bytes | bytearray | memoryview) -> TargetList:
    entry = m.BoxTarget if type_id == 30 else m.RadarTarget
    size = entry.LAYOUT.size
    if len(payload) < 4:
        raise WrongLength(f"targets TypeID {type_id}: need 4 B for target_count")
    (count,) = wire.TARGET_COUNT.unpack_from(payload)
    if count < 0 or len(payload) != 4 + count * size:
        raise InconsistentPayload(
            f"targets TypeID {type_id}: target_count {count} needs {4 + max(count, 0) * size} B, "
            f"got {len(payload)}"
        )
    layout = entry.LAYOUT
    targets = tuple(entry(*layout.unpack(payload, 4 + i * size)) for i in range(count))
    return TargetList(type_id, targets)  # type: ignore[arg-type]


def encode_targets(targets: Sequence[m.BoxTarget] | Sequence[m.RadarTarget]) -> bytes:
    return wire.TARGET_COUNT.pack(len(targets)) + b"".join(t.encode() for t in targets)


# --- Dispatch by TypeID -------------------------------------------------------------------------

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
    if type_id == 5:
        return m.DistanceSensor.decode(payload)
    if type_id == 10:
        return m.OpticalFlow.decode(payload)
    if type_id in (30, 31):
        return decode_targets(type_id, payload)
    raise DecodeError(f"sensor: TypeID {type_id} has no decoder", DropCause.INCONSISTENT)
