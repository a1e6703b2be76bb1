"""What a camera on the ego vehicle sees of the targets: bearings, pixels, board units, boxes.

The camera is the simulator's own (:class:`hil_geometry.pinhole.Pinhole`, written from
RflySim's sensor conventions, not from the host's fusion), so the bearings in the ground truth
are lines of sight the host's fusion has to recover, not its own model played back. Camera
axes: x along the optical axis, y to the image's right, z to its bottom; pixels count from the
top-left pixel's centre and the image spans ``[-0.5, width - 0.5]``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from gizmo_host.rigs.rflysim.bodies import Placed
from gizmo_host.rigs.rflysim.kinematics import SimVehicleState
from hil_geometry.pinhole import Array, Pinhole, Pose, rotation_quaternion
from hil_geometry.rotations import (
    Quat,
    Vec3,
    azimuth_elevation_deg,
    quat_rotate,
    quat_rotate_inverse,
)

_BOARD_HALF = 1000.0

CameraPose = Pose


def camera_pose(camera: Pinhole, ego: SimVehicleState, camera_in_body: Quat | None = None) -> Pose:
    """Where the camera is and how it points, from the ego pose and the mount (or gimbal)."""
    mount = None if camera_in_body is None else rotation_quaternion(camera_in_body)
    return camera.pose(ego.position_ned_m, ego.quaternion_wxyz, mount)


def project(camera: Pinhole, pose: Pose, point_ned_m: Vec3) -> tuple[float, float] | None:
    """Pixel ``(u, v)`` of a world point, or ``None`` behind the near plane (not clipped)."""
    return camera.project_point(pose, point_ned_m)


def board_units(camera: Pinhole, u_px: float, v_px: float) -> tuple[float, float]:
    """A pixel as the board's box-centre units, -1000..1000 across the image (UART spec)."""
    w, h = camera.width_px, camera.height_px
    return (u_px * 2000 / (w - 1) - _BOARD_HALF, v_px * 2000 / (h - 1) - _BOARD_HALF)


def _vec3(v: Array) -> Vec3:
    return (float(v[0]), float(v[1]), float(v[2]))


class TargetView(NamedTuple):
    """One target as the camera sees it (unit bearings; ``None`` where it does not apply)."""

    copter_id: int
    range_m: float  # from the camera's origin
    bearing_camera: Vec3
    bearing_frd: Vec3
    bearing_ned: Vec3  # the line of sight to the target's centre
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
    camera: Pinhole,
    ego: SimVehicleState,
    copter_id: int,
    target_ned_m: Vec3,
    camera_in_body: Quat | None = None,
) -> TargetView:
    pose = camera_pose(camera, ego, camera_in_body)
    los = np.asarray(target_ned_m, dtype=np.float64) - pose.position_ned_m
    distance = float(np.linalg.norm(los))
    if distance == 0.0:
        raise ValueError(f"target {copter_id}: at the camera's origin, no bearing")
    bearing_ned = _vec3(los / distance)
    azimuth, elevation = azimuth_elevation_deg(bearing_ned)
    pixel = project(camera, pose, target_ned_m)
    return TargetView(
        copter_id=copter_id,
        range_m=distance,
        bearing_camera=_vec3(pose.rotation_ned_from_sensor.T @ (los / distance)),
        bearing_frd=quat_rotate_inverse(ego.quaternion_wxyz, bearing_ned),
        bearing_ned=bearing_ned,
        azimuth_deg=azimuth,
        elevation_deg=elevation,
        pixel_uv=pixel,
        board_xy=None if pixel is None else board_units(camera, *pixel),
        in_view=pixel is not None and camera.in_image(*pixel),
    )


class ImageBox(NamedTuple):
    """A target's box in pixels, clipped to the image, and the part of it inside the image."""

    copter_id: int
    min_x: float
    min_y: float
    max_x: float
    max_y: float
    visible_fraction: float


def image_box(camera: Pinhole, pose: Pose, placed: Placed) -> ImageBox | None:
    """The projected box of a vehicle (its 8 corners), or ``None`` when it is not in the image.

    A box with a corner nearer than the near plane is left out: it is at the image's edge at
    best.
    """
    corners = placed.body.corners_ned(placed.position_ned_m, placed.quaternion_wxyz)
    uv, _ = camera.project(pose, np.asarray(corners, dtype=np.float64))
    if np.isnan(uv).any():
        return None
    u0, v0 = (float(x) for x in uv.min(axis=0))
    u1, v1 = (float(x) for x in uv.max(axis=0))
    cu0, cv0 = camera.clip(u0, v0)
    cu1, cv1 = camera.clip(u1, v1)
    if cu0 >= cu1 or cv0 >= cv1:
        return None
    full = (u1 - u0) * (v1 - v0)
    visible = (cu1 - cu0) * (cv1 - cv0) / full if full > 0 else 0.0
    return ImageBox(placed.body.copter_id, cu0, cv0, cu1, cv1, min(1.0, visible))


def box_centre_ray_ned(camera: Pinhole, pose: Pose, box: ImageBox) -> Vec3:
    """The line of sight through the centre of an image box (what a detector reports)."""
    return _vec3(camera.ray_ned(pose, (box.min_x + box.max_x) / 2, (box.min_y + box.max_y) / 2))


def direction_ned(pose_quaternion_wxyz: Quat, axis_camera: Vec3 = (1.0, 0.0, 0.0)) -> Vec3:
    """A camera- or sensor-axes direction in NED (the optical axis by default)."""
    d = quat_rotate(pose_quaternion_wxyz, axis_camera)
    n = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    return (d[0] / n, d[1] / n, d[2] / n)
