"""The shipped Foxglove layout (``layout.json``, in Foxglove's own export format).

A 3D panel in ``map`` following ``base_link`` (the scene, the trail, the LiDAR and a grid in
``map``), the camera image with the board's boxes, plots of the verdict and of the target's
age (bearing and clock offset a click away), the raw world message and the log. It names only
topics of ``topics``; ``gizmo-host foxglove-layout > gizmo.json`` writes it out for the app's
"Import from file...". Needs nothing but the standard library.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib import resources
from typing import Any

_TOPIC = re.compile(r"^/gizmo/[A-Za-z0-9_/]+")


def layout_text() -> str:
    return resources.files(__package__).joinpath("layout.json").read_text(encoding="utf-8")


def layout() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(layout_text())
    return value


def named_topics(value: Any) -> set[str]:
    """Every ``/gizmo/...`` topic a layout names, as a key or in a message path."""
    return {m.group(0) for text in _strings(value) if (m := _TOPIC.match(text))}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
