"""A synthetic camera image of the stand-in's scene: a ground grid and each vehicle as a blob.

Enough for a viewer's boxes to have something to sit on, and cheap (a few milliseconds a frame
at 320x240 with numpy): every pixel's line of sight is worked out once in the sensor's axes;
per frame it is turned into NED, met with the ground plane (a 5 m grid on grey-green, sky
where it does not meet it within ``MAX_GROUND_M``), and each vehicle is filled in as the
ellipse inside its projected box (``views.image_box``, the same box the TypeID 30 sensor
sends, so the board's boxes frame the blobs). The image is ``scale`` times smaller than the
sensor's; its pixels are RGB.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from gizmo_host.rigs.rflysim.bodies import Placed
from gizmo_host.rigs.rflysim.kinematics import SimVehicleState
from gizmo_host.rigs.rflysim.views import camera_pose, image_box
from hil_geometry.pinhole import Pinhole

GRID_M = 5.0
LINE_M = 0.12  # half a grid line's width
MAX_GROUND_M = 300.0
SKY = np.array([150, 190, 235], dtype=np.uint8)
GROUND = np.array([96, 120, 88], dtype=np.uint8)
LINE = np.array([200, 200, 190], dtype=np.uint8)
BLOBS = (
    np.array([230, 60, 40], dtype=np.uint8),
    np.array([40, 90, 230], dtype=np.uint8),
    np.array([240, 180, 30], dtype=np.uint8),
)


class SceneCamera:
    """Renders what ``camera`` on the ego vehicle sees, ``scale`` times smaller."""

    def __init__(self, camera: Pinhole, scale: int = 2, ground_down_m: float = 0.0) -> None:
        if scale < 1:
            raise ValueError(f"scale: expected >= 1, got {scale}")
        self.camera = camera
        self.scale = scale
        self.ground_down_m = ground_down_m
        self.width_px = camera.width_px // scale
        self.height_px = camera.height_px // scale
        # each small pixel's centre in the sensor's pixels, then its ray in sensor FRD
        u = (np.arange(self.width_px) + 0.5) * scale - 0.5
        v = (np.arange(self.height_px) + 0.5) * scale - 0.5
        uu, vv = np.meshgrid(u, v)
        x_right = (uu - camera.cx_px) / camera.fx_px
        y_down = (vv - camera.cy_px) / camera.fy_px
        rays = np.stack([np.ones_like(uu), x_right, y_down], axis=-1)  # FRD: forward, right, down
        self._rays_frd = (rays / np.linalg.norm(rays, axis=-1, keepdims=True)).reshape(-1, 3)
        self._v = vv / scale
        self._u = uu / scale

    def render(self, ego: SimVehicleState, vehicles: Sequence[Placed]) -> npt.NDArray[np.uint8]:
        """The image (H x W x 3, RGB) from ``ego``'s camera."""
        pose = camera_pose(self.camera, ego)
        rays = self._rays_frd @ pose.rotation_ned_from_sensor.T
        origin = pose.position_ned_m
        down = rays[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (self.ground_down_m - origin[2]) / down
        ground = (down > 1e-6) & (t < MAX_GROUND_M)
        north = origin[0] + t * rays[:, 0]
        east = origin[1] + t * rays[:, 1]
        on_line = ground & (
            (np.abs((north + LINE_M) % GRID_M) < 2 * LINE_M)
            | (np.abs((east + LINE_M) % GRID_M) < 2 * LINE_M)
        )
        image = np.empty((rays.shape[0], 3), dtype=np.uint8)
        image[:] = SKY
        image[ground] = GROUND
        image[on_line] = LINE
        image = image.reshape(self.height_px, self.width_px, 3)
        nearest_first = sorted(vehicles, key=lambda p: -_distance(p, origin))
        for placed in nearest_first:  # the far ones first: the near ones cover them
            self._blob(image, pose, placed)
        return image

    def _blob(self, image: npt.NDArray[np.uint8], pose: object, placed: Placed) -> None:
        box = image_box(self.camera, pose, placed)  # type: ignore[arg-type]
        if box is None:
            return
        s = self.scale
        cx, cy = (box.min_x + box.max_x) / 2 / s, (box.min_y + box.max_y) / 2 / s
        rx, ry = (
            max((box.max_x - box.min_x) / 2 / s, 0.5),
            max((box.max_y - box.min_y) / 2 / s, 0.5),
        )
        x0, x1 = max(int(cx - rx), 0), min(int(cx + rx) + 1, self.width_px)
        y0, y1 = max(int(cy - ry), 0), min(int(cy + ry) + 1, self.height_px)
        if x0 >= x1 or y0 >= y1:
            return
        uu = self._u[y0:y1, x0:x1] + 0.5 / s
        vv = self._v[y0:y1, x0:x1] + 0.5 / s
        inside = ((uu - cx) / rx) ** 2 + ((vv - cy) / ry) ** 2 <= 1.0
        image[y0:y1, x0:x1][inside] = BLOBS[placed.body.copter_id % len(BLOBS)]


def _distance(placed: Placed, origin: npt.NDArray[np.float64]) -> float:
    return float(np.linalg.norm(np.asarray(placed.position_ned_m) - origin))
