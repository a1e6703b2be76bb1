"""A range sensor back from a capture's record: every valid sensor round-trips, and any JSON
value put in one field either reads back as that field's kind or is refused naming it."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rfly_link.config_json import VisionSensorConfig
from rfly_link.sensor_record import sensor_from_record, sensors_from_record

u16 = st.integers(0, 65535)
finite = st.floats(allow_nan=False, allow_infinity=False)
quaternion_part = st.just(0.0) | st.floats(1e-100, 1e150) | st.floats(-1e150, -1e-100)


@st.composite
def sensors(draw: st.DrawFn) -> VisionSensorConfig:
    """What the Config.json reader accepts (its ranges, written out here)."""
    protocol = (
        draw(st.integers(0, 3)),
        *draw(st.tuples(*[st.integers(0, 255)] * 4)),
        draw(st.integers(1, 65535)),
        draw(u16),
        draw(u16),
    )
    other = draw(st.tuples(*[finite] * 16))
    type_id = draw(u16)
    return VisionSensorConfig(
        index=draw(st.integers(0, 2**31 - 1)),  # a place in a list with skipped entries
        seq_id=draw(u16),
        type_id=type_id,
        target_copter=draw(u16),
        target_mount_type=draw(u16),
        data_width=draw(u16),
        data_height=draw(u16),
        data_check_freq=draw(u16),
        camera_fov_deg=draw(finite),
        send_protocol=protocol,
        sensor_pos_xyz_m=draw(st.tuples(finite, finite, finite)),
        has_eular_or_quat=draw(st.booleans()),
        eular_or_quat=draw(finite),
        sensor_ang_eular=draw(st.tuples(finite, finite, finite)),
        sensor_ang_quat=draw(st.tuples(*[quaternion_part] * 4)),  # |q|² 0 or normal
        # a point cloud's range is 0.01 m to 10 km, a distance sensor's at most 10 km
        other_params=(draw(st.floats(0.01, 10_000.0)), *other[1:]),
    )


VALID = VisionSensorConfig(
    index=0,
    seq_id=2,
    type_id=5,
    target_copter=1,
    target_mount_type=0,
    data_width=1,
    data_height=1,
    data_check_freq=30,
    camera_fov_deg=90.0,
    send_protocol=(1, 127, 0, 0, 1, 10001, 0, 0),
    sensor_pos_xyz_m=(0.1, 0.0, 0.05),
    has_eular_or_quat=False,
    eular_or_quat=0.0,
    sensor_ang_eular=(0.0, 0.0, 0.0),
    sensor_ang_quat=(0.0, 0.0, 0.0, 0.0),
    other_params=(60.0,) + (0.0,) * 15,
)


def record(sensor: VisionSensorConfig) -> dict:
    """As a capture holds it: ``dataclasses.asdict`` through JSON."""
    return json.loads(json.dumps(dataclasses.asdict(sensor)))


@given(sensors())
def test_every_valid_sensor_reads_back_equal(sensor: VisionSensorConfig) -> None:
    assert sensor_from_record(record(sensor), "s") == sensor


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=17) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=20,
)


@given(
    sensors(),
    st.sampled_from([f.name for f in dataclasses.fields(VisionSensorConfig)]),
    json_values,
)
def test_any_value_in_one_field_reads_as_its_kind_or_is_refused_naming_it(
    sensor: VisionSensorConfig, field: str, value: object
) -> None:
    entry = record(sensor)
    entry[field] = value
    try:
        back = sensor_from_record(entry, "s")
    except ValueError as exc:
        assert str(exc).startswith((f"s.{field}:", f"s.{field}[")), (str(exc), field)
        return
    got = getattr(back, field)
    assert got == getattr(sensor, field) or got == (
        tuple(value) if isinstance(value, list) else value
    )
    for name in ("sensor_pos_xyz_m", "sensor_ang_eular", "sensor_ang_quat", "other_params"):
        assert all(type(v) is float and math.isfinite(v) for v in getattr(back, name))
    assert all(type(v) is int for v in back.send_protocol)


@pytest.mark.parametrize("entries", [{}, "[]", None, [[]]])
def test_a_sensor_list_that_is_not_an_array_of_objects_is_refused(entries: object) -> None:
    with pytest.raises(ValueError, match=r"^range_sensors"):
        sensors_from_record(entries, "range_sensors")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("camera_fov_deg", 10**400, "camera_fov_deg: expected a finite number"),
        ("sensor_pos_xyz_m", [0, -(10**400), 0], r"sensor_pos_xyz_m\[1\]: expected a finite"),
        ("sensor_ang_quat", [1e200, 1e200, 0, 0], "sensor_ang_quat: expected a quaternion of"),
        ("sensor_ang_quat", [3e-162, 3e-162, 0, 0], "sensor_ang_quat: expected a quaternion of"),
        ("index", 2**31, "index: expected an integer 0..2147483647"),
    ],
)
def test_numbers_past_a_float_are_refused_naming_the_field(field, value, message) -> None:
    """rt32: a JSON integer beyond a float's range was an OverflowError traceback; a
    quaternion of finite parts whose squared norm is not failed on every reading."""
    entry = record(VALID)
    entry[field] = value
    with pytest.raises(ValueError, match=f"^s\\.{message}"):
        sensor_from_record(entry, "s")


@pytest.mark.parametrize(
    ("type_id", "range_m", "message"),
    [
        (5, 1e300, "the distance sensor's range in metres, at most 10,000"),
        (21, 5e-324, "the point-cloud range in metres, 0.01 to 10,000"),
        (20, 1e308, "the point-cloud range in metres, 0.01 to 10,000"),
    ],
)
def test_a_range_no_sensor_has_is_refused_as_config_json_refuses_it(
    type_id: int, range_m: float, message: str
) -> None:
    """rt34: the record held what Config.json's reader now refuses (a range of 1e300 lifted
    the bound on a distance sensor's readings; 5e-324 put a LiDAR's every point at 0 m)."""
    entry = record(VALID)
    entry["type_id"], entry["other_params"] = type_id, [range_m] + [0.0] * 15
    with pytest.raises(ValueError, match=f"^s\\.other_params\\[0\\]: expected {message}"):
        sensor_from_record(entry, "s")


def test_a_sensor_placed_past_65535_in_its_list_replays_as_it_ran() -> None:
    """rt33: Config.json's reader counts the entries it skips, so a sensor's ``index`` can
    pass 65535 live; the record check refused that capture."""
    entry = record(VALID)
    entry["index"] = 70000
    assert sensor_from_record(entry, "s").index == 70000
