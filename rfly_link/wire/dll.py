"""Tables for CopterSim's DLL vehicle models: inputs on 30100 + 2(N - 1), outputs on the odd ports.

No spec describes these; the formats come from the public SDK's ``DllSimCtrlAPI.py``
(``DllSimCtrlAPI`` senders and the ``ModelLoad`` stand-in for CopterSim).
"""

from __future__ import annotations

from rfly_link.wire.layout import Layout, _f

DLL_IN_DOUB_CTRLS = Layout(
    "DllInDoubCtrls",
    "SDK sendInDoubCtrls / sendSILIntDouble / sendInCtrlExtDoub, 232 B <2i28d",
    [
        _f("checksum", "i", doc="1234567897; inCtrlExt k: 1234567800 + k (+100: no update)"),
        _f("copter_id", "i"),
        _f("values", "d", 28),
    ],
)

PX4_MODEL_IN_PARAMS = Layout(
    "PX4ModelInParams",
    "SDK sendModelInParams / sendInitInParams, 264 B <iI32d (sendInitInParams packs the "
    "bitmask as int: the same bytes below 2**31)",
    [
        _f("checksum", "i", doc="1234567891 FaultInParams, 1234567892 InitInParams"),
        _f("bitmask", "I", doc="bit k set: in_params[k] is valid"),
        _f("in_params", "d", 32),
    ],
)

VECTOR_32D = Layout(
    "UEToCopterDataD/outCopterStruct",
    "SDK sendUE2Coptersim, ModelLoad.SendOutCopter, 264 B <ii32d",
    [
        _f("checksum", "i", doc="1234567899 to the model, 1234567890 from it"),
        _f("copter_id", "i"),
        _f("values", "d", 32),
    ],
)

DYN_MODI_PARAMS = Layout(
    "PX4DynModiParams",
    "SDK sendDynModiParams, 528 B <iiQ64d",
    [
        _f("checksum", "i", doc="1234567893"),
        _f("copter_id", "i"),
        _f("bitmask", "Q", doc="bit k set: in_params[k] is valid"),
        _f("in_params", "d", 64),
    ],
)

RAY_TRACE_DRONE = Layout(
    "Ue4RayTraceDrone",
    "SDK sendFloatsColl, 60 B <ii13f",
    [
        _f("checksum", "i", doc="1234567890"),
        _f("copter_id", "i"),
        _f("size_m", "f"),
        _f("velocity_ned_m_s", "f", 3),
        _f("ray_m", "f", 6, doc="front, back, left, right, up, down"),
        _f("position_ned_m", "f", 3),
    ],
)

VECTOR_20F = Layout(
    "Ue4Coll20d",
    "SDK sendColl20d / sendTerrIn15d, 88 B <ii20f",
    [
        _f("checksum", "i", doc="1234567880 inCollision20d, 1234567881 TerrainIn15d"),
        _f("copter_id", "i"),
        _f("values", "f", 20, doc="TerrainIn15d uses the first 15"),
    ],
)

CUSTOM_DATA = Layout(
    "CustomData",
    "SDK sendCustomData, 136 B <ii16d to port 50000 by default",
    [
        _f("checksum", "i", doc="123456 by default; the sender chooses"),
        _f("copter_id", "i"),
        _f("values", "d", 16),
    ],
)
