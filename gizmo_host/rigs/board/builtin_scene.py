"""The built-in scenario: targets on the ground under a hovering vehicle, sans-I/O.

With no target source named, ``gizmo-host emulate`` plays this. The ego vehicle hovers at
``altitude_m`` over the NED origin, nose north, and the camera (the ``[camera]`` table, or by
default 640x480, 90° across, looking straight down) sees the ground around it:

- copter 2, a pedestrian-sized box, walks an ellipse (11 m north-south, 4 m east-west, 16 s a
  lap): it leaves the top and bottom of the image at each end;
- copter 3, a smaller box, crosses east-west (±15 m, 24 s a lap) 2 m north of the origin.

Both are out of view now and then (at 8 s for instance), so not-detected frames happen too. The
scenario is a pure function of time: the same ``t_s`` gives the same detections.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from fusion.camera import CameraConfig
from fusion.geometry import IDENTITY, Quat, Vec3
from gizmo_host.rigs.board.detections import TargetInView
from gizmo_host.rigs.board.emulate_settings import emulator_camera
from gizmo_host.rigs.board.projection import camera_pose, project_box
from hil_geometry.pinhole import Pinhole

DEFAULT_CAMERA = CameraConfig(
    width_px=640, height_px=480, hfov_deg=90.0, mount_rpy_deg=(0.0, -90.0, 0.0)
)


@dataclass(frozen=True, slots=True)
class ScenarioTarget:
    name: str
    half_extent_m: Vec3
    position_ned_m: Callable[[float], Vec3]  # where it is at t_s
    confidence: int = 87


def _ellipse(t_s: float) -> Vec3:
    phase = 2 * math.pi * t_s / 16.0
    return (11.0 * math.cos(phase), 4.0 * math.sin(phase), -0.9)


def _crossing(t_s: float) -> Vec3:
    return (2.0, 15.0 * math.sin(2 * math.pi * t_s / 24.0), -0.3)


TARGETS = (
    ScenarioTarget("2", (0.3, 0.3, 0.9), _ellipse),
    ScenarioTarget("3", (0.3, 0.2, 0.3), _crossing, confidence=75),
)


class BoardScenario:
    """Ground truth and what the camera makes of it at any time since the start."""

    def __init__(
        self,
        camera: Pinhole | None = None,
        *,
        altitude_m: float = 10.0,
        targets: tuple[ScenarioTarget, ...] = TARGETS,
    ) -> None:
        self.camera = camera or emulator_camera(DEFAULT_CAMERA)
        self.targets = targets
        self.ego_position_ned_m: Vec3 = (0.0, 0.0, -altitude_m)
        self.ego_quaternion_wxyz: Quat = IDENTITY

    def truth(self, t_s: float) -> dict[str, Vec3]:
        """Every target's position (NED, m) at ``t_s``."""
        return {target.name: target.position_ned_m(t_s) for target in self.targets}

    def detections(self, t_s: float) -> list[TargetInView]:
        pose = camera_pose(self.camera, self.ego_position_ned_m, self.ego_quaternion_wxyz)
        out = []
        for target in self.targets:
            box = project_box(self.camera, pose, target.position_ned_m(t_s), target.half_extent_m)
            if box is not None:
                out.append(TargetInView(target.name, box, target.confidence))
        return out
