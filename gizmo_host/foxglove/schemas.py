"""Each topic's schema and message encoding, as advertised live and recorded in a capture:
the SDK's protobuf descriptor set for its message types, the host line's JSON Schema for the
JSON topics."""

from __future__ import annotations

import json

from foxglove import Schema
from foxglove import messages as fm

from gizmo_host.capture.channels import ViewChannel
from gizmo_host.foxglove import topics as tp


def sdk_schema(topic: str) -> Schema:
    name = tp.PROTOBUF.get(topic)
    if name is not None:
        schema: Schema = getattr(fm, name).get_schema()
        return schema
    return Schema(
        name=tp.schema_title(topic),
        encoding="jsonschema",
        data=json.dumps(tp.json_schema(topic)).encode(),
    )


def message_encoding(topic: str) -> str:
    return "protobuf" if topic in tp.PROTOBUF else "json"


def view_channel(topic: str) -> ViewChannel:
    """``topic`` as a capture channel, its schema as the SDK gives it."""
    schema = sdk_schema(topic)
    return ViewChannel(topic, message_encoding(topic), schema.name, schema.encoding, schema.data)
