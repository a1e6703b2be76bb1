"""Config.json loading against the SDK's behaviour (docs/protocol-decisions.md, Config.json)."""

from __future__ import annotations

import copy
import dataclasses
import json
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gizmo_core import ConfigError
from gizmo_host.cli.main import main
from rfly_link import config_json as config
from tests.support.rfly_config import EXAMPLE


def legacy(entry: dict) -> dict:
    out = copy.deepcopy(entry)
    del out["EularOrQuat"], out["SensorAngQuat"]
    out["otherParams"] = out["otherParams"][:8]
    return out


def test_documented_example_is_read_like_the_sdk() -> None:
    loaded = config.parse_config(json.dumps(EXAMPLE))
    assert [s.seq_id for s in loaded.sensors] == [1, 2, 3]
    assert [s.port for s in loaded.sensors] == [10000, 10105, 10002]
    assert loaded.new_layout
    requests = [r.encode() for r in loaded.requests()]
    assert [len(r) for r in requests] == [144, 144, 144]
    # Request record: 16 uint16 then floats (CameraFOV first, at byte 32).
    assert struct.unpack_from("<16H", requests[1]) == (
        12345, 2, 20, 1, 0, 720, 16, 10, 1, 127, 0, 0, 1, 10105, 0, 0,
    )  # fmt: skip
    assert struct.unpack_from("<f", requests[0], 32)[0] == pytest.approx(75.5)
    lidar = loaded.sensors[1]
    assert lidar.decode_params().scale_m == 60
    assert lidar.receiver_ip == "127.0.0.1" and lidar.mode == 1


def test_comments_are_stripped_like_the_sdk() -> None:
    text = json.dumps(EXAMPLE, indent=1).replace(
        '"DataCheckFreq": 25,', '"DataCheckFreq": 25, // 25 Hz # still a comment'
    )
    text = "# header comment\n  // another\n" + text
    assert config.parse_config(text).sensors[0].data_check_freq == 25
    broken = json.dumps(EXAMPLE).replace('"VisionSensors"', '"Vision#Sensors"')
    with pytest.raises(ConfigError, match="JSON syntax error"):
        config.parse_config(broken)


@pytest.mark.parametrize(
    ("written", "effective"),
    [
        ([0, 0, 0], [0, 1, 2]),
        ([5, 0, 0], [5, 6, 7]),
        ([0, 3, 0], [0, 3, 4]),
        ([1, 0, 2], [1, 2, 2]),
    ],
)
def test_seq_id_auto_numbering(written: list[int], effective: list[int]) -> None:
    doc = {"VisionSensors": []}
    for i, seq in enumerate(written):
        entry = copy.deepcopy(EXAMPLE["VisionSensors"][0])
        entry["SeqID"] = seq
        entry["SendProtocol"][5] = 20000 + i  # explicit ports: duplicate SeqIDs stay loadable
        doc["VisionSensors"].append(entry)
    assert [s.seq_id for s in config.parse_config(json.dumps(doc)).sensors] == effective


def test_skipped_sensor_uses_up_its_number_and_missing_key_aborts() -> None:
    doc = copy.deepcopy(EXAMPLE)
    for entry in doc["VisionSensors"]:
        entry["SeqID"] = 0
    doc["VisionSensors"][1]["DataWidth"] = 1.0  # a decimal fails the int check
    loaded = config.parse_config(json.dumps(doc))
    assert [s.seq_id for s in loaded.sensors] == [0, 2]
    assert loaded.skipped == ((1, "DataWidth: expected an integer, got 1.0"),)
    del doc["VisionSensors"][2]["CameraFOV"]
    with pytest.raises(ConfigError, match=r"VisionSensors\[2\]: missing required key 'CameraFOV'"):
        config.parse_config(json.dumps(doc))
    with pytest.raises(ConfigError, match="missing required key 'VisionSensors'"):
        config.parse_config("{}")
    with pytest.raises(ConfigError, match="non-empty"):
        config.parse_config('{"VisionSensors": []}')


