"""The Foxglove view without a server: the scene against the world line (decoded with
``google.protobuf`` from the SDK's own descriptor set, not read back from our objects), the
frames, the boxes on the nearest image, the capture's view channels, the layout, the flag and
the stand-in's synthetic image."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from foxglove.messages import FrameTransforms, ImageAnnotations, Log, SceneUpdate
from hypothesis import given
from hypothesis import strategies as st
from mcap.reader import make_reader

from fusion import WorldConfig, WorldModel
from fusion.tracking import TrackingConfig
from gizmo_host.app.foxglove_view import add_foxglove_flag
from gizmo_host.app.host_config import config_from_args
from gizmo_host.capture.carried_settings import HostSettings
from gizmo_host.capture.reader import CaptureReader
from gizmo_host.capture.writer import CaptureWriter
from gizmo_host.cli import foxglove_layout, run
from gizmo_host.foxglove import topics
from gizmo_host.foxglove.camera import Box, BoxMatcher
from gizmo_host.foxglove.capture import CaptureEmitter
from gizmo_host.foxglove.layout import layout, layout_text, named_topics
from gizmo_host.foxglove.render import FoxgloveRenderer
from gizmo_host.foxglove.scene import CameraMount, SceneRenderer, static_transforms
from gizmo_host.rigs.rflysim.scenario import build_scenario
from gizmo_host.rigs.rflysim.scene_camera import BLOBS, SKY, SceneCamera
from gizmo_host.rigs.rflysim.sensorset import builtin_config, sensor_camera
from gizmo_host.rigs.rflysim.views import camera_pose, image_box
from tests.support.foxglove_checks import (
    SCHEMAS,
    check_decoded,
    check_estimate,
    check_scene_against_world,
    decode_message,
    stamp_ns,
)
from tests.support.foxglove_client import protobuf_class
from tests.support.fusion_inputs import (
    FORWARD_DOWN_45,
    MS,
    observation,
    pose,
    up,
    world,
    yaw_quat,
)

SCENE = protobuf_class("foxglove.SceneUpdate", SceneUpdate.get_schema().data)
TF = protobuf_class("foxglove.FrameTransforms", FrameTransforms.get_schema().data)
ANNOTATIONS = protobuf_class("foxglove.ImageAnnotations", ImageAnnotations.get_schema().data)


def world_lines(centres: list[tuple[int, int]], yaw_deg: float) -> list[dict]:
    """Real world lines: targets seen at ``centres`` (ground plane ranges them), PROCEED,
    then the same targets stale (HOLD), then forgotten."""
    model = world(ground_plane=True, forget_after_ms=2000)
    model.apply(up(0))
    for t in range(0, 200, 10):
        model.apply(pose(t * MS, q=yaw_quat(yaw_deg)))
    for ident, centre in enumerate(centres, start=1):
        model.apply(observation(150 * MS, center=centre, ident=ident))
    times = (170, 180, 900, 1000, 5000)
    return [model.snapshot(t * MS).to_dict() for t in times]


@given(
    centres=st.lists(
        st.tuples(st.integers(-900, 900), st.integers(-900, 900)), min_size=1, max_size=4
    ),
    yaw_deg=st.floats(-180, 180),
)
def test_a_target_point_is_its_world_position_and_a_hold_has_none(centres, yaw_deg) -> None:
    renderer = SceneRenderer(CameraMount())
    lines = world_lines(centres, yaw_deg)
    scenes = []
    for line in lines:
        rendered = renderer.render(line)
        scenes.append((rendered.log_ns, SCENE.FromString(rendered.scene.encode())))
    points, held = check_scene_against_world([(w["host_ns"], w) for w in lines], scenes)
    proceed = sum(
        t["verdict"] == "PROCEED" and t["position_ned_m"] is not None
        for w in lines
        for t in w["targets"]
    )
    assert points == proceed > 0
    assert held >= len(centres)  # the stale snapshots: every target HOLD, no point
    last = scenes[-1][1]  # the targets forgotten: deleted, nothing left drawn
    assert not [e for e in last.entities if e.id.startswith("target/")]
    assert {d.id for d in last.deletions} == {f"target/1:1:{i}" for i in range(1, len(centres) + 1)}


def test_a_confirmed_track_has_its_velocity_arrow_and_its_two_sigma_ellipse() -> None:
    """Real tracked lines: a target drifting east, seen at 30 Hz, confirmed after 3 frames;
    its ellipse points are 2 σ from its position (numpy's inverse, not the renderer's
    eigenvalues) and its arrow is one second of travel long."""
    model = WorldModel(FORWARD_DOWN_45, WorldConfig(ground_plane=True), tracking=TrackingConfig())
    model.apply(up(0))
    for t in range(0, 400, 10):
        model.apply(pose(t * MS))
    lines = []
    for k in range(10):
        model.apply(observation((100 + 33 * k) * MS, center=(8 * k, 0)))
        lines.append(model.snapshot((101 + 33 * k) * MS).to_dict())
    renderer = SceneRenderer(CameraMount((0.0, -45.0, 0.0)))
    scenes = []
    for line in lines:
        rendered = renderer.render(line)
        scenes.append((rendered.log_ns, SCENE.FromString(rendered.scene.encode())))
    check_scene_against_world([(w["host_ns"], w) for w in lines], scenes)
    confirmed = [(w, s) for w, (_, s) in zip(lines, scenes, strict=True)
                 if w["targets"][0]["track_state"] == "confirmed"]  # fmt: skip
    assert len(confirmed) >= 7
    for world_line, scene in confirmed:
        target = world_line["targets"][0]
        (entity,) = [e for e in scene.entities if e.id == "target/1:1:1/1"]
        check_estimate(entity, target)
        assert entity.arrows and len(entity.lines) == 2


def test_the_first_scene_clears_the_viewer_and_entities_expire_with_the_line() -> None:
    lines = world_lines([(0, 0)], 0.0)
    renderer = SceneRenderer()
    first = SCENE.FromString(renderer.render(lines[0]).scene.encode())
    assert first.deletions[0].type == 1  # ALL: a viewer kept open across a restart
    entity = next(e for e in first.entities if e.id == "target/1:1:1")
    lifetime_ns = entity.lifetime.seconds * 1_000_000_000 + entity.lifetime.nanos
    assert lifetime_ns == lines[0]["valid_until_ns"] - lines[0]["host_ns"] > 0
    second = SCENE.FromString(renderer.render(lines[1]).scene.encode())
    assert all(d.type == 0 for d in second.deletions)


def test_the_frames_follow_mavros() -> None:
    tf = TF.FromString(static_transforms(5, CameraMount((0.0, -90.0, 0.0))).encode())
    by_child = {t.child_frame_id: t for t in tf.transforms}
    q = by_child["map_ned"].rotation
    assert (by_child["map_ned"].parent_frame_id, q.x, q.y, q.z, q.w) == (
        "map",
        pytest.approx(0.7071068),
        pytest.approx(0.7071068),
        0.0,
        0.0,
    )
    q = by_child["base_link"].rotation
    assert (by_child["base_link"].parent_frame_id, q.x, q.y, q.z, q.w) == (
        "base_link_frd",
        1.0,
        0.0,
        0.0,
        0.0,
    )
    # the camera pitched -90°: a quarter turn about the body's y axis
    q = by_child["camera"].rotation
    assert (q.x, q.y, q.z, q.w) == pytest.approx((0.0, -(0.5**0.5), 0.0, 0.5**0.5))
    line = world_lines([(0, 0)], 30.0)[0]
    pose_tf = TF.FromString(SceneRenderer().render(line).tf.encode()).transforms[0]  # type: ignore[union-attr]
    vehicle = line["vehicle"]
    assert (pose_tf.parent_frame_id, pose_tf.child_frame_id) == ("map_ned", "base_link_frd")
    t, r = pose_tf.translation, pose_tf.rotation
    assert [t.x, t.y, t.z] == vehicle["position_ned_m"]  # raw NED, no conversion
    assert [r.w, r.x, r.y, r.z] == vehicle["quaternion_wxyz"]
    assert stamp_ns(pose_tf.timestamp) == vehicle["time_ns"]


def box(capture_ms: int) -> Box:
    return Box(capture_ms * MS, 0.0, 0.0, 200.0, 100.0, "pedestrian")


def test_each_box_goes_on_the_image_nearest_its_capture() -> None:
    matcher = BoxMatcher()
    assert matcher.image(100 * MS, 320, 240) is None  # not known yet which boxes are its
    for capture_ms in (40, 90, 140, 149, 160, 190):
        matcher.box(box(capture_ms))
    assert matcher.image(200 * MS, 320, 240) is None  # a box of image 1 may still come
    matcher.box(box(145))  # 45 ms after image 1, arriving after image 2: still image 1's
    first = matcher.image(300 * MS, 320, 240)
    assert first is not None and first[1] == 100 * MS
    annotations, log_ns = ANNOTATIONS.FromString(first[0].encode()), first[1]
    assert stamp_ns(annotations.timestamp) == log_ns == 100 * MS  # the image's own time
    assert len(annotations.points) == 4  # 90, 140, 145, 149: [50, 150); 40 is before it
    matcher.box(box(120))  # its image's annotations went out already: late, counted
    second = matcher.image(400 * MS, 320, 240)
    assert second is not None and second[1] == 200 * MS
    assert len(ANNOTATIONS.FromString(second[0].encode()).points) == 2  # 160 and 190
    stats = matcher.stats()
    assert (stats["boxes"], stats["boxes_late"]) == (6, 2)
    assert stats["gap_ms_max"] == 49.0  # 149 ms on the 100 ms image; 160 on 200 is 40


def test_a_box_is_drawn_in_the_image_pixels() -> None:
    matcher = BoxMatcher()
    matcher.image(0, 321, 241)
    matcher.box(Box(0, -1000.0, 1000.0, 200.0, 400.0, "x"))  # centred on the bottom-left pixel
    matcher.image(100 * MS, 321, 241)
    done = matcher.image(200 * MS, 321, 241)
    assert done is not None
    decoded = ANNOTATIONS.FromString(done[0].encode())
    corners = [(p.x, p.y) for p in decoded.points[0].points]
    # 200 of 2000 units wide: a tenth of 321 pixels; 400 of 2000 high: a fifth of 241
    assert corners[0] == pytest.approx((-16.05, 240 - 24.1))
    assert corners[2] == pytest.approx((16.05, 240 + 24.1))


class Collect:
    def __init__(self) -> None:
        self.out: list[tuple[str, object, int]] = []

    def wants(self, topic: str) -> bool:
        return True

    def emit(self, topic: str, message: object, log_ns: int) -> None:
        self.out.append((topic, message, log_ns))


def test_a_snapshot_s_messages_share_its_time_and_a_verdict_change_is_logged() -> None:
    sink = Collect()
    renderer = FoxgloveRenderer(sink, CameraMount(), clock=lambda: 0)
    lines = world_lines([(0, 0)], 0.0)
    for line in lines[1:3]:  # PROCEED, then HOLD
        renderer.line("world", line, line["host_ns"])
    topics_at = {}
    for topic, _, log_ns in sink.out:
        topics_at.setdefault(log_ns, set()).add(topic)
    for line in lines[1:3]:
        assert {"/gizmo/world", "/gizmo/scene", "/gizmo/tf", "/gizmo/plot"} <= topics_at[
            line["host_ns"]
        ]
    log = protobuf_class("foxglove.Log", Log.get_schema().data)
    logs = [log.FromString(m.encode()) for t, m, _ in sink.out if t == "/gizmo/log"]  # type: ignore[attr-defined]
    assert [m.message.split()[0] for m in logs] == ["PROCEED", "HOLD"]
    plots = [json.loads(m) for t, m, _ in sink.out if t == "/gizmo/plot"]  # type: ignore[arg-type]
    assert [p["verdict"] for p in plots] == [1, 0]
    assert plots[1]["age_ms"] == lines[2]["targets"][0]["age_ms"]
    assert plots[1]["azimuth_deg"] is None  # HOLD: no bearing


def test_a_bad_message_is_counted_never_raised() -> None:
    renderer = FoxgloveRenderer(Collect())
    renderer({"type": "stats", "bad": object()})  # not JSON-able
    assert renderer.stats()["render_errors"] == 1


def test_the_capture_keeps_the_view_channels_in_the_sdk_schemas(tmp_path: Path) -> None:
    path = tmp_path / "view.mcap"
    with open(path, "wb") as stream:
        writer = CaptureWriter(stream, str(path), HostSettings(serial_path="/dev/x"))

        class Direct:
            def view(self, channel, message, now_ns):  # as the BackgroundWriter's thread does
                writer.view(
                    channel, message.encode() if hasattr(message, "encode") else message, now_ns
                )

        renderer = FoxgloveRenderer(CaptureEmitter(Direct()), CameraMount(), clock=lambda: 7)
        renderer.static(7)
        lines = world_lines([(100, 100)], 10.0)
        for line in lines:
            renderer.line("world", line, line["host_ns"])
        writer.finish()
    reader = make_reader(open(path, "rb"))  # noqa: SIM115
    channels, worlds, scenes = {}, [], []
    for schema, channel, message in reader.iter_messages():
        channels[channel.topic] = (channel.message_encoding, schema.name, schema.data)
        decoded = decode_message(channels[channel.topic], message.data)
        check_decoded(channel.topic, decoded)
        if channel.topic == "/gizmo/world":
            worlds.append((message.log_time, decoded))
        elif channel.topic == "/gizmo/scene":
            scenes.append((message.log_time, decoded))
    for topic, (encoding, name, _) in channels.items():
        assert SCHEMAS[topic] == (encoding, name)
    assert check_scene_against_world(worlds, scenes)[0] > 0
    gizmo = CaptureReader(str(path))
    assert list(gizmo.messages()) == [] and gizmo.skipped > 0  # replay recomputes them


def test_the_layout_parses_and_names_only_published_topics(capsys) -> None:
    named = named_topics(layout())
    assert named <= set(topics.TOPICS) == set(SCHEMAS)
    assert {"/gizmo/scene", "/gizmo/camera/image", "/gizmo/camera/annotations"} <= named
    assert {"/gizmo/world", "/gizmo/plot", "/gizmo/log"} <= named
    panels = layout()["configById"]
    assert panels["3D!gizmo-scene"]["followTf"] == "base_link"
    assert panels["3D!gizmo-scene"]["layers"]["grid-map"]["frameId"] == "map"
    parser = argparse.ArgumentParser()
    foxglove_layout.add_arguments(parser)
    assert foxglove_layout.run(parser.parse_args([])) == 0
    assert capsys.readouterr().out == layout_text()


@pytest.mark.parametrize(
    ("argv", "enabled", "listen"),
    [
        ([], False, "127.0.0.1:8765"),
        (["--foxglove"], True, "127.0.0.1:8765"),
        (["--foxglove", "0.0.0.0:0"], True, "0.0.0.0:0"),
    ],
)
def test_the_flag_sets_the_foxglove_settings(argv, enabled, listen) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config")
    add_foxglove_flag(parser)
    config = config_from_args(parser.parse_args(argv), serial_required=False)
    assert (config.foxglove.enabled, config.foxglove.listen) == (enabled, listen)


def test_a_bad_listen_address_is_one_line_and_status_2(capsys) -> None:
    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    args = parser.parse_args(["--serial", "/dev/null", "--foxglove", "localhost"])
    assert run.run(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "foxglove.listen" in err and "HOST:PORT" in err


def test_the_synthetic_image_shows_each_vehicle_inside_its_box() -> None:
    camera = sensor_camera(next(s for s in builtin_config().sensors if s.seq_id == 1))
    scenario = build_scenario("orbit")
    truth = scenario.truth(1.0)
    image = SceneCamera(camera, scale=2).render(truth.ego.state, scenario.placed(truth))
    assert image.shape == (240, 320, 3) and image.dtype == np.uint8
    pose_ = camera_pose(camera, truth.ego.state)
    seen = 0
    for placed in scenario.placed(truth):
        b = image_box(camera, pose_, placed)
        if b is None:
            continue
        u, v = int((b.min_x + b.max_x) / 4), int((b.min_y + b.max_y) / 4)
        assert (image[v, u] == BLOBS[placed.body.copter_id % len(BLOBS)]).all()
        seen += 1
    assert seen >= 1
    assert not (image == SKY).all(axis=-1).any()  # pitched -45° from 10 m: ground only


def test_json_topics_carry_the_host_lines_schema() -> None:
    from gizmo_host.foxglove.schemas import sdk_schema
    from gizmo_host.schemas import load_schema

    for topic, message_type in (("/gizmo/world", "world"), ("/gizmo/result", "result")):
        schema = sdk_schema(topic)
        assert (schema.encoding, json.loads(schema.data)) == (
            "jsonschema",
            load_schema(message_type),
        )


def test_the_lidar_points_are_the_ones_the_model_took_in_their_frame() -> None:
    from foxglove.messages import PointCloud

    from fusion import LidarPoints, PointFrame

    cloud = protobuf_class("foxglove.PointCloud", PointCloud.get_schema().data)
    sink = Collect()
    renderer = FoxgloveRenderer(sink)
    points = np.array([[1.0, 2.0, 3.0], [-4.5, 0.25, 10.0]])
    renderer.fusion_input(LidarPoints(42, points, PointFrame.BODY_FRD, 60.0))
    renderer.fusion_input(LidarPoints(43, points, PointFrame.WORLD_NED, 60.0))
    renderer.fusion_input(up(44))  # not a cloud: nothing
    frames = []
    for topic, message, log_ns in sink.out:
        decoded = cloud.FromString(message.encode())  # type: ignore[attr-defined]
        assert topic == "/gizmo/lidar" and stamp_ns(decoded.timestamp) == log_ns
        xyz = np.frombuffer(decoded.data, dtype="<f4").reshape(-1, 3)
        assert (xyz == points.astype(np.float32)).all()
        frames.append(decoded.frame_id)
    assert frames == ["base_link_frd", "map_ned"]


def test_a_port_in_use_is_one_service_failure_naming_the_address() -> None:
    import asyncio
    import socket

    from gizmo_host.app.foxglove_view import foxglove_server
    from gizmo_host.app.host_config import FoxgloveConfig
    from gizmo_host.errors import ServiceFailed

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = foxglove_server(FoxgloveConfig(True, f"127.0.0.1:{port}"), None, lambda: 0)
        with pytest.raises(ServiceFailed, match=f"foxglove ws://127.0.0.1:{port}: cannot serve"):
            asyncio.run(server.start())


def test_the_view_s_counters_fit_the_stats_line_schema() -> None:
    from gizmo_host.app.foxglove_view import foxglove_server
    from gizmo_host.app.host_config import FoxgloveConfig
    from gizmo_host.schemas import load_schema
    from tests.support.schemas import schema_validator

    publish = load_schema("stats")["properties"]["publish"]
    server = foxglove_server(FoxgloveConfig(True, "127.0.0.1:0"), None, lambda: 0)
    stats = {"foxglove": server.stats(), "stdout": {"queued": 1, "dropped": 0, "disconnected": 0}}
    schema_validator(json.dumps(publish)).validate(stats)
