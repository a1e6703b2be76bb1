"""``[camera]``, ``[world]`` and ``[rflysim]`` of ``gizmo-host run``, resolved against a
Config.json: the camera's size, field of view and mount come from the named sensor."""

from __future__ import annotations

from pathlib import Path

import pytest

from gizmo_core import ConfigError
from gizmo_host.app.host_config import config_from_mapping
from gizmo_host.app.world_config import WorldSetup
from gizmo_host.rigs.rflysim.sensorset import builtin_config_text


@pytest.fixture
def config_json(tmp_path: Path) -> str:
    """The stand-in's Config.json: SeqID 1 TypeID 30 boxes (640x480, 90°, pitched -45°),
    2 a distance sensor, 3 a LiDAR, 4 a TypeID 9 camera (1280x720, 60°)."""
    path = tmp_path / "Config.json"
    path.write_text(builtin_config_text(), encoding="utf-8")
    return str(path)


def setup(config_json: str, camera: dict[str, object]) -> WorldSetup | None:
    document = {"camera": camera, "rflysim": {"copter_id": 1, "config": config_json}}
    return config_from_mapping(document).world_setup()


def test_a_box_sensor_is_a_camera_its_boxes_are_in_its_image(config_json: str) -> None:
    world = setup(config_json, {"rflysim_sensor": 1})
    assert world is not None
    camera = world.camera
    assert (camera.width_px, camera.height_px, camera.hfov_deg) == (640, 480, 90.0)
    assert camera.mount_rpy_deg == pytest.approx((0.0, -45.0, 0.0))
    assert camera.mount_position_frd_m == pytest.approx((0.1, 0.0, 0.05))
    # The distance sensor and the LiDAR on the same vehicle are inputs of the world model.
    assert world.rflysim is not None
    assert [s.seq_id for s in world.rflysim.range_sensors] == [2, 3]  # distance, LiDAR


def test_keys_in_the_camera_table_override_the_sensor(config_json: str) -> None:
    world = setup(config_json, {"rflysim_sensor": 4, "hfov_deg": 70.0})
    assert world is not None
    assert (world.camera.width_px, world.camera.hfov_deg) == (1280, 70.0)


def test_a_sensor_that_is_not_a_camera_is_named_with_the_ones_that_are(config_json: str) -> None:
    with pytest.raises(ConfigError, match=r"^camera\.rflysim_sensor: .*\(1, 4\), got 3$"):
        setup(config_json, {"rflysim_sensor": 3})
