"""What every Foxglove source (the live server, a recorded capture, a replay's MCAP) must
satisfy, written from the contract (issue 20), not from ``gizmo_host.foxglove``: the topics
and their schemas, a message of each that decodes, and the scene against the world line."""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from tests.support.foxglove_client import decode

# topic -> (message encoding, schema name): the contract, spelled out
SCHEMAS: dict[str, tuple[str, str]] = {
    "/gizmo/tf": ("protobuf", "foxglove.FrameTransforms"),
    "/gizmo/scene": ("protobuf", "foxglove.SceneUpdate"),
    "/gizmo/trail": ("protobuf", "foxglove.SceneUpdate"),
    "/gizmo/camera/image": ("protobuf", "foxglove.RawImage"),
    "/gizmo/camera/annotations": ("protobuf", "foxglove.ImageAnnotations"),
    "/gizmo/lidar": ("protobuf", "foxglove.PointCloud"),
    "/gizmo/log": ("protobuf", "foxglove.Log"),
    "/gizmo/world": ("json", "gizmo_host.world"),
    "/gizmo/result": ("json", "gizmo_host.result"),
    "/gizmo/link": ("json", "gizmo_host.link"),
    "/gizmo/verdict": ("json", "gizmo_host.verdict"),
    "/gizmo/stats": ("json", "gizmo_host.stats"),
    "/gizmo/plot": ("json", "gizmo_host.plot"),
}
CAMERA_TOPICS = {"/gizmo/camera/image", "/gizmo/camera/annotations"}
SENSOR_TOPICS = CAMERA_TOPICS | {"/gizmo/lidar"}  # only with a camera image or a LiDAR


def check_schemas(advertised: Mapping[str, tuple[str, str, str]]) -> None:
    """``advertised``: topic -> (encoding, schema name, schema encoding)."""
    for topic, (encoding, name) in SCHEMAS.items():
        assert topic in advertised, topic
        got_encoding, got_name, schema_encoding = advertised[topic]
        assert (got_encoding, got_name) == (encoding, name), topic
        assert schema_encoding == ("protobuf" if encoding == "protobuf" else "jsonschema"), topic


def check_decoded(topic: str, message: Any) -> None:
    """One decoded message of ``topic`` has the shape its topic promises."""
    if topic == "/gizmo/tf":
        frames = {(t.parent_frame_id, t.child_frame_id) for t in message.transforms}
        assert frames, topic
        assert frames <= {
            ("map", "map_ned"),
            ("base_link_frd", "base_link"),
            ("map_ned", "base_link_frd"),
            ("base_link_frd", "camera"),
            ("camera", "camera_optical"),
        }, frames
    elif topic in ("/gizmo/scene", "/gizmo/trail"):  # empty before the first pose
        for entity in message.entities:
            assert entity.id and entity.frame_id in ("map_ned", "base_link_frd"), entity.id
    elif topic == "/gizmo/camera/image":
        assert message.width > 0 and message.height > 0
        assert len(message.data) == message.step * message.height
    elif topic == "/gizmo/camera/annotations":
        assert message.timestamp.seconds > 0
    elif topic == "/gizmo/log":
        assert message.message
    elif topic == "/gizmo/lidar":
        assert message.frame_id in ("base_link_frd", "map_ned")
        assert message.point_stride == 12 and len(message.data) % 12 == 0 and message.data
        assert [(f.name, f.offset) for f in message.fields] == [("x", 0), ("y", 4), ("z", 8)]
    elif topic == "/gizmo/plot":
        assert message["source"] in ("world", "result")
    else:
        assert message["type"] == topic.removeprefix("/gizmo/"), message


def stamp_ns(stamp: Any) -> int:
    return stamp.seconds * 1_000_000_000 + stamp.nanos


def arrived_whole(
    worlds: list[tuple[int, Any]], scenes: list[tuple[int, Any]]
) -> tuple[list[tuple[int, Any]], list[tuple[int, Any]]]:
    """The worlds and scenes of the log times at which a live viewer got every one of both.
    The server drops for a viewer that falls behind (no viewer holds up another), so a live
    viewer may miss either of a pair, and two snapshots may share a log time (a change and a
    tick): a pair can be compared only where both halves of every snapshot arrived."""
    world_count = Counter(t for t, _ in worlds)
    scene_count = Counter(t for t, _ in scenes)
    whole = {t for t, n in world_count.items() if scene_count[t] == n}
    return [w for w in worlds if w[0] in whole], [s for s in scenes if s[0] in whole]


