"""The camera: from the board's box units to a ray in camera axes and in body FRD.

Configured once (``[camera]`` in TOML)::

    width_px = 640
    height_px = 480
    hfov_deg = 90.0                       # or fx_px, fy_px, cx_px, cy_px
    mount_rpy_deg = [0.0, -90.0, 0.0]     # roll, pitch, yaw, applied Z-Y-X, from body FRD
    mount_position_frd_m = [0.0, 0.0, 0.1]

Camera axes: x along the optical axis, y to the image's right, z to the image's bottom. A
vector ``v`` in camera axes is ``Rz(yaw)·Ry(pitch)·Rx(roll)·v`` in body FRD, so a camera
looking straight down has pitch -90° and the image's top points to the nose. Without
``vfov_deg`` or ``fy_px`` pixels are square. Pixel coordinates count from the top-left pixel's
centre, as the board's scaling does (UART spec, box results): a centre ``c`` in -1000..1000 is
pixel ``(c + 1000)·(extent - 1)/2000``, a size ``s`` in 0..2000 is ``s·extent/2000`` pixels.
``rflysim_sensor`` names a Config.json vision sensor; the app layer resolves it into these
keys and it is kept here for the record only. A user's ``[camera]`` table is checked by the
host's settings table (``gizmo_host.app.settings``) before it gets here; ``__post_init__``
keeps the invariants for programs that build a ``CameraConfig`` themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

from gizmo_core import ConfigError

from .config import MOUNT_POSITION_LIMITS_M, MOUNT_RPY_LIMITS_DEG, integer, number, triple
from .geometry import Quat, Vec3, angle_between_rad, quat_from_euler_zyx_deg, quat_rotate

_MOUNT_LIMITS: Final = {
    "mount_rpy_deg": MOUNT_RPY_LIMITS_DEG,
    "mount_position_frd_m": MOUNT_POSITION_LIMITS_M,
}

# The narrowest field of view taken: half of a far smaller one in radians can round to 0
# (5e-324°), and its tangent is divided by (red team rt32: a traceback at start).
MIN_FOV_DEG: Final = 0.01


# A gimbal's zoom: from a long zoom lens's narrowest field of view to the widest a pinhole
# model serves (a slot holding a field of view in degrees or a zoom factor is no focal length)
FOCAL_FOV_DEG = (0.5, 140.0)
MAX_PIXEL_ASPECT: Final = 2.0


@dataclass(frozen=True, slots=True)
class CameraConfig:
    """The ``[camera]`` table, checked: the intrinsics come from ``hfov_deg`` or ``fx_px``."""

    width_px: int
    height_px: int
    hfov_deg: float | None = None
    vfov_deg: float | None = None
    fx_px: float | None = None
    fy_px: float | None = None
    cx_px: float | None = None
    cy_px: float | None = None
    mount_rpy_deg: Vec3 = (0.0, 0.0, 0.0)
    mount_position_frd_m: Vec3 = (0.0, 0.0, 0.0)
    on_gimbal: bool = False  # the gimbal's angles replace mount_rpy_deg when they arrive
    rflysim_sensor: int | None = None

    def __post_init__(self) -> None:
        s = "camera"
        integer(s, "width_px", self.width_px, low=2)
        integer(s, "height_px", self.height_px, low=2)
        if (self.hfov_deg is None) == (self.fx_px is None):
            raise ConfigError(
                "camera: expected exactly one of hfov_deg or fx_px, got "
                + ("both" if self.hfov_deg is not None else "neither")
            )
        if self.fx_px is None and self.fy_px is not None:
            raise ConfigError("camera.fy_px: expected only with fx_px (use vfov_deg with hfov)")
        if self.vfov_deg is not None and self.fy_px is not None:
            raise ConfigError("camera: expected at most one of vfov_deg or fy_px, got both")
        for key in ("hfov_deg", "vfov_deg"):
            value = getattr(self, key)
            if value is not None:
                number(s, key, value, low=MIN_FOV_DEG, high=180, open_high=True)
        for key in ("fx_px", "fy_px"):
            value = getattr(self, key)
            if value is not None:
                number(s, key, value, low=0, open_low=True)
        for key in ("cx_px", "cy_px"):
            value = getattr(self, key)
            if value is not None:
                number(s, key, value)
        for key, limits in _MOUNT_LIMITS.items():
            object.__setattr__(self, key, triple(s, key, list(getattr(self, key)), limits))


@dataclass(frozen=True, slots=True)
class CameraModel:
    """Pinhole intrinsics and the mount, precomputed from a :class:`CameraConfig`."""

    config: CameraConfig
    fx_px: float = field(init=False)
    fy_px: float = field(init=False)
    cx_px: float = field(init=False)
    cy_px: float = field(init=False)
    mount_quaternion_wxyz: Quat = field(init=False)
    _u_scale: float = field(init=False, repr=False)
    _v_scale: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        c = self.config
        w, h = c.width_px, c.height_px
        if c.fx_px is not None:
            fx = c.fx_px
        else:
            assert c.hfov_deg is not None  # CameraConfig checked exactly one is set
            fx = (w / 2) / math.tan(math.radians(c.hfov_deg) / 2)
        if c.fy_px is not None:
            fy = c.fy_px
        elif c.vfov_deg is not None:
            fy = (h / 2) / math.tan(math.radians(c.vfov_deg) / 2)
        else:
            fy = fx
        put = object.__setattr__
        put(self, "fx_px", fx)
        put(self, "fy_px", fy)
        put(self, "cx_px", (w - 1) / 2 if c.cx_px is None else c.cx_px)
        put(self, "cy_px", (h - 1) / 2 if c.cy_px is None else c.cy_px)
        put(self, "mount_quaternion_wxyz", quat_from_euler_zyx_deg(c.mount_rpy_deg))
        put(self, "_u_scale", (w - 1) / 2000)
        put(self, "_v_scale", (h - 1) / 2000)

    def plausible_focal(self, fx_px: float | None, fy_px: float | None) -> bool:
        """Whether a gimbal's focal lengths (its zoom) can describe this image: the field of
        view each gives within ``FOCAL_FOV_DEG`` and pixels at most ``MAX_PIXEL_ASPECT`` times
        taller than wide or wider than tall. A status slot that holds something else (the
        slots vary by RflySim version) or a number no lens gives is not a zoom (red team rt16:
        fx = 1e9 placed a target 10 m off, fx = 1 turned a bearing 63°)."""
        low, high = (math.radians(a) / 2 for a in FOCAL_FOV_DEG)
        c = self.config
        for focal, extent in ((fx_px, c.width_px), (fy_px, c.height_px)):
            if focal is not None and not (
                extent / 2 / math.tan(high) <= focal <= extent / 2 / math.tan(low)
            ):
                return False
        if fx_px is not None and fy_px is not None:
            return 1 / MAX_PIXEL_ASPECT <= fy_px / fx_px <= MAX_PIXEL_ASPECT
        return True

    def pixel(self, center_x: float, center_y: float) -> tuple[float, float]:
        """A box centre in the board's units as a pixel position ``(u, v)``."""
        return ((center_x + 1000) * self._u_scale, (center_y + 1000) * self._v_scale)

    def ray_camera(
        self,
        u_px: float,
        v_px: float,
        fx_px: float | None = None,
        fy_px: float | None = None,
    ) -> Vec3:
        """The unit ray through pixel ``(u, v)`` in camera axes (focal lengths overridable:
        a gimbal's zoom changes them)."""
        x = 1.0
        y = (u_px - self.cx_px) / (fx_px or self.fx_px)
        z = (v_px - self.cy_px) / (fy_px or self.fy_px)
        n = math.sqrt(x * x + y * y + z * z)
        return (x / n, y / n, z / n)

    def bearing_camera(
        self,
        center_x: float,
        center_y: float,
        fx_px: float | None = None,
        fy_px: float | None = None,
    ) -> Vec3:
        """The unit ray to a box centre given in the board's units, in camera axes (what
        ``ray_camera`` gives for its ``pixel``, in one call: it runs for every measurement)."""
        y = ((center_x + 1000) * self._u_scale - self.cx_px) / (fx_px or self.fx_px)
        z = ((center_y + 1000) * self._v_scale - self.cy_px) / (fy_px or self.fy_px)
        n = math.sqrt(1.0 + y * y + z * z)
        return (1.0 / n, y / n, z / n)

    def angular_size_deg(
        self,
        width: float,
        height: float,
        fx_px: float | None = None,
        fy_px: float | None = None,
    ) -> tuple[float, float]:
        """A box size in the board's units (0..2000) as angles across the optical axis."""
        w_px = width * self.config.width_px / 2000
        h_px = height * self.config.height_px / 2000
        return (
            math.degrees(2 * math.atan(w_px / (2 * (fx_px or self.fx_px)))),
            math.degrees(2 * math.atan(h_px / (2 * (fy_px or self.fy_px)))),
        )

    def box_cone_rad(
        self,
        center_x: float,
        center_y: float,
        width: float,
        height: float,
        fx_px: float | None = None,
        fy_px: float | None = None,
    ) -> tuple[float, float]:
        """A box (the board's units) as angles from the camera, wherever it lies in the image:
        the half-angle of the largest cone around its centre's ray within it, and its widest
        angle across. From the rays to its edges: ``angular_size_deg`` is the size it would
        have on the optical axis, 3x too large 55° off it (red team rt46)."""
        centre = self.bearing_camera(center_x, center_y, fx_px, fy_px)
        half_w, half_h = width / 2, height / 2
        left = self.bearing_camera(center_x - half_w, center_y, fx_px, fy_px)
        right = self.bearing_camera(center_x + half_w, center_y, fx_px, fy_px)
        top = self.bearing_camera(center_x, center_y - half_h, fx_px, fy_px)
        bottom = self.bearing_camera(center_x, center_y + half_h, fx_px, fy_px)
        inscribed = min(angle_between_rad(centre, edge) for edge in (left, right, top, bottom))
        return inscribed, max(angle_between_rad(left, right), angle_between_rad(top, bottom))

    def to_body(self, v_camera: Vec3, camera_in_body: Quat | None = None) -> Vec3:
        """A camera-axes vector in body FRD, by the mount or by gimbal angles when given."""
        return quat_rotate(camera_in_body or self.mount_quaternion_wxyz, v_camera)