def test_legacy_layout_and_send_protocol_rewrites() -> None:
    doc = {"VisionSensors": [legacy(e) for e in EXAMPLE["VisionSensors"]]}
    doc["VisionSensors"][0]["SendProtocol"][0] = 0  # shared memory on Windows
    loaded = config.parse_config(json.dumps(doc))
    assert not loaded.new_layout
    assert [len(r.encode()) for r in loaded.requests()] == [92, 92, 92]
    assert loaded.sensors[0].mode == 1  # switched to UDP on Linux
    assert config.parse_config(json.dumps(doc), linux=False).sensors[0].mode == 0
    assert config.parse_config(json.dumps(doc), change_mode=2).sensors[1].mode == 2
    assert loaded.sensors[0].other_params == (0,) * 16
    mixed = {"VisionSensors": [legacy(EXAMPLE["VisionSensors"][0]), EXAMPLE["VisionSensors"][1]]}
    loaded = config.parse_config(json.dumps(mixed))
    assert loaded.new_layout and len(loaded.requests()[0].encode()) == 144
    wrong = copy.deepcopy(EXAMPLE)
    wrong["VisionSensors"][0]["otherParams"] = [0] * 8  # new layout needs 16
    assert config.parse_config(json.dumps(wrong)).skipped[0][0] == 0


