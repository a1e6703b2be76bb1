"""What a camera on the ego vehicle sees of the targets: bearings, pixels, board units, boxes.

The camera is fusion's pinhole model (:class:`fusion.camera.CameraModel`, the ``[camera]``
table), so the bearings in the ground truth are the ones the host's fusion should recover.
Camera axes: x along the optical axis, y to the image's right, z to its bottom; pixels count
from the top-left pixel's centre.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from fusion.camera import CameraModel
from fusion.geometry import (
    Quat,
    Vec3,
    add,
    azimuth_elevation_deg,
    norm,
    quat_multiply,
    quat_rotate,
    quat_rotate_inverse,
    sub,
)
from rfly_link.sim.kinematics import VehicleState
from rfly_link.sim.world import Placed

_IN_FRONT = 1e-6  # camera-axis depth below which a point is behind the camera
_BOARD_HALF = 1000.0


class CameraPose(NamedTuple):
    position_ned_m: Vec3
    quaternion_wxyz: Quat  # camera axes in NED


def camera_pose(
    model: CameraModel, ego: VehicleState, camera_in_body: Quat | None = None
) -> CameraPose:
    """Where the camera is and how it points, from the ego pose and the mount (or gimbal)."""
    offset = quat_rotate(ego.quaternion_wxyz, model.config.mount_position_frd_m)
    mount = camera_in_body or model.mount_quaternion_wxyz
    return CameraPose(add(ego.position_ned_m, offset), quat_multiply(ego.quaternion_wxyz, mount))


def project(model: CameraModel, pose: CameraPose, point_ned_m: Vec3) -> tuple[float, float] | None:
    """Pixel ``(u, v)`` of a world point, or ``None`` behind the camera (not clipped)."""
    x, y, z = quat_rotate_inverse(pose.quaternion_wxyz, sub(point_ned_m, pose.position_ned_m))
    if x <= _IN_FRONT:
        return None
    return (model.cx_px + model.fx_px * y / x, model.cy_px + model.fy_px * z / x)


def inside_image(model: CameraModel, u_px: float, v_px: float) -> bool:
    return 0.0 <= u_px <= model.config.width_px - 1 and 0.0 <= v_px <= model.config.height_px - 1


def board_units(model: CameraModel, u_px: float, v_px: float) -> tuple[float, float]:
    """A pixel as the board's box-centre units, -1000..1000 across the image (UART spec)."""
    w, h = model.config.width_px, model.config.height_px
    return (u_px * 2000 / (w - 1) - _BOARD_HALF, v_px * 2000 / (h - 1) - _BOARD_HALF)


class TargetView(NamedTuple):
    """One target as the camera sees it (unit bearings; ``None`` where it does not apply)."""

    copter_id: int
    range_m: float  # from the camera's origin
    bearing_camera: Vec3
    bearing_frd: Vec3
    bearing_ned: Vec3
    azimuth_deg: float  # of the NED bearing, from north towards east
    elevation_deg: float  # negative below the horizon
    pixel_uv: tuple[float, float] | None  # None behind the camera
    board_xy: tuple[float, float] | None  # box-centre units; None behind the camera
    in_view: bool  # in front of the camera and inside the image

    def to_dict(self) -> dict[str, Any]:
        return {
            "copter_id": self.copter_id,
            "range_m": self.range_m,
            "bearing_camera": list(self.bearing_camera),
            "bearing_frd": list(self.bearing_frd),
            "bearing_ned": list(self.bearing_ned),
            "azimuth_deg": self.azimuth_deg,
            "elevation_deg": self.elevation_deg,
            "pixel_uv": None if self.pixel_uv is None else list(self.pixel_uv),
            "board_xy": None if self.board_xy is None else list(self.board_xy),
            "in_view": self.in_view,
        }


def target_view(
    model: CameraModel,
    ego: VehicleState,
    copter_id: int,
    target_ned_m: Vec3,
    camera_in_body: Quat | None = None,
) -> TargetView:
    pose = camera_pose(model, ego, camera_in_body)
    los = sub(target_ned_m, pose.position_ned_m)
    distance = norm(los)
    if distance == 0.0:
        raise ValueError(f"target {copter_id}: at the camera's origin, no bearing")
    bearing_ned = (los[0] / distance, los[1] / distance, los[2] / distance)
    bearing_camera = quat_rotate_inverse(pose.quaternion_wxyz, bearing_ned)
    azimuth, elevation = azimuth_elevation_deg(bearing_ned)
    pixel = project(model, pose, target_ned_m)
    return TargetView(
        copter_id=copter_id,
        range_m=distance,
        bearing_camera=bearing_camera,
        bearing_frd=quat_rotate_inverse(ego.quaternion_wxyz, bearing_ned),
        bearing_ned=bearing_ned,
        azimuth_deg=azimuth,
        elevation_deg=elevation,
        pixel_uv=pixel,
        board_xy=None if pixel is None else board_units(model, *pixel),
        in_view=pixel is not None and inside_image(model, *pixel),
    )


class ImageBox(NamedTuple):
    """A target's box in pixels, clipped to the image, and the part of it inside the image."""

    copter_id: int
    min_x: float
    min_y: float
    max_x: float
    max_y: float
    visible_fraction: float


def image_box(model: CameraModel, pose: CameraPose, placed: Placed) -> ImageBox | None:
    """The projected box of a vehicle (its 8 corners), or ``None`` when it is not in the image.

    A box with a corner behind the camera is left out: it is at the image's edge at best.
    """
    corners = placed.body.corners_ned(placed.position_ned_m, placed.quaternion_wxyz)
    pixels = [project(model, pose, c) for c in corners]
    if any(p is None for p in pixels):
        return None
    us = [p[0] for p in pixels if p is not None]
    vs = [p[1] for p in pixels if p is not None]
    u0, u1, v0, v1 = min(us), max(us), min(vs), max(vs)
    right, bottom = model.config.width_px - 1.0, model.config.height_px - 1.0
    cu0, cu1 = max(u0, 0.0), min(u1, right)
    cv0, cv1 = max(v0, 0.0), min(v1, bottom)
    if cu0 >= cu1 or cv0 >= cv1:
        return None
    full = (u1 - u0) * (v1 - v0)
    visible = (cu1 - cu0) * (cv1 - cv0) / full if full > 0 else 0.0
    return ImageBox(placed.body.copter_id, cu0, cv0, cu1, cv1, min(1.0, visible))


def direction_ned(pose_quaternion_wxyz: Quat, axis_camera: Vec3 = (1.0, 0.0, 0.0)) -> Vec3:
    """A camera- or sensor-axes direction in NED (the optical axis by default)."""
    d = quat_rotate(pose_quaternion_wxyz, axis_camera)
    n = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    return (d[0] / n, d[1] / n, d[2] / n)
