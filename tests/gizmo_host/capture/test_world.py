"""The world model's part of a capture: its settings as metadata, the datagram router, and the
command lines' checks (``gizmo-host record`` and ``replay``)."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from gizmo_host.app.capture_world import world_metadata, world_setup_from
from gizmo_host.app.host_config import config_from_mapping
from gizmo_host.app.offline_replay import host_config as offline_host_config
from gizmo_host.app.recorder import host_settings
from gizmo_host.app.settings import section_keys
from gizmo_host.app.world_build import DatagramRouter
from gizmo_host.capture.carried_settings import HostSettings
from gizmo_host.capture.channels import WORLD_METADATA
from gizmo_host.capture.reader import CaptureReader
from gizmo_host.capture.writer import CaptureWriter
from gizmo_host.cli import record, replay
from gizmo_host.errors import CaptureError
from gizmo_host.rigs.rflysim import builders
from gizmo_host.rigs.rflysim.scenario import build_scenario
from gizmo_host.rigs.rflysim.sensorset import builtin_config_text
from rfly_link import ports


@pytest.fixture
def setup(tmp_path: Path):
    """A world with every part: a Config.json camera and distance sensor, odometry, gimbal."""
    path = tmp_path / "Config.json"
    path.write_text(builtin_config_text(), encoding="utf-8")
    config = config_from_mapping(
        {
            "store": {"ttl_ms": 300.0, "ttl_ms_by_type": {"LINE": 150.0}},
            "verdict": {"select": "type=DETECTOR,id=11"},
            "camera": {"rflysim_sensor": 1},
            "world": {"rate_hz": 20.0, "source_stale_ms": {"pose": 80.0}},
            "rflysim": {"copter_id": 1, "config": str(path), "request_odometry_hz": 50},
        }
    )
    world = config.world_setup()
    assert world is not None and world.rflysim is not None
    assert world.rflysim.range_sensors  # the round trip carries a Config.json entry
    return world


def test_world_settings_round_trip_through_the_metadata(setup) -> None:
    record_ = world_metadata(setup)
    assert all(isinstance(v, str) for v in record_.values())
    assert world_setup_from(record_, "x") == setup


def test_every_clock_and_store_setting_reaches_the_replay() -> None:
    # Red team: lock_after_ms was not carried, and replay's first PROCEED came 200 ms later.
    chosen = {
        "clock": {"max_skew_ppm": 123.0, "phase_error_threshold_ms": 17.0, "lock_after_ms": 300.0},
        "store": {"ttl_ms": 321.0, "ttl_ms_by_type": {"LINE": 150.0}, "reset_hold_ms": 40.0},
    }
    for section, values in chosen.items():  # all of them: a new setting must be carried too
        assert set(values) == set(section_keys(section))
    config = config_from_mapping({"serial": {"path": "/dev/x"}, **chosen})
    carried = HostSettings.from_metadata(host_settings(config).to_metadata(), "f.mcap")
    replayed = offline_host_config(carried)
    assert replayed.clock == config.clock and replayed.store == config.store
    assert replayed.clock.lock_after_ms == 300.0


@pytest.mark.parametrize(
    ("tracking", "expected"),
    [({"cv_accel_m_s2": 0.05, "confirm_hits": 4}, 0.05), ({"enabled": False}, None)],
)
def test_a_tracking_table_is_carried_and_no_table_writes_no_key(setup, tracking, expected) -> None:
    assert "tracking" not in world_metadata(setup)  # records stay as they were without one
    config = config_from_mapping(
        {
            "camera": {"width_px": 640, "height_px": 480, "hfov_deg": 90.0},
            "world": {"rate_hz": 20.0},
            "rflysim": {"copter_id": 1},
            "tracking": tracking,
        }
    )
    tuned = config.world_setup()
    assert tuned is not None
    back = world_setup_from(world_metadata(tuned), "f.mcap")
    assert back == tuned
    assert (None if back.tracking is None else back.tracking.cv_accel_m_s2) == expected


def test_the_sim_skew_bound_is_carried_and_its_default_writes_no_key() -> None:
    """[rflysim] max_skew_ppm reaches the replay's adapter; the default leaves the record as
    it was before the key (the goldens' captures have none)."""
    base = {"camera": {"width_px": 640, "height_px": 480, "hfov_deg": 90.0}}
    plain = config_from_mapping({**base, "rflysim": {"copter_id": 1}}).world_setup()
    assert plain is not None and "max_skew_ppm" not in world_metadata(plain)["rflysim"]
    tuned = config_from_mapping(
        {**base, "rflysim": {"copter_id": 1, "max_skew_ppm": 2500}}
    ).world_setup()
    assert tuned is not None and tuned.rflysim is not None
    back = world_setup_from(world_metadata(tuned), "f.mcap")
    assert back == tuned and back.rflysim is not None and back.rflysim.max_skew_ppm == 2500.0


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("camera", '{"width_px": 1}', "camera"),
        (
            "rflysim",
            '{"copter_id": 1, "range_sensors": [], "max_skew_ppm": 1e6}',
            "rflysim: max_skew_ppm: expected 0 to 10000",
        ),
        ("world", '{"rate_hz": -1}', "world.rate_hz"),
        ("rflysim", '{"copter_id": 1}', "rflysim: expected a value for 'range_sensors'"),
        ("selector", "not json", "selector: expected JSON"),
        # A value of the wrong kind is refused where it is read, never later (red team: a
        # copter_id of "1" was a traceback from the port map; a selector's "1" matched nothing).
        ("rflysim", '{"copter_id": "1", "range_sensors": []}', "copter_id: expected an integer"),
        ("rflysim", '{"copter_id": 1, "range_sensors": [], "gimbal": 1}', "gimbal: expected true"),
        ("selector", '{"source_id": "1"}', "selector: source_id: expected an integer or null"),
        ("selector", "[1]", "selector: expected an object"),
    ],
)
def test_a_bad_world_record_is_one_capture_error_naming_the_key(
    setup, key: str, value: str, expected: str
) -> None:
    record_ = {**world_metadata(setup), key: value}
    with pytest.raises(CaptureError, match=expected):
        world_setup_from(record_, "f.mcap")
    missing = {k: v for k, v in world_metadata(setup).items() if k != key}
    with pytest.raises(CaptureError, match=f"{key}: expected a value"):
        world_setup_from(missing, "f.mcap")


