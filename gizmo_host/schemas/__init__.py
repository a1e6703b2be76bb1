"""JSON Schemas (draft 2020-12), one per JSON Lines message ``type`` that gizmo-host emits.

``world`` snapshots are fusion's own ``WorldSnapshot.to_dict()``: their schema is the one
``fusion/schemas/world.json`` defines (``fusion.world_schema()``), not a copy that could drift.
``fleet_vehicle`` lines are ``gizmo-host fleet --json``'s.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from fusion import world_schema

MESSAGE_TYPES = (
    "version", "result", "link", "verdict", "stats", "error", "world", "fleet_vehicle",
)  # fmt: skip


def load_schema(message_type: str) -> dict[str, Any]:
    """The schema for messages whose ``type`` is ``message_type``."""
    if message_type not in MESSAGE_TYPES:
        raise ValueError(
            f"message_type: expected one of {', '.join(MESSAGE_TYPES)}, got {message_type!r}"
        )
    if message_type == "world":
        return world_schema()
    text = resources.files(__name__).joinpath(f"{message_type}.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema
