"""The camera image and the board's boxes on it, each box on the image nearest its capture.

RflySim's own viewer draws boxes on whatever image is newest, so a box lands on an image taken
up to a frame period (and the link's latency) later. Here each box goes to the image whose
timestamp is nearest its capture time: image ``k``'s annotations are sent once image ``k + 1``
arrives (every box captured before the midpoint has arrived by then, or is counted late), with
image ``k``'s timestamp and log time. ``gap_ms_max`` and ``gap_ms_mean`` say how far apart a
box's capture and its image were (at 10 Hz at most half a period, 50 ms).

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


def raw_image(t_ns: int, pixels: npt.NDArray[np.uint8]) -> RawImage:
    """An H x W x 3 RGB image as a ``foxglove.RawImage`` in ``camera_optical``."""
    height, width = int(pixels.shape[0]), int(pixels.shape[1])
    return RawImage(
        timestamp=timestamp(t_ns),
        frame_id=tp.FRAME_OPTICAL,
        width=width,
        height=height,
        encoding="rgb8",
        step=width * 3,
        data=np.ascontiguousarray(pixels, dtype=np.uint8).tobytes(),
    )


class _Image(NamedTuple):
    t_ns: int
    width_px: int
    height_px: int


class BoxMatcher:
    """Boxes in, each image's annotations out once the next image shows which boxes are its."""

    def __init__(self) -> None:
        self._pending: deque[Box] = deque()
        self._image: _Image | None = None  # the newest image, not yet annotated
        self._boundary_ns: int | None = None  # boxes before this went to an earlier image
        self.images = self.annotations = self.boxes = 0
        self.late = self.dropped = 0
        self.gap_ms_max = 0.0
        self._gap_ms_sum = 0.0

    def box(self, box: Box) -> None:
        if self._boundary_ns is not None and box.capture_ns < self._boundary_ns:
            self.late += 1  # its image's annotations have gone
            return
        if len(self._pending) >= MAX_PENDING:
            self._pending.popleft()
            self.dropped += 1
        self._pending.append(box)

    def image(self, t_ns: int, width_px: int, height_px: int) -> tuple[Any, int] | None:
        """A new image at ``t_ns``: the previous image's annotations and log time, if any."""
        self.images += 1
        previous, self._image = self._image, _Image(t_ns, width_px, height_px)
        if previous is None:
            return None
        boundary = (previous.t_ns + t_ns) // 2
        mine = [b for b in self._pending if b.capture_ns < boundary]
        self._pending = deque(b for b in self._pending if b.capture_ns >= boundary)
        self._boundary_ns = boundary
        for b in mine:
            gap_ms = abs(b.capture_ns - previous.t_ns) / 1e6
            self.gap_ms_max = max(self.gap_ms_max, gap_ms)
            self._gap_ms_sum += gap_ms
        self.boxes += len(mine)
        self.annotations += 1
        done = box_annotations(previous.t_ns, previous.width_px, previous.height_px, mine)
        return done, previous.t_ns

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