# A range sensor's field, what a damaged or hostile capture puts there, and the field the
# error must name (red team rt31: these replayed, counted as drops interpreted and as model
# errors compiled, or, ``other_params: []``, ended the replay with a traceback).
_BAD_SENSOR_FIELDS = [
    ("sensor_pos_xyz_m", [[0.1], 0, 0.05], r"sensor_pos_xyz_m\[0\]: expected a finite number"),
    ("sensor_pos_xyz_m", ["0.1", 0, 0.05], r"sensor_pos_xyz_m\[0\]: expected a finite number"),
    ("sensor_pos_xyz_m", [0.1, 0], r"sensor_pos_xyz_m: expected an array of 3"),
    ("sensor_pos_xyz_m", [0.1, None, 0.0], r"sensor_pos_xyz_m\[1\]: expected a finite number"),
    ("sensor_ang_eular", [0, 1e309, 0], r"sensor_ang_eular\[1\]: expected a finite number"),
    ("eular_or_quat", "0", "eular_or_quat: expected a finite number"),
    ("eular_or_quat", None, "eular_or_quat: expected a finite number"),
    ("other_params", [], "other_params: expected an array of 16"),
    ("send_protocol", [1, 127, 0, 0, 1, 70000, 0, 0], r"send_protocol\[5\]: expected an integer"),
    ("type_id", True, "type_id: expected an integer"),
    ("data_width", 2.5, "data_width: expected an integer"),
    ("has_eular_or_quat", "true", "has_eular_or_quat: expected true or false"),
]


