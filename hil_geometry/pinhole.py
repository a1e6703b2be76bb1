"""RflySim's vision sensor as a pinhole ``K [R|t]``: world NED points to pixels and back.

The conventions, as RflySim's ``Config.json`` sensor entries state them (README, "Simulator
geometry"):

- the sensor's axes are FRD like the vehicle's: x along the optical axis, y to the image's
  right, z to its bottom;
- ``SensorAngEular`` is roll, pitch, yaw in degrees, applied yaw first (Z-Y-X): the sensor's
  axes in the body are ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``; with ``EularOrQuat > 0.5`` the
  quaternion ``SensorAngQuat`` (w, x, y, z) gives them instead; ``SensorPosXYZ`` is the
  sensor's position in body FRD metres;
- ``CameraFOV`` is the horizontal field of view across the whole image, edge to edge, and
  pixels are square: ``fx = fy = (width / 2) / tan(fov / 2)``;
- pixel ``(u, v)`` counts from the centre of the top-left pixel (OpenCV's convention), so the
  image spans ``[-0.5, width - 0.5]`` and the principal point is its centre,
  ``((width - 1) / 2, (height - 1) / 2)``.

In OpenCV's camera axes (x right, y down, z forward) the projection is ``K [R|t]`` with
``R = AXES @ R_sensor_from_ned`` and ``t = -R @ C`` (``C`` the sensor's position in NED), which
the tests check against ``cv2.projectPoints``. A point projects when its depth along the
optical axis is at least ``NEAR_M``; a pixel is in the image when it lies in the span above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]

NEAR_M = 0.05  # points nearer the sensor's image plane than this do not project
# Sensor FRD axes (forward, right, down) -> OpenCV camera axes (right, down, forward).
AXES_CV_FROM_FRD: Array = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])


def rotation_x(angle_rad: float) -> Array:
    c, s = math.cos(angle_rad), math.sin(angle_rad)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rotation_y(angle_rad: float) -> Array:
    c, s = math.cos(angle_rad), math.sin(angle_rad)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rotation_z(angle_rad: float) -> Array:
    c, s = math.cos(angle_rad), math.sin(angle_rad)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rotation_rpy_deg(rpy_deg: Sequence[float]) -> Array:
    """``Rz(yaw) @ Ry(pitch) @ Rx(roll)``: a mount's axes in the body (``SensorAngEular``)."""
    roll, pitch, yaw = (math.radians(float(a)) for a in rpy_deg)
    return rotation_z(yaw) @ rotation_y(pitch) @ rotation_x(roll)


def rotation_quaternion(q_wxyz: Sequence[float]) -> Array:
    """The rotation of a (w, x, y, z) quaternion, normalised first (``SensorAngQuat``, and a
    vehicle's attitude: FRD axes in NED)."""
    q = np.asarray(q_wxyz, dtype=np.float64)
    n = float(np.linalg.norm(q))
    if not math.isfinite(n) or n == 0.0:
        raise ValueError(f"quaternion: expected a finite non-zero (w, x, y, z), got {q_wxyz}")
    w, x, y, z = q / n
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def rpy_deg_from_rotation(rotation: Array) -> tuple[float, float, float]:
    """Roll, pitch, yaw in degrees of a rotation, the inverse of :func:`rotation_rpy_deg`
    (at pitch ±90° the roll is taken as 0)."""
    r = np.asarray(rotation, dtype=np.float64)
    pitch = math.asin(max(-1.0, min(1.0, -float(r[2, 0]))))
    if abs(float(r[2, 0])) > 1.0 - 1e-12:
        roll, yaw = 0.0, math.atan2(-float(r[0, 1]), float(r[1, 1]))
    else:
        roll = math.atan2(float(r[2, 1]), float(r[2, 2]))
        yaw = math.atan2(float(r[1, 0]), float(r[0, 0]))
    return (math.degrees(roll), math.degrees(pitch), math.degrees(yaw))


class Pose(NamedTuple):
    """Where a sensor is (NED metres) and how it points (its FRD axes in NED)."""

    position_ned_m: Array  # (3,)
    rotation_ned_from_sensor: Array  # (3, 3)


