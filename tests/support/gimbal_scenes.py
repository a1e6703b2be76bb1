"""Scenes for the world model with a camera on a gimbal, their truth from numpy geometry of
their own (projection, the laser's ray cast), never from fusion's: a vehicle hovering level,
nose north; targets on or above flat ground; the gimbal's true attitude, what its statuses
report and when, and a gimbal laser range cast along its true axis. After red team rt45's
harness.

Camera axes: x optical, y right, z down. A box unit ``c`` in -1000..1000 is the pixel
``(c + 1000)·(extent - 1)/2000``. Angles are Z-Y-X (yaw, pitch, roll) from body FRD.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fusion import (
    CameraConfig,
    GimbalLaserRange,
    GimbalSample,
    LinkStatus,
    PoseSample,
    VisionObservation,
    WorldConfig,
    WorldModel,
    WorldSnapshot,
)
from fusion.tracking import TrackingConfig
from gizmo_core import LinkState, Selector

MS = 1_000_000
T0 = 10_000_000_000
WIDTH_PX, HEIGHT_PX = 640, 480
F_PX = (WIDTH_PX / 2) / math.tan(math.radians(45.0))  # a 90° horizontal field of view
CX_PX, CY_PX = (WIDTH_PX - 1) / 2, (HEIGHT_PX - 1) / 2


def rotation_zyx(roll_deg: float, pitch_deg: float, yaw_deg: float) -> np.ndarray:
    r, p, y = map(math.radians, (roll_deg, pitch_deg, yaw_deg))
    rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    return rz @ ry @ rx


def ray_to_ground(origin: np.ndarray, direction: np.ndarray) -> float:
    return math.inf if direction[2] <= 1e-9 else float(-origin[2] / direction[2])


def ray_to_sphere(origin: np.ndarray, direction: np.ndarray, centre: np.ndarray, r: float) -> float:
    oc = origin - centre
    b = float(oc @ direction)
    disc = b * b - float(oc @ oc) + r * r
    if disc < 0:
        return math.inf
    t = -b - math.sqrt(disc)
    return t if t > 0 else math.inf


@dataclass
class Target:
    ident: int
    position: Callable[[float], np.ndarray]  # seconds -> NED of its box's centre
    radius_m: float = 0.05  # what the laser's ray cast meets
    box_radius_m: float = 0.5  # its box's half size
    # A solid's sizes north, east and down: its box bounds its eight corners' images, and
    # ``position`` is its centroid (``box_radius_m`` is then unused)
    extent_m: tuple[float, float, float] | None = None
    appear_s: float = 0.0  # no box of it before


@dataclass
class Scene:
    targets: list[Target]
    duration_s: float = 4.0
    altitude_m: float = 20.0
    gimbal_rpy: Callable[[float], tuple[float, float, float]] = lambda t: (0.0, -45.0, 0.0)
    status_hz: float = 10.0
    status_lost: Callable[[float], bool] = lambda t: False  # a status (and its laser) lost
    laser: bool = True  # statuses carry the laser's range
    laser_m: Callable[[float], float | None] | None = None  # instead of the ray cast
    capture_hz: float = 30.0
    last_capture_s: float = math.inf  # no capture after it
    transit_ms: float = 15.0
    snapshot_hz: float = 50.0
    world: dict[str, Any] = field(default_factory=dict)
    tracking: bool = True
    selector: Selector | None = None  # the verdict's (default: any target)

    def camera_at(self, t_s: float) -> tuple[np.ndarray, np.ndarray]:
        """The camera's rotation (camera axes to NED) and position at ``t_s``."""
        return rotation_zyx(*self.gimbal_rpy(t_s)), np.array([0.0, 0.0, -self.altitude_m])

    def laser_range(self, t_s: float) -> float | None:
        """What a laser along the camera's true axis measures: the nearest target or ground."""
        rotation, origin = self.camera_at(t_s)
        axis = rotation[:, 0]
        nearest = ray_to_ground(origin, axis)
        for target in self.targets:
            nearest = min(
                nearest, ray_to_sphere(origin, axis, target.position(t_s), target.radius_m)
            )
        return nearest if math.isfinite(nearest) else None