@pytest.mark.parametrize(("field", "value", "expected"), _BAD_SENSOR_FIELDS)
def test_a_bad_range_sensor_in_the_record_is_one_capture_error_naming_its_field(
    setup, field: str, value: object, expected: str
) -> None:
    record_ = world_metadata(setup)
    rflysim = json.loads(record_["rflysim"])
    assert rflysim["range_sensors"][0][field] != value  # a change to a sensor that replays
    rflysim["range_sensors"][0][field] = value
    with pytest.raises(CaptureError, match=f"rflysim: range_sensors\\[0\\]\\.{expected}"):
        world_setup_from({**record_, "rflysim": json.dumps(rflysim)}, "f.mcap")


def test_a_range_sensor_with_a_field_missing_or_added_is_refused(setup) -> None:
    record_ = world_metadata(setup)
    for change in ({"extra": 1}, None):
        rflysim = json.loads(record_["rflysim"])
        sensor = rflysim["range_sensors"][0]
        if change is None:
            del sensor["other_params"]
        else:
            sensor.update(change)
        with pytest.raises(CaptureError, match=r"range_sensors\[0\]: expected the fields"):
            world_setup_from({**record_, "rflysim": json.dumps(rflysim)}, "f.mcap")
    rflysim = json.loads(record_["rflysim"])
    rflysim["range_sensors"] = {"0": rflysim["range_sensors"][0]}
    with pytest.raises(CaptureError, match="range_sensors: expected an array"):
        world_setup_from({**record_, "rflysim": json.dumps(rflysim)}, "f.mcap")


@pytest.mark.parametrize("port", ["state", "another sensor's"])
def test_a_range_sensor_on_another_receivers_port_is_refused(setup, port: str) -> None:
    """rt32: replayed, the later receiver took the port: a sensor on the state port dropped
    every pose, and the world held for the whole replay. Live, the second bind fails."""
    record_ = world_metadata(setup)
    rflysim = json.loads(record_["rflysim"])
    sensors = rflysim["range_sensors"]
    taken = ports.coptersim_state_port(rflysim["copter_id"])
    if port != "state":
        sensors.append({**sensors[0], "index": 7, "seq_id": 9})
        taken = sensors[0]["send_protocol"][5]
    sensors[-1]["send_protocol"][5] = taken
    with pytest.raises(CaptureError, match=f"range_sensors: port {taken} is another receiver's"):
        world_setup_from({**record_, "rflysim": json.dumps(rflysim)}, "f.mcap")


def test_the_router_hears_the_ports_run_would_and_counts_the_rest(setup) -> None:
    router = DatagramRouter(setup.rflysim)
    state_port = ports.coptersim_state_port(1)
    assert state_port in router.ports and ports.coptersim_reply_port(1) in router.ports
    assert setup.rflysim.range_sensors[0].port in router.ports
    scenario = build_scenario("orbit")
    state = builders.state_168(1, 3, scenario.state(1, 1.0), 101.0).encode()
    events = router.feed(state_port, ("127.0.0.1", 5000), state, 7)
    assert len(events) == 1 and events[0].rx_ns == 7 and events[0].value.copter_id == 1
    assert router.feed(state_port, ("127.0.0.1", 5000), b"\x00" * 7, 8) == []  # counted
    assert router.feed(9, ("127.0.0.1", 5000), state, 9) == []
    stats = router.stats()[f"rfly-state-{state_port}"]
    assert stats["datagrams"] == 2 and sum(stats["drops"].values()) == 1
    assert router.other_ports == 1


