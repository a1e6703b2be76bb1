"""The world line as Foxglove's 3D messages: transforms, the scene, the trail, the plot series.

Pure: a world line (``WorldSnapshot.to_dict()``, live or read back from a capture) in,
messages out, nothing sent. What the viewer shows is what the line says and nothing more:

- a PROCEED target is ``target/<key>`` (``target/<key>/<track_id>`` for a track) in
  ``map_ned``: its bearing ray from the camera and, when a range exists, a sphere at exactly
  its ``position_ned_m``, labelled with its class, range, age and verdict; a confirmed track
  also has its velocity arrow (one second of travel) and its 2-σ ellipse
  (:mod:`gizmo_host.foxglove.estimate`);
- a target that is not PROCEED has no bearing and no position in the line, so its entity is
  replaced by a label above the vehicle (in ``base_link_frd``) with the HOLD reasons: no point,
  no ray. A target that leaves the line is deleted;
- every target entity carries a ``lifetime`` that ends when the line stops vouching for it
  (``valid_until_ns``): a viewer that stops hearing the host shows no old point as current.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from foxglove.messages import (
    ArrowPrimitive,
    Color,
    CubePrimitive,
    Duration,
    FrameTransform,
    FrameTransforms,
    LinePrimitive,
    Point3,
    Pose,
    Quaternion,
    SceneEntity,
    SceneEntityDeletion,
    SceneEntityDeletionType,
    SceneUpdate,
    SpherePrimitive,
    TextPrimitive,
    Timestamp,
    Vector3,
)

from gizmo_host.foxglove import estimate
from gizmo_host.foxglove import topics as tp
from hil_geometry.rotations import Quat, Vec3, matrix_to_quat, quat_from_euler_zyx_deg

PROCEED = "PROCEED"
RAY_WITHOUT_RANGE_M = 30.0  # a ray with no range is drawn this long
MIN_LIFETIME_NS = 1_000_000  # 0 would mean "forever" to the viewer
GREEN = Color(r=0.15, g=0.85, b=0.3, a=1.0)
RED = Color(r=0.95, g=0.25, b=0.2, a=1.0)
GREY = Color(r=0.7, g=0.7, b=0.7, a=1.0)
RAY_GREEN = Color(r=0.15, g=0.85, b=0.3, a=0.6)
TRAIL_BLUE = Color(r=0.3, g=0.6, b=1.0, a=0.9)
IDENTITY = Quaternion(x=0.0, y=0.0, z=0.0, w=1.0)
# MAVROS: map (ENU) -> map_ned, and base_link_frd -> base_link (FLU); quaternions as (x, y, z, w)
MAP_TO_NED = Quaternion(x=0.7071068, y=0.7071068, z=0.0, w=0.0)
FRD_TO_FLU = Quaternion(x=1.0, y=0.0, z=0.0, w=0.0)
# camera (x optical axis, y right, z down) -> camera_optical (z forward, x right, y down)
_OPTICAL: Quat = matrix_to_quat(((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)))


@dataclass(frozen=True, slots=True)
class CameraMount:
    """The camera on the body (``[camera]``): attitude from FRD, position in FRD, image size."""

    rpy_deg: Vec3 = (0.0, 0.0, 0.0)
    position_frd_m: Vec3 = (0.0, 0.0, 0.0)
    width_px: int = 640
    height_px: int = 480


class Rendered(NamedTuple):
    """One world line's messages, all logged at the line's ``host_ns``."""

    log_ns: int
    tf: FrameTransforms | None  # the pose (and the camera at it); None without a vehicle
    scene: SceneUpdate
    plot: dict[str, Any]
    points: dict[str, Vec3]  # entity id -> the point drawn (what the tests compare)


def timestamp(t_ns: int) -> Timestamp:
    return Timestamp(sec=t_ns // 1_000_000_000, nsec=t_ns % 1_000_000_000)


def _duration(ns: int) -> Duration:
    return Duration(sec=ns // 1_000_000_000, nsec=ns % 1_000_000_000)


def _xyzw(q: Quat) -> Quaternion:
    w, x, y, z = q
    return Quaternion(x=x, y=y, z=z, w=w)


def _vec(v: Sequence[float]) -> Vector3:
    return Vector3(x=float(v[0]), y=float(v[1]), z=float(v[2]))


def _point(v: Sequence[float]) -> Point3:
    return Point3(x=float(v[0]), y=float(v[1]), z=float(v[2]))


def _transform(t_ns: int, parent: str, child: str, xyz: Sequence[float], q: Quaternion) -> Any:
    return FrameTransform(
        timestamp=timestamp(t_ns),
        parent_frame_id=parent,
        child_frame_id=child,
        translation=_vec(xyz),
        rotation=q,
    )


def static_transforms(t_ns: int, camera: CameraMount | None = None) -> FrameTransforms:
    """``map -> map_ned``, ``base_link_frd -> base_link`` and the camera's mount."""
    transforms = [
        _transform(t_ns, tp.FRAME_MAP, tp.FRAME_MAP_NED, (0, 0, 0), MAP_TO_NED),
        _transform(t_ns, tp.FRAME_BODY_FRD, tp.FRAME_BODY, (0, 0, 0), FRD_TO_FLU),
    ]
    if camera is not None:
        transforms += _camera_transforms(t_ns, camera)
    return FrameTransforms(transforms=transforms)


