"""JSON Schemas (draft 2020-12), one per JSON Lines message ``type`` that gizmo-host emits."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

MESSAGE_TYPES = ("version", "result", "link", "verdict", "stats", "error")


def load_schema(message_type: str) -> dict[str, Any]:
    """The schema for messages whose ``type`` is ``message_type``."""
    if message_type not in MESSAGE_TYPES:
        raise ValueError(
            f"message_type: expected one of {', '.join(MESSAGE_TYPES)}, got {message_type!r}"
        )
    text = resources.files(__name__).joinpath(f"{message_type}.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema
