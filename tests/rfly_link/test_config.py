"""Config.json loading against the behaviour documented in rflysim-config-json.md."""

from __future__ import annotations

import copy
import json
import struct

import pytest

from rfly_link import config
from rfly_link.errors import ConfigError

EXAMPLE = {
    "VisionSensors": [
        {
            "SeqID": 1,
            "TypeID": 1,
            "TargetCopter": 1,
            "TargetMountType": 0,
            "DataWidth": 800,
            "DataHeight": 600,
            "DataCheckFreq": 25,
            "SendProtocol": [1, 127, 0, 0, 1, 0, 0, 0],
            "CameraFOV": 75.5,
            "SensorPosXYZ": [0.15, 0.0, 0.04],
            "EularOrQuat": 0,
            "SensorAngEular": [0, -15, 0],
            "SensorAngQuat": [1, 0, 0, 0],
            "otherParams": [0] * 16,
        },
        {
            "SeqID": 0,
            "TypeID": 20,
            "TargetCopter": 1,
            "TargetMountType": 0,
            "DataWidth": 720,
            "DataHeight": 16,
            "DataCheckFreq": 10,
            "SendProtocol": [1, 127, 0, 0, 1, 10105, 0, 0],
            "CameraFOV": 0,
            "SensorPosXYZ": [0.0, 0.0, -0.12],
            "EularOrQuat": 0,
            "SensorAngEular": [0, 0, 0],
            "SensorAngQuat": [1, 0, 0, 0],
            "otherParams": [60] + [0] * 15,
        },
        {
            "SeqID": 0,
            "TypeID": 30,
            "TargetCopter": 1,
            "TargetMountType": 0,
            "DataWidth": 640,
            "DataHeight": 480,
            "DataCheckFreq": 15,
            "SendProtocol": [1, 127, 0, 0, 1, 0, 0, 0],
            "CameraFOV": 70,
            "SensorPosXYZ": [0.1, 0.0, 0.0],
            "EularOrQuat": 0,
            "SensorAngEular": [0, 0, 0],
            "SensorAngQuat": [1, 0, 0, 0],
            "otherParams": [150, 8] + [0] * 14,
        },
    ]
}


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
    assert lidar.decode_params()["scale_m"] == 60
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
    for seq in written:
        entry = copy.deepcopy(EXAMPLE["VisionSensors"][0])
        entry["SeqID"] = seq
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