def _camera_transforms(t_ns: int, camera: CameraMount) -> list[Any]:
    mount = _xyzw(quat_from_euler_zyx_deg(camera.rpy_deg))
    return [
        _transform(t_ns, tp.FRAME_BODY_FRD, tp.FRAME_CAMERA, camera.position_frd_m, mount),
        _transform(t_ns, tp.FRAME_CAMERA, tp.FRAME_OPTICAL, (0, 0, 0), _xyzw(_OPTICAL)),
    ]


def _label(target: Mapping[str, Any]) -> str:
    parts = [str(target.get("label") or target["key"])]
    if target.get("range_m") is not None:
        parts.append(f"{target['range_m']:.1f} m")
    if target.get("age_ms") is not None:
        parts.append(f"{target['age_ms']:.0f} ms")
    parts.append(str(target["verdict"]))
    if target["verdict"] != PROCEED and target.get("reasons"):
        parts.append(",".join(target["reasons"]))
    return " ".join(parts)


class SceneRenderer:
    """World lines to messages; remembers only which target ids it drew (to delete them)."""

    def __init__(self, camera: CameraMount | None = None) -> None:
        self.camera = camera
        self._drawn: set[str] = set()
        self._first = True

    def render(self, world: Mapping[str, Any]) -> Rendered:
        host_ns = int(world["host_ns"])
        stamp = timestamp(host_ns)
        lifetime = _duration(max(int(world["valid_until_ns"]) - host_ns, MIN_LIFETIME_NS))
        vehicle = world.get("vehicle")
        entities = [self._vehicle(stamp, world["verdict"])] if vehicle is not None else []
        points: dict[str, Vec3] = {}
        held = 0
        ids: set[str] = set()
        for target in world["targets"]:
            entity_id = estimate.entity_id(target)
            ids.add(entity_id)
            if target["verdict"] == PROCEED and target.get("bearing_ned") is not None:
                entity, point = self._proceed(stamp, lifetime, entity_id, target, vehicle)
                if point is not None:
                    points[entity_id] = point
            else:
                entity = self._held(stamp, lifetime, entity_id, target, held)
                held += 1
            entities.append(entity)
        deletions = [
            SceneEntityDeletion(timestamp=stamp, type=SceneEntityDeletionType.MatchingId, id=i)
            for i in sorted(self._drawn - ids)
        ]
        if self._first:  # a viewer kept open across a restart: start from an empty scene
            deletions.insert(
                0, SceneEntityDeletion(timestamp=stamp, type=SceneEntityDeletionType.All)
            )
            self._first = False
        self._drawn = ids
        return Rendered(
            host_ns,
            self._pose(vehicle),
            SceneUpdate(deletions=deletions, entities=entities),
            plot_series(world),
            points,
        )

    def _pose(self, vehicle: Mapping[str, Any] | None) -> FrameTransforms | None:
        if vehicle is None:
            return None
        t_ns = int(vehicle["time_ns"])
        w, x, y, z = vehicle["quaternion_wxyz"]
        pose = Quaternion(x=x, y=y, z=z, w=w)
        transforms = [
            _transform(t_ns, tp.FRAME_MAP_NED, tp.FRAME_BODY_FRD, vehicle["position_ned_m"], pose)
        ]
        if self.camera is not None:
            transforms += _camera_transforms(t_ns, self.camera)
        return FrameTransforms(transforms=transforms)

    @staticmethod
    def _vehicle(stamp: Timestamp, verdict: str) -> SceneEntity:
        colour = GREEN if verdict == PROCEED else RED
        return SceneEntity(
            timestamp=stamp,
            frame_id=tp.FRAME_BODY_FRD,
            id="vehicle",
            frame_locked=True,
            cubes=[CubePrimitive(size=Vector3(x=0.8, y=0.8, z=0.2), color=GREY)],
            arrows=[
                ArrowPrimitive(
                    pose=Pose(position=Vector3(x=0.0, y=0.0, z=0.0), orientation=IDENTITY),
                    shaft_length=1.0,
                    shaft_diameter=0.08,
                    head_length=0.3,
                    head_diameter=0.2,
                    color=colour,
                )
            ],
        )

    def _proceed(
        self,
        stamp: Timestamp,
        lifetime: Duration,
        entity_id: str,
        target: Mapping[str, Any],
        vehicle: Mapping[str, Any] | None,
    ) -> tuple[SceneEntity, Vec3 | None]:
        bearing = target["bearing_ned"]
        position = target.get("position_ned_m")
        range_m = target.get("range_m")
        point: Vec3 | None = None
        if position is not None and range_m is not None:
            point = (float(position[0]), float(position[1]), float(position[2]))
            # the camera at the capture: the point less the range along the bearing
            origin = [point[i] - range_m * bearing[i] for i in range(3)]
            end = list(point)
        else:
            origin = list(vehicle["position_ned_m"]) if vehicle is not None else [0.0, 0.0, 0.0]
            end = [origin[i] + RAY_WITHOUT_RANGE_M * bearing[i] for i in range(3)]
        spheres = []
        if point is not None:
            spheres.append(
                SpherePrimitive(
                    pose=Pose(position=_vec(point), orientation=IDENTITY),
                    size=Vector3(x=0.6, y=0.6, z=0.6),
                    color=GREEN,
                )
            )
        label_at = [end[0], end[1], end[2] - 1.0]  # a metre above the end (NED: z down)
        arrows, ellipses = estimate.track_primitives(target)
        entity = SceneEntity(
            timestamp=stamp,
            frame_id=tp.FRAME_MAP_NED,
            id=entity_id,
            lifetime=lifetime,
            lines=[
                LinePrimitive(
                    thickness=2.0,
                    scale_invariant=True,
                    points=[_point(origin), _point(end)],
                    color=RAY_GREEN,
                ),
                *ellipses,
            ],
            arrows=arrows,
            spheres=spheres,
            texts=[_text(label_at, _label(target), GREEN)],
        )
        return entity, point

    @staticmethod
    def _held(
        stamp: Timestamp, lifetime: Duration, entity_id: str, target: Mapping[str, Any], row: int
    ) -> SceneEntity:
        """A label above the vehicle, nothing in the world: the line has no position."""
        return SceneEntity(
            timestamp=stamp,
            frame_id=tp.FRAME_BODY_FRD,
            id=entity_id,
            lifetime=lifetime,
            frame_locked=True,
            texts=[_text([0.0, 0.0, -2.0 - 0.8 * row], _label(target), RED)],
        )


