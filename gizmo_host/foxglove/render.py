"""Every message the host publishes as the Foxglove topics, for any sink of them.

``FoxgloveRenderer`` is a ``Host`` sink (``Host.add_sink``): it turns results, link events,
verdicts, world snapshots and stats into ``(topic, message, log_ns)`` and hands them to an
``Emitter``: the live server (``server``), a capture (``capture``) or an SDK MCAP file. A
replay feeds it the recorded lines instead (``line``), so a capture and the live view draw
from the same code. Nothing is built for a topic no one wants (``Emitter.wants``): with no
viewer connected a snapshot costs one call per topic.

Log times: a world snapshot's messages (transforms, scene, world, plot) all carry the
snapshot's own ``host_ns``; an image's annotations carry the image's time; the others, the
time the host published them. One clock throughout, host ``time.monotonic_ns()``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from foxglove.messages import Log, LogLevel, PackedElementField, PackedElementFieldNumericType
from foxglove.messages import PointCloud as PointCloudMessage

from fusion import LidarPoints, PointFrame, WorldSnapshot
from gizmo_host.foxglove import topics as tp
from gizmo_host.foxglove.camera import BoxMatcher, box_of, raw_image
from gizmo_host.foxglove.scene import (
    CameraMount,
    SceneRenderer,
    Trail,
    clock_series,
    static_transforms,
    timestamp,
)
from gizmo_host.jsonl import encode_line
from gizmo_host.stream.events import LinkEvent, ReceivedResult
from gizmo_host.stream.store import LinkVerdict

TRAIL_PERIOD_NS = 200_000_000  # the trail is redrawn at most 5 times a second
_WORLD_TOPICS = (tp.WORLD, tp.TF, tp.SCENE, tp.PLOT)
_RESULT_TOPICS = (tp.RESULT, tp.PLOT, tp.ANNOTATIONS)
_HOST_TOPICS = {"result": tp.RESULT, "link": tp.LINK, "verdict": tp.VERDICT, "stats": tp.STATS}


class Emitter(Protocol):
    """Where the messages go: ``message`` is an SDK message (protobuf topics) or the JSON
    bytes of one line (JSON topics)."""

    def wants(self, topic: str) -> bool: ...

    def emit(self, topic: str, message: Any, log_ns: int) -> None: ...


class FoxgloveRenderer:
    """The host's messages in, the topics of ``topics`` out to ``emitter``."""

    def __init__(
        self,
        emitter: Emitter,
        camera: CameraMount | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.emitter = emitter
        self.camera = camera
        self.clock = clock or time.monotonic_ns  # a live sink's publication times
        self.scene = SceneRenderer(camera)
        self.trail = Trail()
        self.boxes = BoxMatcher()
        self._trail_due_ns = 0
        self._verdict: tuple[str, tuple[str, ...]] | None = None
        self._link: tuple[bytes, int] | None = None  # the newest link line, for late viewers
        self.errors = 0  # messages that could not be rendered (counted, never raised)
        self.last_error = ""

    # -- a Host sink -----------------------------------------------------------------------

    def __call__(self, message: Any) -> None:
        try:
            self._host_message(message)
        except Exception as exc:  # a viewer never takes the host down: count it
            self.errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"

    def _host_message(self, message: Any) -> None:
        if isinstance(message, WorldSnapshot):
            if any(map(self.emitter.wants, _WORLD_TOPICS)):
                self.world(message.to_dict(), message.host_ns)
            else:  # no viewer: no line built, the trail and the verdict kept up to date
                vehicle = message.vehicle
                position = None if vehicle is None else vehicle.position_ned_m
                reasons = tuple(r.value for r in message.reasons)
                self._track(position, message.verdict.value, reasons, message.host_ns)
            return
        now_ns = self._now()
        if isinstance(message, ReceivedResult):
            if any(map(self.emitter.wants, _RESULT_TOPICS)):
                self._result(message.to_json_line(now_ns), now_ns)
        elif isinstance(message, LinkEvent):
            self.line("link", message.to_dict(), message.host_ns)
        elif isinstance(message, LinkVerdict):
            self.line("verdict", message.to_dict(), now_ns)
        elif isinstance(message, dict) and message.get("type") == "stats":
            self.line("stats", message, now_ns)

    def _now(self) -> int:
        return self.clock()

    # -- lines (live, or read back from a capture) -----------------------------------------

    def line(self, message_type: str, data: Mapping[str, Any], log_ns: int) -> None:
        """One host line (``result``, ``link``, ``verdict``, ``stats``, ``world``)."""
        if message_type == "world":
            self.world(data, log_ns)
            return
        if message_type == "result":
            self._result(encode_line(dict(data)), log_ns, data)
            return
        topic = _HOST_TOPICS.get(message_type)
        if topic is None:
            return
        emitter = self.emitter
        payload = encode_line(dict(data)).rstrip(b"\n")
        if message_type == "link":
            self._link = (payload, log_ns)
        if emitter.wants(topic):
            emitter.emit(topic, payload, log_ns)
        if message_type == "link" and emitter.wants(tp.LOG):
            text = f"link {data.get('previous')} -> {data.get('state')}: {data.get('reason')}"
            level = LogLevel.Info if data.get("state") == "UP" else LogLevel.Warning
            emitter.emit(tp.LOG, _log(log_ns, level, "link", text), log_ns)

    def _result(self, line: bytes, log_ns: int, data: Mapping[str, Any] | None = None) -> None:
        emitter = self.emitter
        if emitter.wants(tp.RESULT):
            emitter.emit(tp.RESULT, line.rstrip(b"\n"), log_ns)
        wants_plot = emitter.wants(tp.PLOT)
        if not (wants_plot or emitter.wants(tp.ANNOTATIONS)):
            return
        if data is None:
            data = json.loads(line)
        box = box_of(data)
        if box is not None:
            self.boxes.box(box)
        if wants_plot:
            series = clock_series(data)
            if series is not None:
                emitter.emit(tp.PLOT, _json(series), log_ns)

    def world(self, data: Mapping[str, Any], log_ns: int) -> None:
        """A world line: its transforms, scene, trail, plot series, verdict log and the line."""
        emitter = self.emitter
        if emitter.wants(tp.WORLD):
            emitter.emit(tp.WORLD, encode_line(dict(data)).rstrip(b"\n"), log_ns)
        if not (emitter.wants(tp.TF) or emitter.wants(tp.SCENE) or emitter.wants(tp.PLOT)):
            self._after_world(data, log_ns)
            return
        rendered = self.scene.render(data)
        if rendered.tf is not None and emitter.wants(tp.TF):
            emitter.emit(tp.TF, rendered.tf, log_ns)
        if emitter.wants(tp.SCENE):
            emitter.emit(tp.SCENE, rendered.scene, log_ns)
        if emitter.wants(tp.PLOT):
            emitter.emit(tp.PLOT, _json(rendered.plot), log_ns)
        self._after_world(data, log_ns)

    def _after_world(self, data: Mapping[str, Any], log_ns: int) -> None:
        vehicle = data.get("vehicle")
        position = None if vehicle is None else vehicle["position_ned_m"]
        self._track(position, str(data["verdict"]), tuple(data["reasons"]), log_ns)

    def _track(
        self, position: Any, verdict_text: str, reasons: tuple[str, ...], log_ns: int
    ) -> None:
        """The trail and the verdict's log line (kept up to date with no viewer too)."""
        emitter = self.emitter
        if position is not None:
            self.trail.add(position)
            if log_ns >= self._trail_due_ns and emitter.wants(tp.TRAIL):
                self._trail_due_ns = log_ns + TRAIL_PERIOD_NS
                emitter.emit(tp.TRAIL, self.trail.scene(log_ns), log_ns)
        verdict = (verdict_text, reasons)
        if verdict != self._verdict:
            self._verdict = verdict
            if emitter.wants(tp.LOG):
                level = LogLevel.Info if verdict[0] == "PROCEED" else LogLevel.Warning
                text = " ".join([verdict[0], *verdict[1]])
                emitter.emit(tp.LOG, _log(log_ns, level, "world", text), log_ns)

    def latched(self, topic: str) -> None:
        """What a viewer subscribing to ``topic`` should get at once: the static transforms,
        the link's current state (its transitions are rare)."""
        if topic == tp.TF:
            self.static(self.clock())
        elif topic == tp.LINK and self._link is not None and self.emitter.wants(tp.LINK):
            self.emitter.emit(tp.LINK, *self._link)

    # -- sensors ---------------------------------------------------------------------------

    def static(self, log_ns: int) -> None:
        """The static transforms (at start, and for each viewer that subscribes)."""
        if self.emitter.wants(tp.TF):
            self.emitter.emit(tp.TF, static_transforms(log_ns, self.camera), log_ns)

    def image(self, t_ns: int, pixels: npt.NDArray[Any], encoding: str = "rgb8") -> None:
        """A camera image taken at ``t_ns`` (``camera.raw_image``'s encodings); an earlier
        image's boxes go out now that it is known which boxes are nearest it."""
        emitter = self.emitter
        if emitter.wants(tp.IMAGE):
            emitter.emit(tp.IMAGE, raw_image(t_ns, pixels, encoding), t_ns)
        done = self.boxes.image(t_ns, int(pixels.shape[1]), int(pixels.shape[0]))
        if done is not None and emitter.wants(tp.ANNOTATIONS):
            emitter.emit(tp.ANNOTATIONS, done[0], done[1])

    def fusion_input(self, item: Any) -> None:
        """A world model's input (``WorldService.add_input_listener``): its LiDAR points, as
        the model took them (timed, in body FRD or world NED), on ``/gizmo/lidar``."""
        if isinstance(item, LidarPoints) and self.emitter.wants(tp.LIDAR):
            frame = tp.FRAME_BODY_FRD if item.frame is PointFrame.BODY_FRD else tp.FRAME_MAP_NED
            cloud = point_cloud(item.host_ns, item.points_m, frame)
            self.emitter.emit(tp.LIDAR, cloud, item.host_ns)

    def stats(self) -> dict[str, Any]:
        return {"render_errors": self.errors, "camera": self.boxes.stats()}


def point_cloud(t_ns: int, points_m: npt.NDArray[Any], frame_id: str) -> PointCloudMessage:
    """N x 3 points in ``frame_id`` as x, y, z float32."""
    data = np.ascontiguousarray(points_m, dtype="<f4")
    f32 = PackedElementFieldNumericType.Float32
    return PointCloudMessage(
        timestamp=timestamp(t_ns),
        frame_id=frame_id,
        point_stride=12,
        fields=[
            PackedElementField(name="x", offset=0, type=f32),
            PackedElementField(name="y", offset=4, type=f32),
            PackedElementField(name="z", offset=8, type=f32),
        ],
        data=data.tobytes(),
    )


def _log(t_ns: int, level: LogLevel, name: str, text: str) -> Log:
    return Log(timestamp=timestamp(t_ns), level=level, message=text, name=name)


def _json(obj: Mapping[str, Any]) -> bytes:
    return encode_line(dict(obj)).rstrip(b"\n")
