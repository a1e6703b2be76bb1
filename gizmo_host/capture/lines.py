"""The host's JSON Lines, encoded as ``gizmo-host run`` prints them (compact, no NaN).

Both the recorder (the ``/gizmo/host/TYPE`` channels) and offline replay (stdout) encode here,
so a replay's lines compare byte for byte with what the live host printed.
"""

from __future__ import annotations

import json
from typing import Any

from gizmo_host.stream.events import LinkEvent, ReceivedResult
from gizmo_host.stream.store import LinkVerdict

HostMessage = ReceivedResult | LinkEvent | LinkVerdict

_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)  # stateless, reused


def encode_line(obj: dict[str, Any]) -> bytes:
    return _ENCODER.encode(obj).encode() + b"\n"


def message_line(message: HostMessage, now_ns: int) -> tuple[str, bytes]:
    """(type, line) of a service message published at ``now_ns``."""
    if isinstance(message, ReceivedResult):
        return "result", message.to_json_line(now_ns)
    if isinstance(message, LinkEvent):
        return "link", encode_line(message.to_dict())
    return "verdict", encode_line(message.to_dict())