def _with(path: tuple, value: object, sensor: int = 1) -> str:
    """EXAMPLE with ``VisionSensors[sensor][path...] = value``, as Config.json text."""
    doc = copy.deepcopy(EXAMPLE)
    target = doc["VisionSensors"][sensor]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("SendProtocol", 5), "10001", r"VisionSensors\[1\]\.SendProtocol\[5\]: expected an "
         r"integer 1\.\.65535, got '10001'"),
        (("SendProtocol", 5), 70000, r"SendProtocol\[5\]: expected an integer 1\.\.65535"),
        (("SendProtocol", 5), 1.5, r"SendProtocol\[5\]: expected an integer"),
        (("SendProtocol", 0), 7, r"SendProtocol\[0\]: expected an integer 0\.\.3, got 7"),
        (("SendProtocol", 2), 256, r"SendProtocol\[2\]: expected an integer 0\.\.255"),
        (("SendProtocol", 7), -1, r"SendProtocol\[7\]: expected an integer 0\.\.65535"),
        (("DataWidth",), 70000, r"VisionSensors\[1\]\.DataWidth: expected an integer 0\.\.65535"),
        (("otherParams", 0), "60", r"VisionSensors\[1\]\.otherParams\[0\]: expected a finite "
         r"number, got '60'"),
        (("otherParams", 0), 0, r"otherParams\[0\]: expected the point-cloud range in metres, "
         r"0\.01 to 10,000, got 0"),
        (("otherParams", 0), -5, r"otherParams\[0\]: expected the point-cloud range"),
        (("otherParams", 3), None, r"otherParams\[3\]: expected a finite number, got None"),
        (("SensorPosXYZ", 2), "x", r"SensorPosXYZ\[2\]: expected a finite number"),
        (("SensorAngQuat", 0), [1], r"SensorAngQuat\[0\]: expected a finite number"),
        (("SensorAngEular", 1), True, r"SensorAngEular\[1\]: expected a finite number"),
        (("CameraFOV",), float("inf"), r"CameraFOV: expected a finite number"),
        # A JSON integer beyond a float's range (rt32: an OverflowError traceback)
        (("CameraFOV",), 10**400, r"CameraFOV: expected a finite number"),
        (("SensorPosXYZ", 0), -10**400, r"SensorPosXYZ\[0\]: expected a finite number"),
        # Finite parts whose squared norm is not (rt32: every reading failed to normalise)
        (("SensorAngQuat", 0), 1e200, r"SensorAngQuat: expected a quaternion of zeros, or one"),
        # ... or whose square is subnormal (rt33: a 90 degree roll was mounted as 84)
        (("SensorAngQuat", 0), 3e-162, r"SensorAngQuat: expected a quaternion of zeros, or one"),
        (("EularOrQuat",), "q", r"EularOrQuat: expected a finite number"),
    ],
)  # fmt: skip
def test_bad_values_fail_at_load_naming_the_item(path: tuple, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config.parse_config(_with(path, value))


CLOUD_RANGE = r"otherParams\[0\]: expected the point-cloud range in metres, 0\.01 to 10,000"
DISTANCE_RANGE = r"otherParams\[0\]: expected the distance sensor's range in metres, at most"
RANGES = [
    (0.01, None),
    (10_000, None),
    (5e-324, CLOUD_RANGE),
    (1e-40, CLOUD_RANGE),
    (0.0099, CLOUD_RANGE),
    (10_000.5, CLOUD_RANGE),
    (1e39, CLOUD_RANGE),
    (1e308, CLOUD_RANGE),
]


@pytest.mark.parametrize(
    ("type_id", "range_m", "refused"),
    [(t, r, refused) for t in (7, 20, 21, 22, 23) for r, refused in RANGES]
    + [(5, 0, None), (5, 10_000, None), (5, 10_001, DISTANCE_RANGE), (5, 1e300, DISTANCE_RANGE)],
)  # fmt: skip
def test_a_range_sensors_range_is_one_a_sensor_has(
    type_id: int, range_m: float, refused: str | None
) -> None:
    """Red team rt34: a point cloud's range of 5e-324 scaled every int16 point to 0 m, 1e308
    made each one inf (dropped, uncounted), and one of 10^7 let LiDAR returns 5,000 km off
    place targets; a distance sensor's of 1e300 lifted the only bound on its readings. A
    distance sensor's 0 still means 100 m."""
    doc = copy.deepcopy(EXAMPLE)
    doc["VisionSensors"][1]["TypeID"] = type_id
    doc["VisionSensors"][1]["otherParams"][0] = range_m
    if refused is None:
        assert config.parse_config(json.dumps(doc)).sensors[1].other_params[0] == range_m
    else:
        with pytest.raises(ConfigError, match=refused):
            config.parse_config(json.dumps(doc))


@pytest.mark.parametrize("type_id", [7, 20, 21, 22, 23])
def test_point_clouds_need_a_positive_range(type_id: int) -> None:
    doc = copy.deepcopy(EXAMPLE)
    doc["VisionSensors"][1]["TypeID"] = type_id
    assert config.parse_config(json.dumps(doc)).sensors[1].decode_params().scale_m == 60.0
    doc["VisionSensors"][1]["otherParams"][0] = 0
    with pytest.raises(ConfigError, match=r"VisionSensors\[1\]\.otherParams\[0\]"):
        config.parse_config(json.dumps(doc))
    doc["VisionSensors"][1]["TypeID"] = 1  # a camera does not use otherParams[0]
    assert config.parse_config(json.dumps(doc)).sensors[1].type_id == 1


def test_duplicate_effective_ports_are_rejected() -> None:
    # Explicit port equal to another sensor's 9999 + SeqID default (10000 for SeqID 1).
    with pytest.raises(
        ConfigError,
        match=r"VisionSensors\[1\]\.SendProtocol\[5\]: expected a port no other sensor uses, "
        r"got 10000 .*VisionSensors\[0\]",
    ):
        config.parse_config(_with(("SendProtocol", 5), 10000))
    # Duplicate SeqIDs (not detected by the SDK) give duplicate default ports.
    doc = copy.deepcopy(EXAMPLE)
    doc["VisionSensors"][2]["SeqID"] = 1
    with pytest.raises(ConfigError, match=r"VisionSensors\[2\].*got 10000"):
        config.parse_config(json.dumps(doc))
    # Shared-memory sensors (Windows) use no port, so they may share one.
    legacy_doc = copy.deepcopy(doc)
    for entry in legacy_doc["VisionSensors"]:
        entry["SendProtocol"][0] = 0
    assert len(config.parse_config(json.dumps(legacy_doc), linux=False).sensors) == 3


def test_values_of_a_skipped_sensor_are_not_checked() -> None:
    doc = copy.deepcopy(EXAMPLE)
    doc["VisionSensors"][1]["SendProtocol"] = ["x"] * 7  # wrong length: the SDK skips it
    loaded = config.parse_config(json.dumps(doc))
    assert [s.index for s in loaded.sensors] == [0, 2]


def test_frame_size_bound_from_data_width_and_height() -> None:
    camera, lidar, targets = config.parse_config(json.dumps(EXAMPLE)).sensors
    assert camera.max_frame_bytes() == 2 * 800 * 600 * 3 + 64 * 1024  # JPEG: twice raw BGR
    raw = dataclasses.replace(camera, send_protocol=(2, *camera.send_protocol[1:]))
    assert raw.max_frame_bytes() == 800 * 600 * 3  # raw pixels: exact
    depth = dataclasses.replace(raw, type_id=2)
    assert depth.max_frame_bytes() == 800 * 600 * 2
    assert lidar.max_frame_bytes() == 1024 * 1024  # 720 x 16 rays: the 1 MiB floor
    big = dataclasses.replace(lidar, data_width=1800, data_height=128)
    assert big.max_frame_bytes() == 36 + 1800 * 128 * 4 * 16  # 4 returns of float32 x,y,z,seg
    assert targets.max_frame_bytes() is None  # no size rule: the reassembler's defaults
    assert dataclasses.replace(camera, data_width=0).max_frame_bytes() is None


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (DEEP.encode(), "JSON syntax error: arrays or objects nested too deeply"),  # RecursionError
        (_with(("TypeID",), 0).replace(": 0,", ": " + DEEP + ",", 1).encode(), "nested too deeply"),
        (b'{"VisionSensors": [' + b"1" * 5000 + b"]}", "JSON value error: Exceeds the limit"),
        (bytes(range(128, 256)) * 2 + bytes(44), "expected UTF-8 text, got byte 0x80 at offset 0"),
    ],
)
def test_a_hostile_file_is_one_config_error_naming_it(
    tmp_path, capsys, content: bytes, message: str
) -> None:
    """Issue 10 item 10: a Config.json nested 100,000 deep printed a RecursionError."""
    path = tmp_path / "Config.json"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as exc:
        config.load_config(path)
    assert str(exc.value).startswith(f"{path}: ") and message in str(exc.value)
    assert main(["rfly", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"rfly: {exc.value}\n"


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=17) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=40,
)
_KEYS = list(EXAMPLE["VisionSensors"][0])


