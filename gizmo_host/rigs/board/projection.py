"""World poses to the board's boxes, sans-I/O, through the simulator's own camera.

The camera is :class:`hil_geometry.pinhole.Pinhole`, the simulator stand-in's too, written from
RflySim's sensor conventions and not from the host's fusion, so a wrong focal length, pixel
convention or mount order in either model shows up as an error on the host instead of
cancelling out. It is mounted on the ego vehicle: its position is the vehicle's plus the mount
offset (body FRD), its axes the vehicle's times the mount's. A target is an axis-aligned box in
NED (centre and half extents); its eight corners project with ``K [R|t]`` (those nearer than
the near plane are skipped), and the box is the corners' bounding rectangle, clipped to the
image's span ``[-0.5, width - 0.5]``. A target is in view when its centre projects inside the
image and lies within ``max_range_m``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gizmo_host.wire.results import NormBox, PixelBox
from hil_geometry.pinhole import NEAR_M, Pinhole, Pose

__all__ = ["NEAR_M", "camera_pose", "clamp_box", "pixel_box", "project_box"]

_BOX_CENTRE = 1000
_BOX_SIZE = 2000
_CORNER_SIGNS = np.array(
    [[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0) for sz in (-1.0, 1.0)]
)


def camera_pose(
    camera: Pinhole, ego_position_ned_m: Sequence[float], ego_quaternion_wxyz: Sequence[float]
) -> Pose:
    """The camera's position in NED and its axes in NED."""
    return camera.pose(ego_position_ned_m, ego_quaternion_wxyz)


def project_box(
    camera: Pinhole,
    pose: Pose,
    center_ned_m: Sequence[float],
    half_extent_m: Sequence[float],
    *,
    max_range_m: float = 200.0,
) -> NormBox | None:
    """The box a target makes in the image, in the board's units; None when not in view."""
    center = np.asarray(center_ned_m, dtype=np.float64)
    if float(np.linalg.norm(center - pose.position_ned_m)) > max_range_m:
        return None
    points = np.vstack([center, center + _CORNER_SIGNS * np.asarray(half_extent_m)])
    uv, _ = camera.project(pose, points)
    u_c, v_c = float(uv[0, 0]), float(uv[0, 1])
    if np.isnan(u_c) or not camera.in_image(u_c, v_c):
        return None
    seen = uv[~np.isnan(uv[:, 0])]
    left, top = camera.clip(float(seen[:, 0].min()), float(seen[:, 1].min()))
    right, bottom = camera.clip(float(seen[:, 0].max()), float(seen[:, 1].max()))
    box = PixelBox(
        center_x_px=(left + right) / 2,
        center_y_px=(top + bottom) / 2,
        width_px=right - left,
        height_px=bottom - top,
    ).to_normalized(camera.width_px, camera.height_px)
    return clamp_box(box)


def clamp_box(box: NormBox) -> NormBox:
    """A box inside the wire's ranges (rounding may step half a unit outside)."""
    return NormBox(
        center_x=min(max(box.center_x, -_BOX_CENTRE), _BOX_CENTRE),
        center_y=min(max(box.center_y, -_BOX_CENTRE), _BOX_CENTRE),
        width=min(max(box.width, 0), _BOX_SIZE),
        height=min(max(box.height, 0), _BOX_SIZE),
    )


def pixel_box(
    min_x_px: float, min_y_px: float, max_x_px: float, max_y_px: float, width: int, height: int
) -> NormBox | None:
    """A box given by its pixel corners (TypeID 30) in the board's units; None when it lies
    outside the image or has no area."""
    left, right = max(min(min_x_px, max_x_px), -0.5), min(max(min_x_px, max_x_px), width - 0.5)
    top, bottom = max(min(min_y_px, max_y_px), -0.5), min(max(min_y_px, max_y_px), height - 0.5)
    if not (right > left and bottom > top):
        return None
    box = PixelBox((left + right) / 2, (top + bottom) / 2, right - left, bottom - top)
    return clamp_box(box.to_normalized(width, height))
