"""The one JSON-line encoding: every line a command prints, serves or records.

Compact (no spaces) and strict JSON (RFC 8259): a non-finite float (a NaN or an infinity that a
peer sent) is written ``null``, never the non-JSON tokens ``NaN``/``Infinity``. stdout, the Unix
socket, UDP, Zenoh, the Foxglove view and the captures' ``/gizmo/host`` channels all encode
here, so offline replay's lines compare byte for byte with what the live host printed (the
goldens in tests/captures). A leaf: the standard library only. The per-frame ``result`` line
is built from a template instead (``ReceivedResult.to_json_line``, tested to parse the same).
"""

from __future__ import annotations

import json
import math
from typing import Any

_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)  # stateless, reused


def encode_line(obj: Any) -> bytes:
    """``obj`` as one JSON line: UTF-8, newline-terminated."""
    return json_text(obj).encode() + b"\n"


def json_text(obj: Any) -> str:
    """``obj`` as JSON on one line, without the newline (for a text stream's ``print``)."""
    try:
        return _ENCODER.encode(obj)
    except ValueError:  # only a non-finite float: rare, so the usual path stays one call
        return _ENCODER.encode(_finite(obj))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
