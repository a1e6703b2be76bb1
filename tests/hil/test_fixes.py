"""What the HIL chain needed of the emulator and the stand-in, tested on their own (fast):

- a frame's ``age_ms`` counts from the image's instant (a source's ``seen_ns``), and a source's
  instant is its own timestamp on the host clock, not the moment a busy process read it;
- ``gizmo-host emulate``'s ``[camera] rflysim_sensor`` resolves as ``gizmo-host run``'s does;
- ``gizmo-host sim --mirror-offset`` feeds the emulator's pose source beside ``gizmo-host run``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest

from gizmo_core import ConfigError, Selector
from gizmo_host.app.host_config import StoreConfig
from gizmo_host.app.world_config import RflySimConfig, resolve_world
from gizmo_host.cli import emulate as emulate_cli
from gizmo_host.cli import sim as sim_cli
from gizmo_host.rigs.board.detections import LatencyKind, LatencyModel, TargetInView
from gizmo_host.rigs.board.target_sources import MAX_SEEN_LAG_NS, SeenClock
from gizmo_host.rigs.rflysim import StandIn, build_scenario
from gizmo_host.rigs.rflysim.sensorset import builtin_config_text
from gizmo_host.wire.results import NormBox
from rfly_link import ports
from tests.support.emulate_host import START_NS, make_emulation

pytestmark = pytest.mark.hil

MS = 1_000_000
BOX = NormBox(10, -20, 100, 100)


# -- the image's instant -------------------------------------------------------------------


def test_age_counts_from_the_images_instant_and_a_late_cycle_sends_after_its_image():
    emulation = make_emulation(latency=LatencyModel(LatencyKind.FIXED, 12.0, 0.0))
    capture = emulation.capture_ns(3)
    older = emulation.cycle(3, [TargetInView("2", BOX, 90, capture - 20 * MS)])
    assert older.emit_ns == capture + 12 * MS
    assert older.results[0].age_ms == 32  # capture - age is the image's instant
    capture = emulation.capture_ns(4)
    newer = emulation.cycle(4, [TargetInView("2", BOX, 90, capture + 5 * MS)])
    assert newer.emit_ns == capture + 17 * MS and newer.results[0].age_ms == 12


def test_a_frame_held_behind_a_slow_one_reports_its_whole_age():
    emulation = make_emulation(latency=LatencyModel(LatencyKind.UNIFORM, 10.0, 60.0), seed=2)
    for index in range(60):
        cycle = emulation.cycle(index, [TargetInView("2", BOX, 90)])
        (result,) = cycle.results
        # Whatever held it, the frame says how old its image is when it leaves.
        assert result.age_ms == round((cycle.emit_ns - cycle.capture_ns) / MS)
    assert emulation.capture_ns(0) == START_NS


def test_a_source_timestamp_maps_on_its_lower_envelope_not_on_a_late_read():
    clock = SeenClock()
    base = 7_000 * MS
    for k in range(20):  # 30 Hz, read 0.2 ms after each timestamp
        assert clock.seen_ns(k / 30, base + round(k / 30 * 1e9) + 200_000) == pytest.approx(
            base + round(k / 30 * 1e9) + 200_000, abs=1000
        )
    late = base + round(20 / 30 * 1e9) + 200_000
    assert abs(clock.seen_ns(20 / 30, late + 15 * MS) - late) < 10_000  # read 15 ms late
    stuck = SeenClock()  # no usable timestamps: the arrival stands
    assert stuck.seen_ns(0.0, base) == base
    later = base + MAX_SEEN_LAG_NS + 50 * MS
    assert stuck.seen_ns(0.0, later) == later
    assert stuck.seen_ns(float("nan"), later) == later


# -- gizmo-host emulate's camera -----------------------------------------------------------


def emulate_args(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    emulate_cli.add_arguments(parser)
    return parser.parse_args(list(flags))


@pytest.fixture
def config_json(tmp_path: Path) -> Path:
    path = tmp_path / "Config.json"
    path.write_text(builtin_config_text())
    return path


def run_camera(camera: dict[str, object], config_json: Path):
    setup = resolve_world(
        camera, {}, RflySimConfig(config=str(config_json)), StoreConfig(), Selector()
    )
    assert setup is not None
    return setup.camera


@pytest.mark.parametrize("camera", [{"rflysim_sensor": 1}, {"rflysim_sensor": 1, "hfov_deg": 70}])
def test_emulate_takes_a_config_json_sensor_as_gizmo_host_run_does(tmp_path, config_json, camera):
    toml = tmp_path / "emulate.toml"
    body = "\n".join(f"{k} = {v}" for k, v in camera.items())
    toml.write_text(f"[camera]\n{body}\n")
    args = emulate_args("--config", str(toml), "--rfly-config", str(config_json), "--ego", "1")
    settings, _ = emulate_cli.settings_from_args(args)
    assert settings.camera == run_camera(camera, config_json)
    assert settings.poses is not None and settings.boxes is None  # poses stay the source
    # The same file can name the Config.json as gizmo-host run's [rflysim] does.
    toml.write_text(f'[camera]\n{body}\n[rflysim]\nconfig = "{config_json}"\n')
    settings, _ = emulate_cli.settings_from_args(emulate_args("--config", str(toml)))
    assert settings.camera == run_camera(camera, config_json)


def test_emulate_reads_a_quaternion_mount_itself_and_agrees_with_gizmo_host_run(tmp_path):
    """The emulator reads the sensor's mount with its own geometry (not the host's): both
    readings of ``SensorAngQuat`` give the same roll, pitch and yaw."""
    config = json.loads(builtin_config_text())
    half = math.radians(-30.0) / 2  # pitched 30° down, then yawed 20° to the right
    pitch = (math.cos(half), 0.0, math.sin(half), 0.0)
    yaw = (math.cos(math.radians(10.0)), 0.0, 0.0, math.sin(math.radians(10.0)))
    w1, x1, y1, z1 = yaw
    w2, x2, y2, z2 = pitch
    quaternion = [
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ]
    config["VisionSensors"][0].update(EularOrQuat=1, SensorAngQuat=quaternion)
    path = tmp_path / "Config.json"
    path.write_text(json.dumps(config))
    toml = tmp_path / "emulate.toml"
    toml.write_text("[camera]\nrflysim_sensor = 1\n")
    args = emulate_args("--config", str(toml), "--rfly-config", str(path), "--ego", "1")
    settings, _ = emulate_cli.settings_from_args(args)
    assert settings.camera is not None
    assert settings.camera.mount_rpy_deg == pytest.approx((0.0, -30.0, 20.0), abs=1e-9)
    host = run_camera({"rflysim_sensor": 1}, path).mount_rpy_deg
    assert settings.camera.mount_rpy_deg == pytest.approx(host, abs=1e-9)


def test_emulate_without_the_config_json_is_one_line_and_status_2(tmp_path, config_json, capsys):
    toml = tmp_path / "emulate.toml"
    toml.write_text("[camera]\nrflysim_sensor = 1\n")
    with pytest.raises(ConfigError, match=r"camera\.rflysim_sensor: expected --rfly-config"):
        emulate_cli.settings_from_args(emulate_args("--config", str(toml)))
    toml.write_text("[camera]\nrflysim_sensor = 2\n")  # the distance sensor is no camera
    assert emulate_cli.run(emulate_args("--config", str(toml), "--rfly-config", str(config_json)))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "camera.rflysim_sensor: expected the SeqID" in err


def test_a_pose_source_does_not_need_a_typeid_30_sensor(tmp_path):
    camera_only = json.loads(builtin_config_text())
    camera_only["VisionSensors"] = [
        {**s, "TypeID": 1} for s in camera_only["VisionSensors"] if s["SeqID"] == 1
    ]
    path = tmp_path / "Config.json"
    path.write_text(json.dumps(camera_only))
    toml = tmp_path / "emulate.toml"
    toml.write_text("[camera]\nrflysim_sensor = 1\n")
    flags = ("--config", str(toml), "--rfly-config", str(path))
    settings, _ = emulate_cli.settings_from_args(emulate_args(*flags, "--ego", "1"))
    assert settings.camera is not None and settings.camera.width_px == 640
    with pytest.raises(ConfigError, match="no TypeID 30 sensor"):  # boxes still need one
        emulate_cli.settings_from_args(emulate_args(*flags))


# -- gizmo-host sim --mirror-offset --------------------------------------------------------


def test_the_stand_in_mirrors_every_vehicle_state_to_its_port_plus_the_offset():
    stand_in = StandIn(build_scenario("orbit", ego_id=5), mirror_offset=5000)
    sent = stand_in.poll(0).datagrams
    states = {d.address: d.data for d in sent if d.kind in ("state", "other_state")}
    mirrored = {d.address: d.data for d in sent if d.kind == "state_mirror"}
    assert sorted(p for _, p in states) == [ports.coptersim_state_port(c) for c in (5, 6, 7)]
    assert mirrored == {(host, port + 5000): data for (host, port), data in states.items()}
    assert stand_in.stats.sent["state_mirror"] == 3
    plain = StandIn(build_scenario("orbit", ego_id=5))
    assert not [d for d in plain.poll(0).datagrams if d.kind == "state_mirror"]
    with pytest.raises(ValueError, match="mirror_offset: expected state ports"):
        StandIn(build_scenario("orbit"), mirror_offset=40_000)


@pytest.mark.parametrize(
    ("offset", "message"),
    [("x", "--mirror-offset: expected an integer"), ("40000", "--mirror-offset: expected state")],
)
def test_a_bad_mirror_offset_is_one_line_and_status_2(offset, message, capsys):
    parser = argparse.ArgumentParser()
    sim_cli.add_arguments(parser)
    assert sim_cli.run(parser.parse_args(["--mirror-offset", offset])) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sim: {message}") and err.count("\n") == 1