def _text(at: Sequence[float], text: str, colour: Color) -> TextPrimitive:
    return TextPrimitive(
        pose=Pose(position=_vec(at), orientation=IDENTITY),
        billboard=True,
        font_size=14.0,
        scale_invariant=True,
        color=colour,
        text=text,
    )


def plot_series(world: Mapping[str, Any]) -> dict[str, Any]:
    """The Plot panel's numbers from a world line: the verdict as 1/0 and the selected (or
    newest) target's age, bearing and range (null when it has none)."""
    targets = world["targets"]
    selected = world.get("selected")
    target = next((t for t in targets if t["key"] == selected), targets[0] if targets else None)
    out: dict[str, Any] = {
        "source": "world",
        "verdict": 1 if world["verdict"] == PROCEED else 0,
        "targets": len(targets),
    }
    for name in ("age_ms", "azimuth_deg", "elevation_deg", "range_m"):
        out[name] = None if target is None else target.get(name)
    return out


def clock_series(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The device clock's offset from a result line: host capture time minus the device's
    capture time, in ms; None before the clock has a sample."""
    capture_ns = result.get("host_capture_ns")
    if capture_ns is None:
        return None
    device_capture_ms = result["device_ms"] - result["result"]["age_ms"]
    return {"source": "result", "clock_offset_ms": round(capture_ns / 1e6 - device_capture_ms, 3)}


class Trail:
    """The vehicle's recent path (bounded): a point each ``min_step_m`` moved."""

    def __init__(self, max_points: int = 600, min_step_m: float = 0.25) -> None:
        self._points: deque[Vec3] = deque(maxlen=max_points)
        self._min_step_sq = min_step_m * min_step_m

    def add(self, position: Sequence[float]) -> None:
        p = (float(position[0]), float(position[1]), float(position[2]))
        if self._points:
            last = self._points[-1]
            if sum((p[i] - last[i]) ** 2 for i in range(3)) < self._min_step_sq:
                return
        self._points.append(p)

    def scene(self, t_ns: int) -> SceneUpdate:
        line = LinePrimitive(
            thickness=2.0,
            scale_invariant=True,
            points=[_point(p) for p in self._points],
            color=TRAIL_BLUE,
        )
        entity = SceneEntity(
            timestamp=timestamp(t_ns), frame_id=tp.FRAME_MAP_NED, id="trail", lines=[line]
        )
        return SceneUpdate(entities=[entity])
