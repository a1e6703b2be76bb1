"""Target-list payloads: TypeID 30 boxes and TypeID 31 relative positions (VSP 2.8)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rfly_link import messages as m
from rfly_link import wire
from rfly_link.errors import InconsistentPayload, WrongLength
from rfly_link.messages import TypeId

TARGET_TYPES = frozenset({TypeId.BOX_TARGETS, TypeId.RADAR_TARGETS})


@dataclass(frozen=True, slots=True)
class TargetList:
    """TypeID 30 boxes or TypeID 31 relative positions."""

    type_id: int
    targets: tuple[m.BoxTarget, ...] | tuple[m.RadarTarget, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "TargetList",
            "type_id": self.type_id,
            "targets": [t.to_dict() for t in self.targets],
        }


def decode_targets(type_id: int, payload: bytes | bytearray | memoryview) -> TargetList:
    entry = m.BoxTarget if type_id == TypeId.BOX_TARGETS else m.RadarTarget
    size = entry.LAYOUT.size
    if len(payload) < 4:
        raise WrongLength(f"targets TypeID {type_id}: need 4 B for target_count")
    (count,) = wire.TARGET_COUNT.unpack_from(payload)
    if count < 0 or len(payload) != 4 + count * size:
        raise InconsistentPayload(
            f"targets TypeID {type_id}: target_count {count} needs {4 + max(count, 0) * size} B, "
            f"got {len(payload)}"
        )
    layout = entry.LAYOUT
    targets = tuple(entry(*layout.unpack(payload, 4 + i * size)) for i in range(count))
    return TargetList(type_id, targets)  # type: ignore[arg-type]


def encode_targets(targets: Sequence[m.BoxTarget] | Sequence[m.RadarTarget]) -> bytes:
    return wire.TARGET_COUNT.pack(len(targets)) + b"".join(t.encode() for t in targets)
