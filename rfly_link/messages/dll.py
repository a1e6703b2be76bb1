"""Inputs and outputs of CopterSim's DLL vehicle models (``30100 + 2(N - 1)`` in, odd port out).

No spec describes these; formats and values come from the public SDK's ``DllSimCtrlAPI.py``.
Several share a length and differ by checksum only (120, 232, 264 and 88 B): the checksum,
never the sender's intent, picks the class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rfly_link.messages.base import WireMessage, izeros, message_dataclass, wire_message, zeros
from rfly_link.wire import checksums as cs
from rfly_link.wire import coptersim as wc
from rfly_link.wire import dll as w

IN_CTRL_EXT_PORTS = range(1, 6)  # the DLL's inCtrlExt1..inCtrlExt5


def _ext_index(checksum: int) -> int:
    return (checksum - cs.IN_CTRL_EXT_BASE) % cs.IN_CTRL_EXT_NO_UPDATE


def _params(params: Mapping[int, float], count: int, what: str) -> tuple[int, tuple[float, ...]]:
    """A bitmask and a value vector from ``{index: value}``."""
    values = [0.0] * count
    bitmask = 0
    for index, value in params.items():
        if not 0 <= index < count:
            raise ValueError(f"{what}: parameter index expected 0..{count - 1}, got {index}")
        values[index] = float(value)
        bitmask |= 1 << index
    return bitmask, tuple(values)


@wire_message(w.DLL_IN_DOUB_CTRLS, cs.DLL_IN_DOUB_CTRLS)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class DllInDoubCtrls(WireMessage):
    """``sendInDoubCtrls`` / ``sendSILIntDouble`` (232 B): the model's inDoubCtrls[28]."""

    checksum: int = cs.DLL_IN_DOUB_CTRLS
    copter_id: int = 0
    values: tuple[float, ...] = zeros(28)

    @classmethod
    def from_sil(
        cls, copter_id: int, in_ints: Sequence[int], in_values: Sequence[float]
    ) -> DllInDoubCtrls:
        """``sendSILIntDouble``: SILIntFloat's 8 ints and 20 values, all sent as doubles."""
        if len(in_ints) != 8 or len(in_values) != 20:
            raise ValueError(
                f"DllInDoubCtrls.values: expected 8 ints and 20 values, "
                f"got {len(in_ints)} and {len(in_values)}"
            )
        return cls(copter_id=copter_id, values=(*map(float, in_ints), *map(float, in_values)))


@wire_message(w.DLL_IN_DOUB_CTRLS, *cs.IN_CTRL_EXT_DOUBLE)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class DllInCtrlExtDoub(WireMessage):
    """``sendInCtrlExtDoub`` (232 B): 28 doubles for inCtrlExt1..5.

    Checksum ``1234567800 + index``, plus 100 when the model should wait for the next index
    before updating (``sendInCtrlExtAll`` sends indexes 1..k, updating on the last).
    """

    checksum: int = cs.IN_CTRL_EXT_BASE + 1
    copter_id: int = 0
    values: tuple[float, ...] = zeros(28)

    @classmethod
    def for_port(
        cls, copter_id: int, index: int, values: Sequence[float], *, update: bool = True
    ) -> DllInCtrlExtDoub:
        if index not in IN_CTRL_EXT_PORTS:
            raise ValueError(f"DllInCtrlExtDoub.index: expected 1..5, got {index}")
        checksum = cs.IN_CTRL_EXT_BASE + index + (0 if update else cs.IN_CTRL_EXT_NO_UPDATE)
        return cls(checksum, copter_id, tuple(values))

    @property
    def index(self) -> int:
        return _ext_index(self.checksum)

    @property
    def update(self) -> bool:
        return self.checksum in cs.IN_CTRL_EXT


@wire_message(wc.SIL_INT_FLOAT, *cs.IN_CTRL_EXT)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class DllInCtrlExt(WireMessage):
    """``sendInCtrlExt`` (120 B, SILIntFloat's layout): inCtrlExt1..5 as 8 ints + 20 floats."""

    checksum: int = cs.IN_CTRL_EXT_BASE + 1
    copter_id: int = 0
    in_ints: tuple[int, ...] = izeros(8)
    in_floats: tuple[float, ...] = zeros(20)

    @property
    def index(self) -> int:
        return _ext_index(self.checksum)