def check_annotations_on_images(image_times: list[int], annotation_times: list[int]) -> int:
    """Each annotation is logged at its image's log time. A live viewer may miss an image (the
    server drops for a viewer that falls behind), so an annotation whose image did not come
    must lie where this viewer missed images: before its first image (it subscribed between
    an image and that image's annotations) or in a gap of more than 1.5 image periods. Returns
    how many annotations met their image."""
    images = sorted(set(image_times))
    assert len(images) >= 3, "too few images to know their period"
    period = float(np.median(np.diff(images)))
    met = 0
    for t in annotation_times:
        if t in image_times:
            met += 1
            continue
        after = bisect.bisect(images, t)
        if after == 0:
            continue  # before the first image this viewer got
        before_ns = images[after - 1]
        next_ns = images[after] if after < len(images) else None
        assert next_ns is None or next_ns - before_ns > 1.5 * period, (
            f"annotation at {t} on no image, between images {before_ns} and {next_ns} "
            f"(period {period:.0f} ns: none missed there)"
        )
    return met


def check_scene_against_world(
    worlds: Iterable[tuple[int, dict[str, Any]]], scenes: Iterable[tuple[int, Any]]
) -> tuple[int, int]:
    """Each world line and the scene logged at the same time: a PROCEED target's sphere sits
    exactly at its ``position_ned_m``; a target that is not PROCEED has no sphere and no ray.
    Returns (points compared, HOLD targets checked); every world has its scene."""
    by_time: dict[int, list[Any]] = {}
    for t, scene in scenes:  # two snapshots may share a time (a change and a tick): in order
        by_time.setdefault(t, []).append(scene)
    points = held = 0
    for t, world in worlds:
        assert world["host_ns"] == t  # one log time: the snapshot's own
        assert by_time.get(t), f"no scene logged at the world's time {t}"
        scene = by_time[t].pop(0)
        entities = {e.id: e for e in scene.entities}
        for target in world["targets"]:
            track = target["track_id"]
            entity = entities[f"target/{target['key']}" + ("" if track is None else f"/{track}")]
            if target["verdict"] == "PROCEED" and target["position_ned_m"] is not None:
                assert entity.frame_id == "map_ned"
                (sphere,) = entity.spheres
                p = sphere.pose.position
                assert [p.x, p.y, p.z] == target["position_ned_m"]
                assert entity.lines[0].points[-1].x == target["position_ned_m"][0]
                if target["track_state"] == "confirmed":
                    check_estimate(entity, target)
                points += 1
            elif target["verdict"] != "PROCEED":
                assert not entity.spheres and not entity.lines and not entity.cubes
                assert entity.frame_id == "base_link_frd"  # a label by the vehicle only
                held += 1
    return points, held


def check_estimate(entity: Any, target: dict[str, Any]) -> None:
    """A confirmed track's 2-σ ellipse: each point at Mahalanobis distance 2 from its position
    under the horizontal covariance; its velocity arrow one second of travel long."""
    n, e, d = target["position_ned_m"]
    horizontal = np.array(target["covariance_ned"]).reshape(6, 6)[:2, :2]
    (loop,) = entity.lines[1:]
    for p in loop.points:
        gap = np.array([p.x - n, p.y - e])
        assert abs(float(gap @ np.linalg.solve(horizontal, gap)) - 4.0) < 1e-6
        assert p.z == d
    speed = float(np.linalg.norm(target["velocity_ned_m_s"]))
    if speed >= 0.05:
        (arrow,) = entity.arrows
        assert abs(arrow.shaft_length + arrow.head_length - speed) < 1e-9


def decode_json_world(payload: bytes) -> dict[str, Any]:
    world = json.loads(payload)
    assert world["type"] == "world"
    return world


def decode_message(channel: tuple[str, str, bytes], payload: bytes) -> Any:
    encoding, name, schema = channel
    return decode(encoding, name, schema, payload)


def check_capture(path: str, layout_topics: set[str]) -> dict[str, int]:
    """A capture's Foxglove channels read back with the ``mcap`` reader: every one in its
    contract schema, every message decoding from the file's own schema, the scene against the
    world line, and every topic the layout names present (but the sensors the host had not).
    Returns the message count per Foxglove topic."""
    from mcap.reader import make_reader

    counts: dict[str, int] = {}
    worlds, scenes = [], []
    with open(path, "rb") as stream:
        for schema, channel, message in make_reader(stream).iter_messages():
            topic = channel.topic
            if topic not in SCHEMAS:
                continue
            assert schema is not None
            assert (channel.message_encoding, schema.name) == SCHEMAS[topic], topic
            decoded = decode_message(
                (channel.message_encoding, schema.name, schema.data), message.data
            )
            if not counts.get(topic):
                check_decoded(topic, decoded)
            counts[topic] = counts.get(topic, 0) + 1
            if topic == "/gizmo/world":
                worlds.append((message.log_time, decoded))
            elif topic == "/gizmo/scene":
                scenes.append((message.log_time, decoded))
    missing = set(SCHEMAS) - SENSOR_TOPICS - set(counts)
    assert not missing, missing
    assert layout_topics - SENSOR_TOPICS <= set(counts)
    points, _ = check_scene_against_world(worlds, scenes)
    assert points > 0
    return counts
