"""A vehicle's ROS 2 topics on Zenoh: each snapshot as ``(key, payload, attachment)`` samples.

``Ros2Publication(style, vehicle, domain, session_id)`` holds the three topics' keys, their
gids and sequence numbers; ``samples(snapshot, source_wall_ns)`` builds what to put. The caller
(``gizmo_host.zenoh.sink``) does the putting on its own thread.
"""

from __future__ import annotations

from typing import NamedTuple

from fusion import WorldSnapshot
from gizmo_host.ros2 import keys
from gizmo_host.ros2.messages import DETECTIONS, POSE, TRACKS, MessageBuilder


class Sample(NamedTuple):
    key: str
    payload: bytes
    attachment: bytes | None  # rmw_zenoh's; None for the bridge


class _Topic:
    __slots__ = ("gid", "key", "seq", "type_name")

    def __init__(self, key: str, type_name: str, gid: bytes) -> None:
        self.key, self.type_name, self.gid, self.seq = key, type_name, gid, 0


class Ros2Publication:
    def __init__(
        self,
        style: str,
        vehicle: str,
        domain: int = 0,
        session_id: str = "",
        builder: MessageBuilder | None = None,
    ) -> None:
        self.style = style
        self.builder = builder or MessageBuilder()
        self.topics: dict[str, _Topic] = {}
        for name, type_name in (("detections", DETECTIONS), ("pose", POSE), ("tracks", TRACKS)):
            topic = keys.topic(vehicle, name)
            key = keys.key_expr(
                style, topic, type_name, self.builder.hash_rihs01(type_name), domain
            )
            self.topics[name] = _Topic(key, type_name, keys.publisher_gid(session_id, key))
        self.skipped = 0  # snapshots without a wall clock

    @property
    def keys(self) -> list[str]:
        return [t.key for t in self.topics.values()]

    def samples(self, snapshot: WorldSnapshot, source_wall_ns: int) -> list[Sample]:
        """The detections (always, possibly empty), the pose (when there is a vehicle) and an
        Odometry per PROCEED track."""
        messages = self.builder.build(snapshot)
        if messages.detections is None:
            self.skipped += 1
            return []
        out = [self._sample("detections", messages.detections, source_wall_ns)]
        if messages.pose is not None:
            out.append(self._sample("pose", messages.pose, source_wall_ns))
        out.extend(self._sample("tracks", track, source_wall_ns) for track in messages.tracks)
        return out

    def _sample(self, name: str, payload: bytes, source_wall_ns: int) -> Sample:
        topic = self.topics[name]
        topic.seq += 1
        if self.style != "rmw_zenoh":
            return Sample(topic.key, payload, None)
        return Sample(topic.key, payload, keys.attachment(topic.seq, source_wall_ns, topic.gid))