@wire_message(w.PX4_MODEL_IN_PARAMS, cs.MODEL_IN_PARAMS)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class PX4ModelInParams(WireMessage):
    """``sendModelInParams`` (264 B): FaultParamAPI.FaultInParams; bit k validates param k."""

    checksum: int = cs.MODEL_IN_PARAMS
    bitmask: int = 0
    in_params: tuple[float, ...] = zeros(32)

    @classmethod
    def from_params(cls, params: Mapping[int, float]) -> PX4ModelInParams:
        bitmask, values = _params(params, 32, cls.__name__)
        return cls(bitmask=bitmask, in_params=values)


@wire_message(w.PX4_MODEL_IN_PARAMS, cs.INIT_IN_PARAMS)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class PX4InitInParams(WireMessage):
    """``sendInitInParams`` (264 B): FaultParamAPI.InitInParams; bit k validates param k."""

    checksum: int = cs.INIT_IN_PARAMS
    bitmask: int = 0
    in_params: tuple[float, ...] = zeros(32)

    @classmethod
    def from_params(cls, params: Mapping[int, float]) -> PX4InitInParams:
        bitmask, values = _params(params, 32, cls.__name__)
        return cls(bitmask=bitmask, in_params=values)


@wire_message(w.DYN_MODI_PARAMS, cs.DYN_MODI_PARAMS)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class PX4DynModiParams(WireMessage):
    """``sendDynModiParams`` (528 B): FaultParamAPI.DynModiParams; bit k validates param k."""

    checksum: int = cs.DYN_MODI_PARAMS
    copter_id: int = 0
    bitmask: int = 0
    in_params: tuple[float, ...] = zeros(64)

    @classmethod
    def from_params(cls, copter_id: int, params: Mapping[int, float]) -> PX4DynModiParams:
        bitmask, values = _params(params, 64, cls.__name__)
        return cls(copter_id=copter_id, bitmask=bitmask, in_params=values)


@wire_message(w.VECTOR_32D, cs.UE_TO_COPTERSIM)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class UEToCopterData(WireMessage):
    """``sendUE2Coptersim`` (264 B): 32 doubles for the model's inFromUE input."""

    checksum: int = cs.UE_TO_COPTERSIM
    copter_id: int = 0
    values: tuple[float, ...] = zeros(32)


@wire_message(w.VECTOR_32D, cs.OUT_COPTER)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class OutCopterData(WireMessage):
    """The model's 32 outCopterData doubles (264 B on ``30100 + 2N - 1``; ``SendOutCopter``)."""

    checksum: int = cs.OUT_COPTER
    copter_id: int = 0
    values: tuple[float, ...] = zeros(32)


@wire_message(w.RAY_TRACE_DRONE, cs.RAY_TRACE_DRONE)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class RayTraceDrone(WireMessage):
    """``sendFloatsColl`` (60 B): size, velocity, six ray distances and position for collisions."""

    checksum: int = cs.RAY_TRACE_DRONE
    copter_id: int = 0
    size_m: float = 0.0
    velocity_ned_m_s: tuple[float, ...] = zeros(3)
    ray_m: tuple[float, ...] = zeros(6)
    position_ned_m: tuple[float, ...] = zeros(3)


@wire_message(w.VECTOR_20F, cs.COLLISION_20D)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class Collision20d(WireMessage):
    """``sendColl20d`` (88 B): the model's inCollision20d input."""

    checksum: int = cs.COLLISION_20D
    copter_id: int = 0
    values: tuple[float, ...] = zeros(20)


@wire_message(w.VECTOR_20F, cs.TERRAIN_15D)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class TerrainIn15d(WireMessage):
    """``sendTerrIn15d`` (88 B, Ue4Coll20d's layout): the model's TerrainIn15d, first 15 used."""

    checksum: int = cs.TERRAIN_15D
    copter_id: int = 0
    values: tuple[float, ...] = zeros(20)


@wire_message(w.CUSTOM_DATA, cs.CUSTOM_DATA)
@message_dataclass(frozen=True, slots=True, eq=False, repr=False)
class CustomData(WireMessage):
    """``sendCustomData`` (136 B, port 50000 by default): 16 doubles for Simulink or others.

    The sender chooses the checksum (123456 by default), so only the port identifies it.
    """

    ANY_CHECKSUM: ClassVar[bool] = True

    checksum: int = cs.CUSTOM_DATA
    copter_id: int = 0
    values: tuple[float, ...] = zeros(16)