@dataclass(frozen=True, slots=True, eq=False)
class Pinhole:
    """One image sensor: intrinsics in pixels and its mount on the vehicle."""

    width_px: int
    height_px: int
    fx_px: float
    fy_px: float
    cx_px: float
    cy_px: float
    mount_rotation: Array  # the sensor's FRD axes in the body's FRD, (3, 3)
    mount_position_frd_m: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        if self.width_px < 2 or self.height_px < 2:
            raise ValueError(f"image: expected at least 2x2 pixels, got {self.size_text}")
        if not (self.fx_px > 0 and self.fy_px > 0):
            raise ValueError(f"focal length: expected > 0 px, got {self.fx_px}, {self.fy_px}")

    @property
    def size_text(self) -> str:
        return f"{self.width_px}x{self.height_px}"

    @classmethod
    def from_sensor(
        cls,
        width_px: int,
        height_px: int,
        fov_deg: float,
        *,
        rpy_deg: Sequence[float] = (0.0, 0.0, 0.0),
        quaternion_wxyz: Sequence[float] | None = None,
        position_frd_m: Sequence[float] = (0.0, 0.0, 0.0),
    ) -> Pinhole:
        """A ``Config.json`` sensor: ``DataWidth``, ``DataHeight``, ``CameraFOV`` (horizontal,
        degrees), ``SensorAngEular`` (or ``SensorAngQuat`` when given) and ``SensorPosXYZ``."""
        if not 0 < fov_deg < 180:
            raise ValueError(f"CameraFOV: expected 0 < degrees < 180, got {fov_deg}")
        focal = (width_px / 2) / math.tan(math.radians(fov_deg) / 2)
        mount = (
            rotation_rpy_deg(rpy_deg)
            if quaternion_wxyz is None
            else rotation_quaternion(quaternion_wxyz)
        )
        x, y, z = (float(v) for v in position_frd_m)
        return cls(
            width_px,
            height_px,
            focal,
            focal,
            (width_px - 1) / 2,
            (height_px - 1) / 2,
            mount,
            (x, y, z),
        )

    @classmethod
    def from_table(
        cls,
        width_px: int,
        height_px: int,
        *,
        hfov_deg: float | None = None,
        vfov_deg: float | None = None,
        fx_px: float | None = None,
        fy_px: float | None = None,
        cx_px: float | None = None,
        cy_px: float | None = None,
        mount_rpy_deg: Sequence[float] = (0.0, 0.0, 0.0),
        mount_position_frd_m: Sequence[float] = (0.0, 0.0, 0.0),
    ) -> Pinhole:
        """A host-style ``[camera]`` table's values (already checked by its reader): focal
        lengths from the fields of view, edge to edge, unless given in pixels."""
        if fx_px is None:
            if hfov_deg is None:
                raise ValueError("camera: expected hfov_deg or fx_px")
            fx_px = (width_px / 2) / math.tan(math.radians(hfov_deg) / 2)
        if fy_px is None:
            fy_px = (
                fx_px
                if vfov_deg is None
                else (height_px / 2) / math.tan(math.radians(vfov_deg) / 2)
            )
        x, y, z = (float(v) for v in mount_position_frd_m)
        return cls(
            width_px,
            height_px,
            float(fx_px),
            float(fy_px),
            (width_px - 1) / 2 if cx_px is None else float(cx_px),
            (height_px - 1) / 2 if cy_px is None else float(cy_px),
            rotation_rpy_deg(mount_rpy_deg),
            (x, y, z),
        )

    @property
    def intrinsics(self) -> Array:
        """``K``, in OpenCV's camera axes."""
        return np.array(
            [[self.fx_px, 0.0, self.cx_px], [0.0, self.fy_px, self.cy_px], [0.0, 0.0, 1.0]]
        )

    def pose(
        self,
        vehicle_position_ned_m: Sequence[float],
        vehicle_quaternion_wxyz: Sequence[float],
        mount_rotation: Array | None = None,
    ) -> Pose:
        """The sensor's pose on a vehicle (a gimbal's ``mount_rotation`` replaces the mount)."""
        body = rotation_quaternion(vehicle_quaternion_wxyz)
        position = np.asarray(vehicle_position_ned_m, dtype=np.float64)
        offset = body @ np.asarray(self.mount_position_frd_m, dtype=np.float64)
        mount = self.mount_rotation if mount_rotation is None else mount_rotation
        return Pose(position + offset, body @ mount)

    @staticmethod
    def extrinsics(pose: Pose) -> tuple[Array, Array]:
        """``(R, t)``: world NED to OpenCV camera axes, ``x_cv = R @ x_ned + t``."""
        r = AXES_CV_FROM_FRD @ pose.rotation_ned_from_sensor.T
        return r, -r @ pose.position_ned_m

    def project(self, pose: Pose, points_ned_m: Array) -> tuple[Array, Array]:
        """Pixels ``(N, 2)`` and depths along the optical axis ``(N,)`` of NED points ``(N, 3)``;
        a pixel is NaN where its depth is below ``NEAR_M`` (see :meth:`in_front`)."""
        r, t = self.extrinsics(pose)
        cam = np.atleast_2d(np.asarray(points_ned_m, dtype=np.float64)) @ r.T + t
        depth = cam[:, 2]
        homogeneous = cam @ self.intrinsics.T
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # depth ~0: NaN below
            uv = homogeneous[:, :2] / homogeneous[:, 2:3]
        uv[depth < NEAR_M] = np.nan
        return uv, depth

    def project_point(self, pose: Pose, point_ned_m: Sequence[float]) -> tuple[float, float] | None:
        """One point's pixel ``(u, v)``, or None when it is nearer than ``NEAR_M``."""
        uv, depth = self.project(pose, np.asarray([point_ned_m], dtype=np.float64))
        if depth[0] < NEAR_M:
            return None
        return float(uv[0, 0]), float(uv[0, 1])

    def in_image(self, u_px: float, v_px: float) -> bool:
        """Inside the image's span, ``[-0.5, width - 0.5] x [-0.5, height - 0.5]``."""
        return -0.5 <= u_px <= self.width_px - 0.5 and -0.5 <= v_px <= self.height_px - 0.5

    def clip(self, u_px: float, v_px: float) -> tuple[float, float]:
        """A pixel moved to the nearest point of the image's span."""
        return (
            min(max(u_px, -0.5), self.width_px - 0.5),
            min(max(v_px, -0.5), self.height_px - 0.5),
        )

    def ray_ned(self, pose: Pose, u_px: float, v_px: float) -> Array:
        """The unit line of sight through pixel ``(u, v)``, in NED: ``R^T K^-1 (u, v, 1)``."""
        r, _ = self.extrinsics(pose)
        ray = r.T @ np.linalg.solve(self.intrinsics, np.array([u_px, v_px, 1.0]))
        unit: Array = ray / np.linalg.norm(ray)
        return unit


def angle_deg(a: Sequence[float] | Array, b: Sequence[float] | Array) -> float:
    """The angle between two directions, in degrees (atan2 of cross and dot: exact near 0)."""
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return math.degrees(math.atan2(float(np.linalg.norm(np.cross(va, vb))), float(va @ vb)))
