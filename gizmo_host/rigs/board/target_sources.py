"""Target sources for ``gizmo-host emulate``: what the board would see at each capture.

- :class:`ScenarioSource`: the built-in scenario (``scenario.py``), a function of time;
- :class:`BoxSource`: RflySim TypeID 30 boxes received on a vision-sensor UDP port, decoded by
  rfly_link (fragments reassembled, ``decode_targets``), pixel corners mapped to the board's
  units with the sensor's image size;
- :class:`PoseTargetSource`: vehicle poses from CopterSim (the 168 B or 112 B state of the ego
  vehicle and of the target CopterIDs) and RflySim3D object data on 20006 (``CoptReqData`` /
  ``ObjReqData``: position and box), projected through the simulator's camera
  (:mod:`hil_geometry.pinhole`) mounted on the ego.

The UDP sources keep the newest value of each kind (a reader thread per port, from rfly_link);
a value older than ``max_age_ns`` at the capture is not used, so a simulator that stops sends
the board to "not detected". Every datagram rfly_link rejects is counted in ``stats``. Their
detections carry the instant of what they show (``TargetInView.seen_ns``: the box list's or the
ego's pose's simulation time on the host clock, :class:`SeenClock`), so the frame's ``age_ms``
counts from the image's instant, not the cycle's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from fusion.geometry import Quat, Vec3, quat_from_euler_zyx, quat_normalize
from fusion.simclock import SimClockEstimator
from gizmo_host.rigs.board.builtin_scene import BoardScenario
from gizmo_host.rigs.board.detections import TargetInView
from gizmo_host.rigs.board.projection import camera_pose, pixel_box, project_box
from hil_geometry.pinhole import Pinhole
from rfly_link import messages as m
from rfly_link import ports
from rfly_link.errors import DecodeError, DropCause
from rfly_link.io import Event, ReceiverGroup, UdpReceiver, message_receiver
from rfly_link.messages import TypeId
from rfly_link.reassembly import Reassembler
from rfly_link.sensors import TargetList, decode_targets

DEFAULT_MAX_AGE_NS = 500_000_000
MAX_SEEN_LAG_NS = 100_000_000  # a source timestamp mapped further back than this is not one
DEFAULT_HALF_EXTENT_M: Vec3 = (0.3, 0.3, 0.15)  # a small multicopter
_PoseMessage = m.SOut2Simulator | m.SOut2SimulatorSimpleTime


class TargetSource(Protocol):
    def detections(self, capture_ns: int, t_s: float) -> Sequence[TargetInView]: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def stats(self) -> dict[str, Any]: ...


class ScenarioSource:
    """The built-in scenario, at the time since the emulation started."""

    def __init__(self, scenario: BoardScenario) -> None:
        self.scenario = scenario

    def detections(self, capture_ns: int, t_s: float) -> Sequence[TargetInView]:
        return self.scenario.detections(t_s)

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def stats(self) -> dict[str, Any]:
        return {"kind": "scenario", "targets": [t.name for t in self.scenario.targets]}


class SeenClock:
    """A source's own timestamps (simulation seconds) on the host clock, through fusion's
    lower-envelope estimator: a datagram read late (a busy process) does not make its image
    look later. Without usable timestamps (constant, or mapped more than ``MAX_SEEN_LAG_NS``
    before the arrival) the arrival time stands."""

    def __init__(self) -> None:
        self._clock = SimClockEstimator()

    def seen_ns(self, sim_time_s: float, rx_ns: int) -> int:
        if not (math.isfinite(sim_time_s) and 0.0 <= sim_time_s < 1e9):
            return rx_ns
        mapped = self._clock.observe(round(sim_time_s * 1e9), rx_ns).host_ns
        return mapped if 0 <= rx_ns - mapped <= MAX_SEEN_LAG_NS else rx_ns


class _BoxPipeline:
    """Vision-sensor fragments -> TypeID 30 target lists (runs in the receiver's thread)."""

    def __init__(self) -> None:
        self.reassembler = Reassembler()
        self.decode_failed = 0

    def process(self, data: memoryview, sender: tuple[str, int], now_ns: int) -> list[Event]:
        out = []
        for frame in self.reassembler.feed(data, sender, now_ns):
            try:
                value = decode_targets(TypeId.BOX_TARGETS, frame.payload)
            except DecodeError:
                self.decode_failed += 1
                continue
            out.append(Event(value, sender, 0, now_ns, frame))
        return out

    def drop_counts(self) -> dict[str, int]:
        counts = dict(self.reassembler.stats.drops)
        if self.decode_failed:
            counts[DropCause.DECODE_FAILED.value] = self.decode_failed
        return counts


class BoxSource:
    """TypeID 30 boxes: ``min/max_x/y`` in pixels of a ``width_px`` x ``height_px`` image;
    ``credibility`` (0..1) becomes the confidence (0..100)."""

    def __init__(
        self,
        port: int,
        width_px: int,
        height_px: int,
        *,
        host: str = "127.0.0.1",
        max_age_ns: int = DEFAULT_MAX_AGE_NS,
    ) -> None:
        self.width_px = width_px
        self.height_px = height_px
        self.max_age_ns = max_age_ns
        self._latest: tuple[TargetList, int, int] | None = None  # (list, rx_ns, seen_ns)
        self._clock = SeenClock()
        self.lists = self.outside = 0
        receiver = UdpReceiver(_BoxPipeline(), port=port, host=host, name=f"emulate-boxes-{port}")
        self._io = ReceiverGroup([receiver], self._on_event)

    @property
    def bound_port(self) -> int:
        return self._io.receivers[0].bound_port

    def _on_event(self, event: Event) -> None:
        if isinstance(event.value, TargetList):
            self.lists += 1
            seen = event.rx_ns
            if event.frame is not None:
                seen = self._clock.seen_ns(event.frame.timestamp_s, event.rx_ns)
            self._latest = (event.value, event.rx_ns, seen)

    def detections(self, capture_ns: int, t_s: float) -> Sequence[TargetInView]:
        latest = self._latest
        if latest is None or capture_ns - latest[1] > self.max_age_ns:
            return []
        out = []
        for target in latest[0].targets:
            if not isinstance(target, m.BoxTarget):
                continue
            box = pixel_box(
                target.min_x,
                target.min_y,
                target.max_x,
                target.max_y,
                self.width_px,
                self.height_px,
            )
            if box is None:
                self.outside += 1
                continue
            confidence = target.credibility * 100 if math.isfinite(target.credibility) else 0
            confidence = min(max(round(confidence), 0), 100)
            out.append(TargetInView(str(target.copter_id), box, confidence, latest[2]))
        return out

    async def start(self) -> None:
        await self._io.start()

    async def close(self) -> None:
        await self._io.close()

    def stats(self) -> dict[str, Any]:
        return {
            "kind": "boxes",
            "lists": self.lists,
            "boxes_outside": self.outside,
            "receivers": self._io.stats(),
        }


class _Pose:
    __slots__ = ("half_extent_m", "position_ned_m", "quaternion_wxyz", "rx_ns", "seen_ns")

    def __init__(
        self,
        position: Vec3,
        quaternion: Quat | None,
        half_extent: Vec3 | None,
        rx_ns: int,
        seen_ns: int | None = None,
    ) -> None:
        self.position_ned_m = position
        self.quaternion_wxyz = quaternion
        self.half_extent_m = half_extent
        self.rx_ns = rx_ns
        self.seen_ns = rx_ns if seen_ns is None else seen_ns


def _vec3(values: Sequence[float]) -> Vec3:
    return (float(values[0]), float(values[1]), float(values[2]))


def _attitude(quaternion: Sequence[float] | None, euler_rad: Sequence[float]) -> Quat | None:
    """The attitude from a quaternion when it is one, else from roll, pitch, yaw."""
    if quaternion is not None:
        q = (float(quaternion[0]), float(quaternion[1]), float(quaternion[2]), float(quaternion[3]))
        n = math.sqrt(sum(v * v for v in q))
        if math.isfinite(n) and abs(n - 1.0) < 1e-2:
            return quat_normalize(q)
    roll, pitch, yaw = (float(v) for v in euler_rad)
    if not all(math.isfinite(v) for v in (roll, pitch, yaw)):
        return None
    return quat_from_euler_zyx(roll, pitch, yaw)


class PoseTargetSource:
    """Target vehicles' and objects' poses projected through the camera on the ego vehicle.

    ``bind`` maps a port of RflySim's map to the port bound (tests and side-by-side runs
    shift them). RflySim3D positions (``PosUE``, ``boxOrigin``) are taken as NED metres in
    the simulator's world frame, like CopterSim's ``PosE``; ``BoxExtent`` is a half size.
    """

    def __init__(
        self,
        camera: Pinhole,
        *,
        ego: int = 1,
        targets: Sequence[int] = (),
        rflysim3d: bool = False,
        host: str = "127.0.0.1",
        bind: Callable[[int], int] = lambda port: port,
        max_age_ns: int = DEFAULT_MAX_AGE_NS,
        half_extent_m: Vec3 = DEFAULT_HALF_EXTENT_M,
        max_range_m: float = 200.0,
    ) -> None:
        self.camera = camera
        self.ego = ego
        self.max_age_ns = max_age_ns
        self.half_extent_m = half_extent_m
        self.max_range_m = max_range_m
        self._vehicles: dict[int, _Pose] = {}  # CopterSim states
        self._objects: dict[str, _Pose] = {}  # RflySim3D: CopterIDs and scene objects by name
        self._clock = SeenClock()  # the ego's CopterSim time
        self.states = self.objects = 0
        receivers = []
        for copter in dict.fromkeys((ego, *targets)):
            logical = ports.coptersim_state_port(copter)
            receivers.append(
                message_receiver(logical, f"coptersim{copter}", port=bind(logical), host=host)
            )
        if rflysim3d:
            logical = ports.RFLYSIM3D_OUT_PORT
            receivers.append(message_receiver(logical, "rflysim3d", port=bind(logical), host=host))
        self._io = ReceiverGroup(receivers, self._on_event)

    def _on_event(self, event: Event) -> None:
        value, rx_ns = event.value, event.rx_ns
        if isinstance(value, (m.SOut2Simulator, m.SOut2SimulatorSimpleTime)):
            quaternion = value.quaternion_wxyz if isinstance(value, m.SOut2Simulator) else None
            attitude = _attitude(quaternion, value.euler_rad)
            seen = None
            if value.copter_id == self.ego:
                seen = self._clock.seen_ns(value.runned_time_s, rx_ns)
            self._vehicles[value.copter_id] = _Pose(
                _vec3(value.position_ned_m), attitude, None, rx_ns, seen
            )
            self.states += 1
        elif isinstance(value, (m.CoptReqData, m.CoptReqDataQuat, m.ObjReqData, m.ObjReqDataQuat)):
            quaternion = getattr(value, "quaternion_wxyz", None)
            origin, extent = _vec3(value.box_origin_m), _vec3(value.box_extent_m)
            center = origin if any(origin) else _vec3(value.position_ue_m)
            if isinstance(value, (m.CoptReqData, m.CoptReqDataQuat)):
                name = str(value.copter_id)
            else:
                name = value.object_name.split(b"\0", 1)[0].decode("utf-8", "replace")
                name = name or f"object{value.seq_id}"
            self._objects[name] = _Pose(
                center, _attitude(quaternion, value.euler), extent if any(extent) else None, rx_ns
            )
            self.objects += 1

    def _fresh(self, pose: _Pose | None, capture_ns: int) -> _Pose | None:
        if pose is None or capture_ns - pose.rx_ns > self.max_age_ns:
            return None
        return pose

    def _ego(self, capture_ns: int) -> _Pose | None:
        for pose in (self._vehicles.get(self.ego), self._objects.get(str(self.ego))):
            fresh = self._fresh(pose, capture_ns)
            if fresh is not None and fresh.quaternion_wxyz is not None:
                return fresh
        return None

    def detections(self, capture_ns: int, t_s: float) -> Sequence[TargetInView]:
        ego = self._ego(capture_ns)
        if ego is None or ego.quaternion_wxyz is None:
            return []
        # The image is the ego's view when its pose arrived: that is the capture.
        camera_at = camera_pose(self.camera, ego.position_ned_m, ego.quaternion_wxyz)
        targets: dict[str, tuple[Vec3, Vec3]] = {}
        for name, pose in self._objects.items():
            fresh = self._fresh(pose, capture_ns)
            if fresh is not None and name != str(self.ego):
                targets[name] = (fresh.position_ned_m, fresh.half_extent_m or self.half_extent_m)
        for copter, pose in self._vehicles.items():
            fresh = self._fresh(pose, capture_ns)
            if fresh is not None and copter != self.ego:
                known = targets.get(str(copter))
                extent = known[1] if known is not None else self.half_extent_m
                targets[str(copter)] = (fresh.position_ned_m, extent)
        out = []
        for name, (center, extent) in sorted(targets.items()):
            box = project_box(self.camera, camera_at, center, extent, max_range_m=self.max_range_m)
            if box is not None:
                out.append(TargetInView(name, box, 87, ego.seen_ns))
        return out

    async def start(self) -> None:
        await self._io.start()

    async def close(self) -> None:
        await self._io.close()

    def stats(self) -> dict[str, Any]:
        return {
            "kind": "poses",
            "states": self.states,
            "objects": self.objects,
            "receivers": self._io.stats(),
        }
