"""The camera image and the board's boxes on it, each box on the image nearest its capture.

RflySim's own viewer draws boxes on whatever image is newest, so a box lands on an image taken
up to a frame period (and the link's latency) later. Here each box goes to the image whose
timestamp is nearest its capture time: image ``k``'s annotations are sent once image ``k + 2``
arrives (every box captured before the midpoint with image ``k + 1`` has arrived by then, or is
counted late), with image ``k``'s timestamp and log time. ``gap_ms_max`` and ``gap_ms_mean``
say how far apart a box's capture and its image were (half the gap between two images at
most: 50 ms at a steady 10 Hz).

Pure: results and images in, ``(ImageAnnotations, log_ns)`` out; bounded throughout.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from foxglove.messages import (
    Color,
    ImageAnnotations,
    Point2,
    PointsAnnotation,
    PointsAnnotationType,
    RawImage,
    TextAnnotation,
)

from gizmo_host.foxglove import topics as tp
from gizmo_host.foxglove.scene import timestamp

MAX_PENDING = 256  # boxes waiting for their image; beyond, the oldest is dropped (counted)
BOX_COLOUR = Color(r=1.0, g=0.85, b=0.1, a=1.0)
TEXT_BACKGROUND = Color(r=0.0, g=0.0, b=0.0, a=0.6)


class Box(NamedTuple):
    """One board box in the wire's normalised units (-1000..1000 across, 0..2000 wide)."""

    capture_ns: int
    center_x: float
    center_y: float
    width: float
    height: float
    text: str


def box_of(result: Mapping[str, Any]) -> Box | None:
    """A result line's box, or None (no box in its interpretation, or no capture time)."""
    capture_ns = result.get("host_capture_ns")
    raw = result["result"]
    box = raw.get("interpretation", {}).get("box")
    if capture_ns is None or box is None:
        return None
    label = raw["interpretation"].get("label") or raw["interpretation"].get("kind", "")
    text = f"{str(label).lower()} id {raw['id']} {raw['confidence']}%"
    return Box(capture_ns, box["center_x"], box["center_y"], box["width"], box["height"], text)


def raw_image(t_ns: int, pixels: npt.NDArray[Any], encoding: str = "rgb8") -> RawImage:
    """An image (H x W x 3 for ``rgb8``/``bgr8``, H x W for ``mono8``/``16UC1``) as a
    ``foxglove.RawImage`` in ``camera_optical``."""
    height, width = int(pixels.shape[0]), int(pixels.shape[1])
    data = np.ascontiguousarray(pixels)
    return RawImage(
        timestamp=timestamp(t_ns),
        frame_id=tp.FRAME_OPTICAL,
        width=width,
        height=height,
        encoding=encoding,
        step=width * data.itemsize * (data.shape[2] if data.ndim == 3 else 1),
        data=data.tobytes(),
    )


class _Image(NamedTuple):
    t_ns: int
    width_px: int
    height_px: int


class BoxMatcher:
    """Boxes in, each image's annotations out once the images after it show which boxes are
    its: image ``k``'s window runs from the midpoint with image ``k - 1`` (the first image:
    as far before it as the next image is after) to the midpoint with image ``k + 1``, and its
    annotations go out when image ``k + 2`` arrives, so a box may reach the host up to one and
    a half image periods after its capture and still land on its image. A box later than
    that, or captured before the first image's window, is counted late, never drawn on an
    image further from it."""

    def __init__(self) -> None:
        self._pending: deque[Box] = deque()
        self._images: deque[_Image] = deque()  # not yet annotated, oldest first (at most 2)
        self._lower_ns: int | None = None  # boxes before this had their image already
        self.images = self.annotations = self.boxes = 0
        self.late = self.dropped = 0
        self.gap_ms_max = 0.0
        self._gap_ms_sum = 0.0

    def box(self, box: Box) -> None:
        if self._lower_ns is not None and box.capture_ns < self._lower_ns:
            self.late += 1  # its image's annotations have gone
            return
        if len(self._pending) >= MAX_PENDING:
            self._pending.popleft()
            self.dropped += 1
        self._pending.append(box)

    def image(self, t_ns: int, width_px: int, height_px: int) -> tuple[Any, int] | None:
        """A new image at ``t_ns``: the annotations and log time of the image two before it,
        if any."""
        self.images += 1
        self._images.append(_Image(t_ns, width_px, height_px))
        if len(self._images) < 3:
            return None
        image, after = self._images.popleft(), self._images[0]
        upper = (image.t_ns + after.t_ns) // 2
        lower = image.t_ns - (after.t_ns - image.t_ns) // 2
        lower = lower if self._lower_ns is None else self._lower_ns
        mine = [b for b in self._pending if lower <= b.capture_ns < upper]
        self.late += sum(b.capture_ns < lower for b in self._pending)
        self._pending = deque(b for b in self._pending if b.capture_ns >= upper)
        self._lower_ns = upper
        for b in mine:
            gap_ms = abs(b.capture_ns - image.t_ns) / 1e6
            self.gap_ms_max = max(self.gap_ms_max, gap_ms)
            self._gap_ms_sum += gap_ms
        self.boxes += len(mine)
        self.annotations += 1
        done = box_annotations(image.t_ns, image.width_px, image.height_px, mine)
        return done, image.t_ns

    def stats(self) -> dict[str, Any]:
        mean = self._gap_ms_sum / self.boxes if self.boxes else None
        return {
            "images": self.images,
            "annotations": self.annotations,
            "boxes": self.boxes,
            "boxes_late": self.late,
            "boxes_dropped": self.dropped,
            "gap_ms_max": round(self.gap_ms_max, 3),
            "gap_ms_mean": None if mean is None else round(mean, 3),
        }


def box_annotations(t_ns: int, width_px: int, height_px: int, boxes: list[Box]) -> ImageAnnotations:
    """Each box as a closed outline with its label, in the image's pixels."""
    stamp = timestamp(t_ns)
    outlines, texts = [], []
    sx, sy = (width_px - 1) / 2000, (height_px - 1) / 2000
    for b in boxes:
        cx, cy = (b.center_x + 1000) * sx, (b.center_y + 1000) * sy
        hw, hh = b.width * width_px / 4000, b.height * height_px / 4000
        corners = [(cx - hw, cy - hh), (cx + hw, cy - hh), (cx + hw, cy + hh), (cx - hw, cy + hh)]
        outlines.append(
            PointsAnnotation(
                timestamp=stamp,
                type=PointsAnnotationType.LineLoop,
                points=[Point2(x=x, y=y) for x, y in corners],
                outline_color=BOX_COLOUR,
                thickness=2.0,
            )
        )
        texts.append(
            TextAnnotation(
                timestamp=stamp,
                position=Point2(x=cx - hw, y=max(0.0, cy - hh - 14)),
                text=b.text,
                font_size=12.0,
                text_color=BOX_COLOUR,
                background_color=TEXT_BACKGROUND,
            )
        )
    return ImageAnnotations(timestamp=stamp, points=outlines, texts=texts)