def _box(scene: Scene, target: Target, t_s: float, t_ns: int) -> VisionObservation | None:
    rotation, origin = scene.camera_at(t_s)
    centre = target.position(t_s)
    v = rotation.T @ (centre - origin)
    if v[0] <= 0.1:
        return None
    if target.extent_m is None:
        u_px, v_px = CX_PX + F_PX * v[1] / v[0], CY_PX + F_PX * v[2] / v[0]
        half_deg = math.degrees(math.atan(target.box_radius_m / float(np.linalg.norm(v))))
        width = height = max(4, round(2 * half_deg / 90 * 2000))
    else:
        signs = np.array([(a, b, c) for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)])
        corners = centre + signs * np.array(target.extent_m) / 2
        seen = (rotation.T @ (corners - origin).T).T
        if (seen[:, 0] <= 0.1).any():
            return None
        us, vs = CX_PX + F_PX * seen[:, 1] / seen[:, 0], CY_PX + F_PX * seen[:, 2] / seen[:, 0]
        u_px, v_px = (us.min() + us.max()) / 2, (vs.min() + vs.max()) / 2
        width = max(4, round((us.max() - us.min()) * 2000 / (WIDTH_PX - 1)))
        height = max(4, round((vs.max() - vs.min()) * 2000 / (HEIGHT_PX - 1)))
    cx = round(u_px * 2000 / (WIDTH_PX - 1) - 1000)
    cy = round(v_px * 2000 / (HEIGHT_PX - 1) - 1000)
    if abs(cx) + width / 2 >= 980 or abs(cy) + height / 2 >= 980:
        return None  # at the image's edge: cut off
    return VisionObservation(
        source_id=1, result_type=3, id=target.ident, label="x", confidence=80, tracked=True,
        lost=False, has_box=True, center_x=cx, center_y=cy, width=width, height=height,
        host_capture_ns=t_ns, host_rx_ns=t_ns + round(scene.transit_ms * MS), epoch=0,
        clock_locked=True,
    )  # fmt: skip


def inputs(scene: Scene) -> list[tuple[int, int, Any]]:
    """Every input with its arrival time, in arrival order: poses at 100 Hz (each 1 ms after
    its time), statuses (and laser ranges), boxes."""
    timed: list[tuple[int, int, Any]] = [(T0 - MS, 0, LinkStatus(T0 - MS, LinkState.UP))]
    position = (0.0, 0.0, -scene.altitude_m)
    for k in range(int(scene.duration_s * 100) + 1):
        t_ns = T0 + k * 10 * MS
        sample = PoseSample(t_ns, k * 10 * MS, 0, position, (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
        timed.append((t_ns + MS, len(timed), sample))
    for k in range(int(scene.duration_s * scene.status_hz)):
        t_s = k / scene.status_hz
        t_ns = T0 + round(t_s * 1e9)
        if scene.status_lost(t_s):
            continue
        if scene.laser:  # before the attitude, as the RflySim adapter gives them
            distance = scene.laser_m(t_s) if scene.laser_m else scene.laser_range(t_s)
            timed.append((t_ns, len(timed), GimbalLaserRange(t_ns, distance)))
        timed.append((t_ns, len(timed), GimbalSample(t_ns, scene.gimbal_rpy(t_s))))
    for k in range(int(scene.duration_s * scene.capture_hz)):
        t_s = k / scene.capture_hz + 0.0037
        if t_s > scene.last_capture_s:
            break
        t_ns = T0 + round(t_s * 1e9)
        for target in scene.targets:
            if t_s < target.appear_s:
                continue
            box = _box(scene, target, t_s, t_ns)
            if box is not None:
                timed.append((box.host_rx_ns, len(timed), box))
    return sorted(timed, key=lambda x: (x[0], x[1]))


def scene_model(scene: Scene) -> WorldModel:
    """A world model with the scene's gimbal camera and settings."""
    camera = CameraConfig(
        width_px=WIDTH_PX, height_px=HEIGHT_PX, hfov_deg=90.0, on_gimbal=True,
        mount_rpy_deg=(0.0, -45.0, 0.0), mount_position_frd_m=(0.0, 0.0, 0.0),
    )  # fmt: skip
    return WorldModel(
        camera,
        WorldConfig(pose_required=True, **scene.world),
        tracking=TrackingConfig() if scene.tracking else None,
        selector=scene.selector,
    )


def snapshots(scene: Scene, model: WorldModel) -> Iterator[tuple[int, WorldSnapshot]]:
    """The scene through ``model``: each snapshot, with its time."""
    period_ns = round(1e9 / scene.snapshot_hz)
    items = inputs(scene)
    i = 0
    for now_ns in range(T0, T0 + round(scene.duration_s * 1e9) + 300 * MS, period_ns):
        while i < len(items) and items[i][0] <= now_ns:
            model.apply(items[i][2])
            i += 1
        yield now_ns, model.snapshot(now_ns)


def run(scene: Scene) -> tuple[WorldModel, list[tuple[int, Any]]]:
    """The scene through a world model with a gimbal camera; every snapshot's targets."""
    model = scene_model(scene)
    lines = [
        (now, target) for now, snapshot in snapshots(scene, model) for target in snapshot.targets
    ]
    return model, lines


def proceed_errors(scene: Scene, lines: list[tuple[int, Any]]) -> list[tuple[float, float]]:
    """Each PROCEED line's position error from its target's truth at its capture (m), and its
    Mahalanobis distance under the claimed position covariance (inf without one)."""
    truth = {target.ident: target for target in scene.targets}
    out = []
    for _, line in lines:
        if line.verdict.value != "PROCEED" or line.position_ned_m is None:
            continue
        true_at = truth[line.id].position((line.capture_ns - T0) / 1e9)
        error = np.array(line.position_ned_m) - true_at
        mahalanobis = math.inf
        if line.covariance_ned is not None:
            covariance = np.array(line.covariance_ned).reshape(6, 6)[:3, :3]
            mahalanobis = math.sqrt(float(error @ np.linalg.solve(covariance, error)))
        out.append((float(np.linalg.norm(error)), mahalanobis))
    return out
