"""A small valid RflySim Config.json: the three vision sensors the config tests start from."""

from __future__ import annotations

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
