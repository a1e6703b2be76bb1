"""Image payloads (TypeID 1-4, 8, 9, 40, 41): raw pixels, or JPEG/PNG kept as bytes.

Compressed images are decoded to numpy only on request, through OpenCV from the optional
``images`` extra; raw pixels (``SendProtocol[0]`` = 2) must be exactly W × H × bytes per pixel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from gizmo_core import MissingExtra
from rfly_link.errors import DecodeError, DropCause, InconsistentPayload, WrongLength
from rfly_link.messages import TypeId


class ImageEncoding(Enum):
    RAW = "raw"
    JPEG = "jpeg"
    PNG = "png"


# TypeID -> (numpy dtype, channels) of the raw pixels (VSP 2.1).
_RAW_PIXELS: Mapping[int, tuple[str, int]] = MappingProxyType(
    {
        TypeId.RGB: ("u1", 3),
        TypeId.DEPTH: ("<u2", 1),
        TypeId.GRAY: ("u1", 1),
        TypeId.SEGMENTATION: ("u1", 3),
        TypeId.FISHEYE: ("u1", 3),
        TypeId.GIMBAL: ("u1", 3),
        TypeId.INFRARED_GRAY: ("u1", 1),
        TypeId.INFRARED_COLOUR: ("u1", 3),
    }
)
IMAGE_TYPES = frozenset(_RAW_PIXELS)


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
    pixels: npt.NDArray[Any] | None = None

    def to_numpy(self) -> npt.NDArray[Any]:
        """Pixels as numpy; JPEG/PNG are decoded with OpenCV (install the ``images`` extra)."""
        if self.pixels is not None:
            return self.pixels
        try:
            import cv2  # noqa: PLC0415  (optional extra, imported only when needed)
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise MissingExtra("images", "decoding JPEG/PNG") from exc
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
