"""The channels of a gizmo-host MCAP capture: topics, encodings and schemas, defined once.

The writer registers them, the reader recognises them and docs/record-replay.md documents
them, all from the definitions here. Every log time is host ``time.monotonic_ns()``
(``CLOCK_MONOTONIC``), the clock the live host stamps everything with, so a replay feeds the
pipeline the recorded times.

Inputs (what the host reads; replay feeds these):

- ``/gizmo/uart``: each chunk read from the serial port, byte for byte, at its receive time.
- ``/gizmo/uart/port``: what happened to the port that the bytes cannot tell (an open started,
  failed or succeeded, the connection was lost, the link stopped), as JSON.
- ``/rflysim/udp/PORT``: each RflySim datagram received on ``PORT``, byte for byte; one MCAP
  channel per (port, sender), the sender in the channel's metadata.

Outputs (what the host printed; replay recomputes them): ``/gizmo/host/TYPE`` for each JSON Lines
``type`` (``result``, ``link``, ``verdict``, ``stats``, ``world``), one JSON object per message.

The view (with the ``foxglove`` extra; replay recomputes it too): the Foxglove topics
(``/gizmo/tf``, ``/gizmo/scene``, ``/gizmo/world`` ...) in Foxglove's schemas, each a
``ViewChannel``, so the capture opens in Foxglove with the shipped layout.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any

from gizmo_core import LinkState
from gizmo_host.jsonl import encode_line, json_text
from gizmo_host.schemas import load_schema
from gizmo_host.stream.events import LinkEvent, ReceivedResult
from gizmo_host.stream.linkstate import REASON_STOPPED, LinkInput
from gizmo_host.stream.store import LinkVerdict

CAPTURE_FORMAT_VERSION = 1
# The longest gap between two recorded inputs that a replay, offline or paced, goes through. A
# recording's times are one host's monotonic clock, read as each input came; a day without a
# single input (the recorder keeps the port's events and the RflySim datagrams too) is a
# damaged time: offline, running the periodic timers across years of it would never end, and
# paced, the player would sleep through it.
MAX_GAP_NS = 24 * 3_600_000_000_000
PROFILE = ""  # no MCAP profile: the channels below say what they hold
CAPTURE_METADATA = "gizmo-host.capture"  # format_version, package_version, clocks at start
SETTINGS_METADATA = "gizmo-host.settings"  # the host settings in force (``HostSettings``)
WORLD_METADATA = "gizmo-host.world"  # the world model's settings, when it ran

RAW_ENCODING = "application/octet-stream"  # message data = the bytes exactly as received
JSON_ENCODING = "json"
JSON_SCHEMA_ENCODING = "jsonschema"

UART_TOPIC = "/gizmo/uart"
PORT_TOPIC = "/gizmo/uart/port"
UDP_TOPIC_PREFIX = "/rflysim/udp/"
HOST_TOPIC_PREFIX = "/gizmo/host/"
HOST_TYPES = ("result", "link", "verdict", "stats", "world")


class ChannelKind(Enum):
    UART = "uart"
    PORT = "port"
    UDP = "udp"
    HOST = "host"


# The port inputs a capture records: those the bytes and the clock cannot reproduce. A FRAME
# follows from a chunk that parses, a SILENCE from the clock.
PORT_EVENTS = MappingProxyType(
    {
        i.value: i
        for i in (
            LinkInput.OPEN_STARTED,
            LinkInput.OPEN_FAILED,
            LinkInput.OPENED,
            LinkInput.LOST,
            LinkInput.STOPPED,
        )
    }
)

PORT_EVENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "gizmo-host serial port event",
    "type": "object",
    "required": ["event", "reason"],
    "properties": {
        "event": {"enum": list(PORT_EVENTS)},
        "reason": {"type": "string"},
    },
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class ChannelSpec:
    """One channel as registered: topic, message encoding and schema (None: schemaless)."""

    topic: str
    message_encoding: str
    schema_name: str | None = None
    schema: dict[str, Any] | None = None

    def schema_bytes(self) -> bytes:
        return b"" if self.schema is None else json.dumps(self.schema, indent=1).encode()


@dataclass(frozen=True, slots=True)
class ViewChannel:
    """A viewer's channel (the Foxglove topics, ``gizmo_host.foxglove.topics``): its schema
    comes whole from whoever defines it (the Foxglove SDK's protobuf descriptor set, or a JSON
    Schema), and the capture stores it as given. The reader skips these channels (counted):
    replay recomputes them."""

    topic: str
    message_encoding: str
    schema_name: str
    schema_encoding: str
    schema_data: bytes


UART = ChannelSpec(UART_TOPIC, RAW_ENCODING)
PORT = ChannelSpec(PORT_TOPIC, JSON_ENCODING, "gizmo_host.PortEvent", PORT_EVENT_SCHEMA)


def udp_channel(port: int) -> ChannelSpec:
    return ChannelSpec(f"{UDP_TOPIC_PREFIX}{port}", RAW_ENCODING)


def host_channel(message_type: str) -> ChannelSpec:
    """The channel of the host's ``message_type`` JSON Lines, with that type's JSON Schema."""
    if message_type not in HOST_TYPES:
        raise ValueError(f"message_type: expected one of {', '.join(HOST_TYPES)}")
    if message_type == "world":
        from fusion import world_schema  # noqa: PLC0415 - only captures with a world need it

        schema = world_schema()
    else:
        schema = load_schema(message_type)
    return ChannelSpec(
        HOST_TOPIC_PREFIX + message_type, JSON_ENCODING, f"gizmo_host.{message_type}", schema
    )


def kind_of(topic: str) -> ChannelKind | None:
    """Which of our channels ``topic`` is, None for a channel of someone else's."""
    if topic == UART_TOPIC:
        return ChannelKind.UART
    if topic == PORT_TOPIC:
        return ChannelKind.PORT
    if topic.startswith(UDP_TOPIC_PREFIX):
        return ChannelKind.UDP
    if topic.startswith(HOST_TOPIC_PREFIX):
        return ChannelKind.HOST
    return None


