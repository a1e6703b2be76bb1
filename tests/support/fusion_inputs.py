"""Builders for fusion inputs, and the inverse camera projection for synthetic results."""

from __future__ import annotations

import math

from fusion import (
    CameraConfig,
    CameraModel,
    LinkStatus,
    PoseSample,
    VisionObservation,
    WorldConfig,
    WorldModel,
)
from fusion import geometry as g
from gizmo_core import LinkState
from gizmo_core.clock import ClockStatus

MS = 1_000_000

FORWARD_DOWN_45 = CameraConfig(
    width_px=640,
    height_px=480,
    hfov_deg=90.0,
    mount_rpy_deg=(0.0, -45.0, 0.0),
    mount_position_frd_m=(0.1, 0.0, 0.05),
)


def observation(
    capture_ns: int,
    *,
    rx_ns: int | None = None,
    source_id: int = 1,
    result_type: int = 1,
    ident: int = 1,
    tracked: bool = True,
    lost: bool = False,
    has_box: bool = True,
    center: tuple[int, int] = (0, 0),
    size: tuple[int, int] = (100, 80),
    epoch: int = 0,
    clock_locked: bool = True,
    label: str = "red",
    confidence: int = 90,
) -> VisionObservation:
    return VisionObservation(
        source_id=source_id,
        result_type=result_type,
        id=ident,
        label=label,
        confidence=confidence,
        tracked=tracked,
        lost=lost,
        has_box=has_box,
        center_x=center[0],
        center_y=center[1],
        width=size[0],
        height=size[1],
        host_capture_ns=capture_ns,
        host_rx_ns=capture_ns + 20 * MS if rx_ns is None else rx_ns,
        epoch=epoch,
        clock_locked=clock_locked,
    )


def not_detected(capture_ns: int, *, rx_ns: int | None = None, **kw: object) -> VisionObservation:
    """The board's "not detected" frame: flags 06 (lost), result_type 0."""
    return observation(
        capture_ns,
        rx_ns=rx_ns,
        result_type=0,
        ident=0,
        tracked=False,
        lost=True,
        has_box=False,
        **kw,  # type: ignore[arg-type]
    )


def pose(
    t_ns: int,
    *,
    position: g.Vec3 = (0.0, 0.0, -10.0),
    q: g.Quat = g.IDENTITY,
    velocity: g.Vec3 | None = (0.0, 0.0, 0.0),
    epoch: int = 0,
    clock_status: ClockStatus = ClockStatus.LOCKED,
) -> PoseSample:
    return PoseSample(
        host_ns=t_ns,
        sim_time_ns=t_ns,
        epoch=epoch,
        position_ned_m=position,
        quaternion_wxyz=q,
        velocity_ned_m_s=velocity,
        clock_status=clock_status,
    )


def up(t_ns: int = 0) -> LinkStatus:
    return LinkStatus(t_ns, LinkState.UP)


def world(camera: CameraConfig = FORWARD_DOWN_45, **config: object) -> WorldModel:
    return WorldModel(camera, WorldConfig(**config))  # type: ignore[arg-type]


def yaw_quat(yaw_deg: float) -> g.Quat:
    return g.quat_from_euler_zyx(0.0, 0.0, math.radians(yaw_deg))


def board_units(
    camera: CameraModel,
    target_ned: g.Vec3,
    position_ned: g.Vec3,
    q_body: g.Quat,
    camera_in_body: g.Quat | None = None,
) -> tuple[int, int] | None:
    """Where the board reports a world point: the inverse of the camera model, rounded to its
    units as the board rounds; ``None`` when behind the camera or outside the image."""
    origin = g.add(position_ned, g.quat_rotate(q_body, camera.config.mount_position_frd_m))
    v_body = g.quat_rotate_inverse(q_body, g.sub(target_ned, origin))
    v_cam = g.quat_rotate_inverse(camera_in_body or camera.mount_quaternion_wxyz, v_body)
    if v_cam[0] <= 0:
        return None
    u = camera.cx_px + camera.fx_px * v_cam[1] / v_cam[0]
    v = camera.cy_px + camera.fy_px * v_cam[2] / v_cam[0]
    w, h = camera.config.width_px, camera.config.height_px
    if not (0 <= u <= w - 1 and 0 <= v <= h - 1):
        return None
    return (round(u * 2000 / (w - 1) - 1000), round(v * 2000 / (h - 1) - 1000))


def angle_deg(a: g.Vec3, b: g.Vec3) -> float:
    return math.degrees(g.angle_between_rad(a, b))