@given(
    sensor=st.integers(0, 2),
    key=st.sampled_from(_KEYS),
    item=st.none() | st.integers(0, 15),
    value=_json_values,
)
def test_any_json_value_anywhere_gives_a_config_or_a_config_error(
    sensor: int, key: str, item: int | None, value: object
) -> None:
    doc = copy.deepcopy(EXAMPLE)
    entry = doc["VisionSensors"][sensor]
    if item is not None and isinstance(entry[key], list) and item < len(entry[key]):
        entry[key][item] = value
    else:
        entry[key] = value
    try:
        config.parse_config(json.dumps(doc))
    except ConfigError as exc:
        assert "\n" not in str(exc)


@given(text=st.text(max_size=300) | st.binary(max_size=300).map(lambda b: b.decode("latin-1")))
def test_any_text_gives_a_config_or_a_config_error(text: str) -> None:
    try:
        config.parse_config(text)
    except ConfigError as exc:
        assert "\n" not in str(exc)


def _distance_sensors(count: int, copter: int = 1) -> dict:
    base = dict(EXAMPLE["VisionSensors"][0], TypeID=5, DataWidth=1, DataHeight=1)
    return {
        "VisionSensors": [
            dict(base, SeqID=k + 1, TargetCopter=copter, SendProtocol=[1, 127, 0, 0, 1, 0, 0, 0])
            for k in range(count)
        ]
    }


def test_sensors_per_vehicle_are_capped() -> None:
    """Issue 17 item 5: 3,000 distance sensors gave 3,004 threads and 325 MB."""
    limit = config.MAX_SENSORS_PER_VEHICLE
    assert len(config.parse_config(json.dumps(_distance_sensors(limit))).sensors) == limit
    with pytest.raises(ConfigError, match=f"at most {limit} sensors per vehicle, got 3000"):
        config.parse_config(json.dumps(_distance_sensors(3000)))


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "huge"])
def test_anything_but_a_small_regular_file_is_one_config_error(tmp_path, capsys, kind) -> None:
    """Issue 17 item 5: /dev/zero grew until memory ran out, and a FIFO hung the start with
    nothing printed (open() blocks until a writer comes; nothing writes here)."""
    import os

    path = tmp_path / "Config.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = "/dev/zero"
    elif kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(b" " * (config.MAX_CONFIG_BYTES + 1))
    with pytest.raises(ConfigError) as exc:
        config.load_config(path)
    message = str(exc.value)
    assert message.startswith(str(path)) and "\n" not in message
    expected = "at most" if kind == "huge" else "expected a regular Config.json file"
    assert expected in message
    assert main(["rfly", "--config", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_file_of_many_bad_entries_is_one_short_line() -> None:
    """rt59: 500,000 entries that are not objects (a 1 MB file) made one error line of 18 MB,
    and a 4,000-digit width a line of 4 KB."""
    with pytest.raises(ConfigError) as many:
        config.parse_config(json.dumps({"VisionSensors": [1] * 500_000}))
    assert "no sensor accepted" in str(many.value) and "and 499997 more" in str(many.value)
    assert len(str(many.value)) < 500
    wide = copy.deepcopy(EXAMPLE)
    wide["VisionSensors"] = wide["VisionSensors"][:1]
    wide["VisionSensors"][0]["DataWidth"] = int("9" * 4000)
    with pytest.raises(ConfigError) as one:
        config.parse_config(json.dumps(wide))
    assert "DataWidth" in str(one.value) and len(str(one.value)) < 500