# Our names' letters and digits: a name of ASCII holding something within two edits of one of
# these (case and separators aside) reads like ours.
_INPUT_SKELETONS = ("gizmouart", "rflysimudp")
_METADATA_SKELETONS = ("gizmohost",)


def _skeleton(name: str) -> str:
    """``name``'s letters and digits, in lower case."""
    return "".join(c for c in name.lower() if c.isalnum())


def _substring_distance(word: str, text: str) -> int:
    """The fewest edits that turn ``word`` into some substring of ``text`` (Sellers)."""
    row = [0] * (len(text) + 1)  # the empty word matches before any character, for free
    for i, letter in enumerate(word, 1):
        diagonal, row[0] = row[0], i
        for j, other in enumerate(text, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (letter != other))
    return min(row)


def _looks_like(name: str, skeletons: tuple[str, ...]) -> bool:
    """Whether ``name`` holds something within two edits of one of ``skeletons``, or has any
    character outside ASCII (ours have none: a letter drawn like a Latin one, or an invisible
    one, is not worth telling from a mistake)."""
    if not name.isascii():
        return True
    skeleton = _skeleton(name)[:256]
    return any(_substring_distance(word, skeleton) <= 2 for word in skeletons)


def looks_like_input(topic: str) -> bool:
    """Whether a topic that is not ours reads like one of the inputs a replay reads (red teams
    rt24, rt26, rt27, rt29: port events on ``/gizmo/uart/port `` with a trailing space,
    without the leading slash, behind zero-width spaces, with a capital, Cyrillic or Armenian
    letters or a namespace in front changed a replay's HOLDs to PROCEEDs with no word)."""
    return _looks_like(topic, _INPUT_SKELETONS)


def looks_like_our_metadata(name: str) -> bool:
    """Whether a metadata record that is not ours reads like one of ours (rt29: the settings
    renamed with one Cyrillic letter replayed on the defaults, with no word)."""
    return _looks_like(name, _METADATA_SKELETONS)


def port_event_json(event: LinkInput, reason: str) -> bytes:
    """A ``/gizmo/uart/port`` message."""
    if event.value not in PORT_EVENTS:
        raise ValueError(f"event: expected one of {', '.join(PORT_EVENTS)}, got {event.value!r}")
    return json_text({"event": event.value, "reason": reason}).encode()


def recorded_input(event: LinkEvent) -> LinkInput | None:
    """The port event that a live link transition records; None for a valid frame or silence,
    which replay derives from the bytes and the clock."""
    state = event.state
    if state is LinkState.CONNECTING:
        return LinkInput.OPEN_STARTED
    if state is LinkState.SYNCING:
        return LinkInput.OPENED
    if state is not LinkState.DOWN:
        return None
    if event.reason == REASON_STOPPED:
        return LinkInput.STOPPED
    return LinkInput.OPEN_FAILED if event.previous is LinkState.CONNECTING else LinkInput.LOST


HostMessage = ReceivedResult | LinkEvent | LinkVerdict


def message_line(message: HostMessage, now_ns: int) -> tuple[str, bytes]:
    """(type, line) of a service message published at ``now_ns``: its ``/gizmo/host/TYPE``
    channel and the line, encoded as ``gizmo-host run`` prints it."""
    if isinstance(message, ReceivedResult):
        return "result", message.to_json_line(now_ns)
    if isinstance(message, LinkEvent):
        return "link", encode_line(message.to_dict())
    return "verdict", encode_line(message.to_dict())
