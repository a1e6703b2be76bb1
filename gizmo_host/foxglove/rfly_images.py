"""RflySim's camera image for the view: one Config.json image sensor received over UDP.

``gizmo-host run --foxglove`` with an image sensor on the vehicle (``[rflysim] config``;
``[camera] rflysim_sensor`` when it names one, else the vehicle's first) receives its frames
with ``rfly_link``'s own receiver (fragments reassembled, a bounded queue that drops the
oldest) and hands each to the renderer as ``/gizmo/camera/image``: raw pixels as they came
(``bgr8``, ``mono8``, ``16UC1``), JPEG or PNG decoded first (OpenCV, the ``images`` extra).
Nothing is decoded while no viewer wants the image or its boxes.

An image's time is its receive time (the last fragment's, host clock): RflySim stamps frames
with its simulation clock, which the host maps for the ranging sensors only, so an image is
drawn a transport delay later than it was taken, and its boxes may land one image early.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rfly_link import io as rio
from rfly_link.config_json import VisionSensorConfig
from rfly_link.sensors.images import Image

ImageSink = Callable[[int, Any, str], None]  # (t_ns, pixels, encoding)


def image_encoding(pixels: Any) -> str | None:
    """The ``foxglove.RawImage`` encoding of RflySim's pixels, None for another layout."""
    if pixels.ndim == 3 and pixels.shape[2] == 3 and pixels.dtype == np.uint8:
        return "bgr8"  # RflySim (OpenCV) order
    if pixels.ndim == 2 and pixels.dtype == np.uint8:
        return "mono8"
    if pixels.ndim == 2 and pixels.dtype == np.dtype("<u2"):
        return "16UC1"
    return None


class RflyImages:
    """Receives ``sensor``'s frames on ``bind``; ``on_image`` gets each one a viewer wants."""

    def __init__(
        self,
        sensor: VisionSensorConfig,
        bind: str,
        allowed_senders: Sequence[str],
        on_image: ImageSink,
        wanted: Callable[[], bool],
    ) -> None:
        self.sensor = sensor
        receivers = rio.vision_sensor_receivers(
            [sensor], host=bind, allowed_senders=list(allowed_senders)
        )
        self.group = rio.ReceiverGroup(receivers, self._event, on_error=self._failed)
        self._on_image, self._wanted = on_image, wanted
        self.images = self.unwanted = self.undecodable = self.errors = 0

    async def start(self) -> None:
        await self.group.start()

    async def close(self) -> None:
        await self.group.close()

    def _event(self, event: rio.Event) -> None:
        value = event.value
        if not isinstance(value, Image):
            self.undecodable += 1
            return
        if not self._wanted():
            self.unwanted += 1
            return
        try:
            pixels = value.to_numpy()
        except Exception:  # a JPEG that does not decode, or no OpenCV: counted
            self.undecodable += 1
            return
        encoding = image_encoding(pixels)
        if encoding is None:
            self.undecodable += 1
            return
        self.images += 1
        self._on_image(event.rx_ns, pixels, encoding)

    def _failed(self, _receiver: object, _exc: Exception) -> None:
        self.errors += 1

    def stats(self) -> dict[str, Any]:
        return {
            "seq_id": self.sensor.seq_id,
            "images": self.images,
            "unwanted": self.unwanted,
            "undecodable": self.undecodable,
            "errors": self.errors,
            "receivers": self.group.stats(),
        }
