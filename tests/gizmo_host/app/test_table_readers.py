"""``[camera]`` and ``[world]`` become fusion's configs through the settings table only: each
key by its row, then the rules over the whole table (no range guessed from a key's name)."""

from __future__ import annotations

import pytest

from gizmo_core import ConfigError
from gizmo_host.app.world_config import camera_from_table, tracking_from_table, world_from_table

MS = 1_000_000
VGA = {"width_px": 640, "height_px": 480}


def test_a_camera_from_the_issues_example_and_from_a_sensors_defaults():
    config = camera_from_table(
        {
            **VGA,
            "hfov_deg": 90.0,
            "mount_rpy_deg": [0.0, -90.0, 0.0],
            "mount_position_frd_m": [0.0, 0.0, 0.1],
            "rflysim_sensor": 1,
        }
    )
    assert config.mount_rpy_deg == (0.0, -90.0, 0.0) and config.rflysim_sensor == 1
    from_sensor = camera_from_table(
        {"fx_px": 400.0}, defaults={"width_px": 320, "height_px": 240, "hfov_deg": 70.0}
    )
    assert (from_sensor.width_px, from_sensor.hfov_deg, from_sensor.fx_px) == (320, None, 400.0)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"height_px": 480, "hfov_deg": 90}, "^camera.width_px: expected an integer from 2 to"),
        (VGA, "^camera: expected exactly one of hfov_deg or fx_px, got neither"),
        ({**VGA, "hfov_deg": 90, "fx_px": 300}, "got both"),
        ({**VGA, "hfov_deg": 180}, r"^camera.hfov_deg: expected .* to less than 180, got 180"),
        # rt32: 5e-324 passed, and tan(radians(x) / 2) = 0 was divided by at start
        ({**VGA, "hfov_deg": 5e-324}, r"^camera.hfov_deg: expected an angle .* from 0.01 to"),
        ({**VGA, "hfov_deg": 90, "vfov_deg": 0.005}, r"^camera.vfov_deg: expected .* 0.01"),
        ({"width_px": 1, "height_px": 480, "hfov_deg": 90}, "^camera.width_px: expected"),
        ({**VGA, "fx_px": -3}, "^camera.fx_px: expected"),
        ({**VGA, "hfov_deg": 90, "fy_px": 300}, "^camera.fy_px: expected only with fx_px"),
        ({**VGA, "fx_px": 300, "fy_px": 300, "vfov_deg": 60}, "at most one of vfov_deg or fy_px"),
        ({**VGA, "hfov_deg": 90, "mount_rpy_deg": [0, 1]}, "expected a list of 3 numbers"),
        ({**VGA, "hfov_deg": 90, "mount_rpy_deg": [0, "x", 0]}, r"^camera.mount_rpy_deg\[1\]"),
        # the pitch has its own range within the triple's: ±90°, where roll and yaw have ±360°
        ({**VGA, "hfov_deg": 90, "mount_rpy_deg": [0, 91, 0]}, r"^camera.mount_rpy_deg\[1\]"),
        ({**VGA, "hfov_deg": 90, "zoom": 2}, "^camera.zoom: unknown key"),
        ({**VGA, "hfov_deg": 90, "on_gimbal": "yes"}, "^camera.on_gimbal: expected true or"),
        ({**VGA, "hfov_deg": 90, "rflysim_sensor": 0}, "^camera.rflysim_sensor: expected"),
    ],
)
def test_camera_errors_name_the_key(table, message):
    with pytest.raises(ConfigError, match=message):
        camera_from_table(table)


def test_a_roll_of_180_degrees_is_a_mount_where_a_pitch_of_180_is_not():
    assert camera_from_table({**VGA, "hfov_deg": 90, "mount_rpy_deg": [180, 0, 0]})
    with pytest.raises(ConfigError, match=r"mount_rpy_deg\[1\]: expected .* from -90 to 90"):
        camera_from_table({**VGA, "hfov_deg": 90, "mount_rpy_deg": [0, 180, 0]})


def test_world_config_from_a_toml_table():
    c = world_from_table(
        {
            "max_wait_ms": 30,
            "ground_z_ned_m": -1.5,
            "pose_required": True,
            "ttl_ms_by_type": {"1": 150, "DETECTOR": 120},  # DETECTOR is 5
            "source_stale_ms": {"pose": 50},
        }
    )
    assert (c.max_wait_ms, c.ground_z_ned_m, c.pose_required) == (30.0, -1.5, True)
    assert c.ttl_ns(1) == 150 * MS and c.ttl_ns(5) == 120 * MS and c.ttl_ns(2) == 250 * MS
    assert c.source_stale_ms["pose"] == 50 and c.source_stale_ms["vision"] == 250


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"max_wait_ms": "soon"}, "^world.max_wait_ms: expected a finite number, got 'soon'"),
        ({"ttl_ms": 0}, r"^world.ttl_ms: expected .* more than 0"),
        ({"max_targets": 0}, "^world.max_targets: expected an integer from 1"),
        ({"pose_required": 1}, "^world.pose_required: expected true or false"),
        ({"laser_beam_half_angle_deg": 60}, r"^world.laser_beam_half_angle_deg: .* to 45, got 60"),
        ({"ttl_ms_by_type": {"FAST": 1}}, "^world.ttl_ms_by_type: expected result_type"),
        ({"source_stale_ms": {"radar": 1}}, "^world.source_stale_ms: unknown source 'radar'"),
        ({"wait_ms": 3}, "^world.wait_ms: unknown key"),
        ({"ground_z_ned_m": float("nan")}, "^world.ground_z_ned_m: expected a finite number"),
        ({"source_stale_ms": {"pose": "x"}}, "^world.source_stale_ms.pose: expected a finite"),
    ],
)
def test_world_errors_name_the_key(table, message):
    with pytest.raises(ConfigError, match=message):
        world_from_table(table)


@pytest.mark.parametrize("key", ["cv_dwell_s", "ct_dwell_s"])
@pytest.mark.parametrize("value", [5e-324, 1e-309, 0.0009])
def test_a_mode_dwell_under_a_millisecond_is_refused(key: str, value: float) -> None:
    """rt32: a dwell of 5e-324 s passed; 1/dwell was inf, the mode probabilities NaN, and no
    track was ever confirmed (every world line HOLD ``tentative``, for good)."""
    expected = f"^tracking.{key}: expected a number of seconds from 0.001 "
    with pytest.raises(ConfigError, match=expected):
        tracking_from_table({key: value}, None)
    assert tracking_from_table({key: 0.001}, None) is not None
