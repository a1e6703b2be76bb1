"""World poses to the board's boxes: the inverse of fusion's camera model, sans-I/O.

The camera is fusion's (:class:`fusion.camera.CameraModel`, from the same ``[camera]`` table),
mounted on the ego vehicle: its position is the vehicle's plus the mount offset (body FRD), its
attitude the vehicle's (FRD in NED) times the mount's. A target is an axis-aligned box in NED
(centre and half extents); its eight corners go to camera axes (x along the optical axis, y to
the image's right, z down the image), then to pixels by ``u = cx + fx·y/x``, ``v = cy + fy·z/x``:
exactly what ``CameraModel.ray_camera`` undoes. The box is the corners' bounding rectangle,
clipped to the image; a target is in view when its centre is in front of the camera, within
``max_range_m`` and inside the image.
"""

from __future__ import annotations

from fusion.camera import CameraModel
from fusion.geometry import (
    Quat,
    Vec3,
    add,
    norm,
    quat_multiply,
    quat_rotate,
    quat_rotate_inverse,
    sub,
)
from gizmo_host.wire.results import NormBox, PixelBox

NEAR_M = 0.05  # corners closer to the camera plane than this are not projected
_BOX_CENTRE = 1000
_BOX_SIZE = 2000


def camera_pose(
    camera: CameraModel, ego_position_ned_m: Vec3, ego_quaternion_wxyz: Quat
) -> tuple[Vec3, Quat]:
    """The camera's position in NED and its attitude (camera axes in NED)."""
    offset = quat_rotate(ego_quaternion_wxyz, camera.config.mount_position_frd_m)
    attitude = quat_multiply(ego_quaternion_wxyz, camera.mount_quaternion_wxyz)
    return add(ego_position_ned_m, offset), attitude


def to_pixels(camera: CameraModel, v_camera: Vec3) -> tuple[float, float] | None:
    """Camera-axes vector -> pixel ``(u, v)``, or None behind the camera."""
    x, y, z = v_camera
    if x < NEAR_M:
        return None
    return (camera.cx_px + camera.fx_px * y / x, camera.cy_px + camera.fy_px * z / x)


def project_box(
    camera: CameraModel,
    camera_position_ned_m: Vec3,
    camera_attitude: Quat,
    center_ned_m: Vec3,
    half_extent_m: Vec3,
    *,
    max_range_m: float = 200.0,
) -> NormBox | None:
    """The box a target makes in the image, in the board's units; None when not in view."""
    config = camera.config
    width, height = config.width_px, config.height_px
    to_center = sub(center_ned_m, camera_position_ned_m)
    if norm(to_center) > max_range_m:
        return None
    center = to_pixels(camera, quat_rotate_inverse(camera_attitude, to_center))
    if center is None or not (
        -0.5 <= center[0] <= width - 0.5 and -0.5 <= center[1] <= height - 0.5
    ):
        return None
    us, vs = [center[0]], [center[1]]
    hx, hy, hz = half_extent_m
    for sx in (-hx, hx):
        for sy in (-hy, hy):
            for sz in (-hz, hz):
                corner = add(to_center, (sx, sy, sz))
                pixel = to_pixels(camera, quat_rotate_inverse(camera_attitude, corner))
                if pixel is not None:
                    us.append(pixel[0])
                    vs.append(pixel[1])
    left, right = max(min(us), -0.5), min(max(us), width - 0.5)
    top, bottom = max(min(vs), -0.5), min(max(vs), height - 0.5)
    box = PixelBox(
        center_x_px=(left + right) / 2,
        center_y_px=(top + bottom) / 2,
        width_px=right - left,
        height_px=bottom - top,
    ).to_normalized(width, height)
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
