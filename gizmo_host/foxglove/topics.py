"""The Foxglove contract: topic names, message schemas and the frames, defined once.

The live server, a capture's Foxglove channels and the shipped layout all name these topics.
Protobuf topics carry the SDK's own schema (``foxglove.SceneUpdate`` ...); JSON topics carry
the JSON Schema of the host's own line of that type, so a world message in Foxglove is the
world line, byte for byte.

Frames follow MAVROS: ``map`` (ENU) -> ``map_ned`` is static, each pose is ``map_ned`` ->
``base_link_frd`` in raw NED, ``base_link_frd`` -> ``base_link`` (FLU) is static, targets are
in ``map_ned``; the camera (``camera``: x optical axis, y right, z down, as fusion's camera
axes) hangs from ``base_link_frd`` at its mount, and ``camera_optical`` (z forward, x right,
y down) is the image's frame.

Every log time is host ``time.monotonic_ns()``, the clock the world line and the captures
use: one clock per file and per server.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from gizmo_host.schemas import load_schema

TF = "/gizmo/tf"  # foxglove.FrameTransforms
SCENE = "/gizmo/scene"  # foxglove.SceneUpdate: the vehicle, each target's ray and point
TRAIL = "/gizmo/trail"  # foxglove.SceneUpdate: the vehicle's recent path
IMAGE = "/gizmo/camera/image"  # foxglove.RawImage
ANNOTATIONS = "/gizmo/camera/annotations"  # foxglove.ImageAnnotations: the board's boxes
LIDAR = "/gizmo/lidar"  # foxglove.PointCloud
WORLD = "/gizmo/world"  # JSON: the world line
RESULT = "/gizmo/result"  # JSON: the result line
LINK = "/gizmo/link"  # JSON: the link line
VERDICT = "/gizmo/verdict"  # JSON: the verdict line
STATS = "/gizmo/stats"  # JSON: the stats line
PLOT = "/gizmo/plot"  # JSON: numbers for the Plot panel (verdict, age, bearing, clock offset)
LOG = "/gizmo/log"  # foxglove.Log: link transitions and verdict changes, as text

FRAME_MAP = "map"
FRAME_MAP_NED = "map_ned"
FRAME_BODY_FRD = "base_link_frd"
FRAME_BODY = "base_link"
FRAME_CAMERA = "camera"
FRAME_OPTICAL = "camera_optical"

# topic -> the SDK message class name (protobuf) or None (JSON with its own schema)
PROTOBUF: MappingProxyType[str, str] = MappingProxyType(
    {
        TF: "FrameTransforms",
        SCENE: "SceneUpdate",
        TRAIL: "SceneUpdate",
        IMAGE: "RawImage",
        ANNOTATIONS: "ImageAnnotations",
        LIDAR: "PointCloud",
        LOG: "Log",
    }
)
JSON_TYPES: MappingProxyType[str, str] = MappingProxyType(
    {WORLD: "world", RESULT: "result", LINK: "link", VERDICT: "verdict", STATS: "stats"}
)
TOPICS: tuple[str, ...] = (*PROTOBUF, *JSON_TYPES, PLOT)

PLOT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "gizmo-host plot series",
    "description": "Numbers for the Plot panel. From a world snapshot: verdict (1 PROCEED, "
    "0 HOLD) and, for the selected target, age_ms, azimuth_deg, elevation_deg, range_m "
    "(null when HOLD). From a result: clock_offset_ms, the host capture time minus the "
    "device's capture time (a jump is a clock re-anchor).",
    "type": "object",
    "properties": {
        "source": {"enum": ["world", "result"]},
        "verdict": {"type": "integer", "enum": [0, 1]},
        "targets": {"type": "integer", "minimum": 0},
        "age_ms": {"type": ["number", "null"]},
        "azimuth_deg": {"type": ["number", "null"]},
        "elevation_deg": {"type": ["number", "null"]},
        "range_m": {"type": ["number", "null"]},
        "clock_offset_ms": {"type": ["number", "null"]},
    },
    "required": ["source"],
}


def json_schema(topic: str) -> dict[str, Any]:
    """The JSON Schema of a JSON topic (the host line's own, or the plot's)."""
    if topic == PLOT:
        return PLOT_SCHEMA
    message_type = JSON_TYPES.get(topic)
    if message_type is None:
        raise ValueError(f"topic: expected a JSON topic ({', '.join(JSON_TYPES)}), got {topic!r}")
    return load_schema(message_type)


def schema_title(topic: str) -> str:
    """The schema name a JSON topic is advertised and recorded with."""
    return "gizmo_host.plot" if topic == PLOT else f"gizmo_host.{JSON_TYPES[topic]}"
