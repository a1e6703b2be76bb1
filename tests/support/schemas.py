"""JSON Schema validators built once per schema and shared by every test that checks lines.

``jsonschema.validate(instance, schema)`` checks the schema itself and builds a validator on
every call: a test that validates each line of a long run spent most of its time there (on
Python 3.13 one timed out at 120 s inside it). Build each validator once and reuse it.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema

from gizmo_host.schemas import MESSAGE_TYPES, load_schema


@functools.cache
def validator(message_type: str) -> jsonschema.protocols.Validator:
    """The checked validator for gizmo-host's ``message_type`` lines."""
    return schema_validator(json.dumps(load_schema(message_type), sort_keys=True))


@functools.cache
def schema_validator(schema_json: str) -> jsonschema.protocols.Validator:
    """The checked validator for any schema, given as JSON text (a hashable key)."""
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    built: jsonschema.protocols.Validator = cls(schema)
    return built


def validate_schema(instance: Any, schema: dict[str, Any]) -> None:
    """``jsonschema.validate`` with the validator built once per distinct schema."""
    schema_validator(json.dumps(schema, sort_keys=True)).validate(instance)


def validate_message(message: dict[str, Any]) -> None:
    """Check a gizmo-host line against the schema of its own ``type``."""
    assert message["type"] in MESSAGE_TYPES, message
    validator(message["type"]).validate(message)


def validate_as(message: Any, message_type: str) -> None:
    """Check ``message`` against the schema of ``message_type``."""
    validator(message_type).validate(message)