def test_replay_reports_a_bad_world_record_in_one_line(setup, tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.mcap"
    with path.open("wb") as stream:
        bad = {**world_metadata(setup), "camera": "{}"}
        writer = CaptureWriter(stream, str(path), HostSettings(), metadata={WORLD_METADATA: bad})
        writer.uart(b"\xa5", 1)
        writer.finish()
    assert CaptureReader(str(path)).info.world == bad
    parser = argparse.ArgumentParser()
    replay.add_arguments(parser)
    assert replay.run(parser.parse_args([str(path), "--offline"])) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gizmo-host.world: camera: " in err[0], err


def test_replay_reports_a_bad_range_sensor_in_one_line(setup, tmp_path: Path, capsys) -> None:
    """rt31: ``other_params: []`` ended ``replay --offline`` with an IndexError traceback."""
    record_ = world_metadata(setup)
    rflysim = json.loads(record_["rflysim"])
    rflysim["range_sensors"][0]["other_params"] = []
    path = tmp_path / "bad.mcap"
    with path.open("wb") as stream:
        bad = {**record_, "rflysim": json.dumps(rflysim)}
        writer = CaptureWriter(stream, str(path), HostSettings(), metadata={WORLD_METADATA: bad})
        writer.uart(b"\xa5", 1)
        writer.finish()
    parser = argparse.ArgumentParser()
    replay.add_arguments(parser)
    assert replay.run(parser.parse_args([str(path), "--offline"])) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "rflysim: range_sensors[0].other_params: expected an array of 16" in err[0]


def test_the_writer_refuses_to_overwrite_its_own_records() -> None:
    with pytest.raises(ValueError, match="info and settings"):
        CaptureWriter(io.BytesIO(), "x", HostSettings(), metadata={"gizmo-host.settings": {}})


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--udp-port", "0"], "--udp-port: expected 1..65535, got 0"),
        (["--rflysim-copter-id", "1"], "camera: expected a [camera] table"),
        (["--duration", "0"], "--duration: expected > 0"),
    ],
)
def test_record_refuses_bad_flags_in_one_line(
    argv: list[str], expected: str, tmp_path: Path, capsys
) -> None:
    parser = argparse.ArgumentParser()
    record.add_arguments(parser)
    out = tmp_path / "x.mcap"
    args = parser.parse_args(["--serial", str(tmp_path / "tty"), "-o", str(out), *argv])
    assert record.run(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err
    assert not out.exists()


def test_the_offline_world_stats_name_the_receivers_as_run_does() -> None:
    captures = Path(__file__).resolve().parents[2] / "captures"
    last = (captures / "udp_loss.golden.jsonl").read_bytes().splitlines()[-1]
    world = json.loads(last)["world"]
    assert set(world["rflysim"]["receivers"]) == {"rfly-state-30101"}
    assert world["rflysim"]["other_ports"] == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [("target_mount_type", 2), ("target_mount_type", 3), ("target_mount_type", 4),
     ("sensor_pos_xyz_m", [0.0, 100.5, 0.0]), ("sensor_pos_xyz_m", [-9e6, 0.0, 0.0])],
)  # fmt: skip
def test_a_ranging_sensor_not_rigidly_on_the_vehicle_is_refused(setup, field, value) -> None:
    """A ranging sensor is placed by its mount on the body: one on the ground (2), with its
    attitude in the ground frame (3), on another sensor (4), or more than 100 m from the
    vehicle's centre (rt35: 9e6 m was read, and shifted every point by that much) would range
    along another line. A capture holding one is refused, as Config.json is live."""
    record_ = world_metadata(setup)
    rflysim = json.loads(record_["rflysim"])
    rflysim["range_sensors"][0][field] = value
    with pytest.raises(CaptureError, match=r"expected a ranging sensor rigidly on the vehicle"):
        world_setup_from({**record_, "rflysim": json.dumps(rflysim)}, "f.mcap")
    rflysim["range_sensors"][0][field] = 1 if field == "target_mount_type" else [0.0, 100.0, 0.0]
    assert world_setup_from({**record_, "rflysim": json.dumps(rflysim)}, "f.mcap") is not None
