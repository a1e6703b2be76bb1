"""A Foxglove WebSocket client written from the protocol (``foxglove.sdk.v1``), not the SDK,
and the decoders a viewer would use: JSON with ``json``, protobuf through the advertised (or
recorded) FileDescriptorSet with ``google.protobuf``."""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import struct
import time
from dataclasses import dataclass, field
from typing import Any

import websockets
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

SUBPROTOCOL = "foxglove.sdk.v1"
OP_MESSAGE_DATA = 1
OP_TIME = 2
_HEADER = struct.Struct("<BIQ")  # opcode, subscription id, log time


@functools.lru_cache(maxsize=64)
def protobuf_class(schema_name: str, descriptor_set: bytes) -> Any:
    """The message class ``schema_name`` of a serialised FileDescriptorSet."""
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set)
    pool = descriptor_pool.DescriptorPool()
    pending = list(files.file)
    while pending:  # dependencies first, whatever the set's order
        left = []
        for proto in pending:
            try:
                pool.Add(proto)
            except TypeError:
                left.append(proto)
        if len(left) == len(pending):
            raise AssertionError(f"{schema_name}: unresolvable descriptor set")
        pending = left
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(schema_name))


def decode(encoding: str, schema_name: str, schema: bytes, payload: bytes) -> Any:
    """A message as a viewer decodes it: a dict (JSON) or a protobuf message."""
    if encoding == "json":
        return json.loads(payload)
    assert encoding == "protobuf", encoding
    return protobuf_class(schema_name, schema).FromString(payload)


@dataclass
class Received:
    log_ns: int
    payload: bytes


@dataclass
class FoxgloveClient:
    """``async with connect(url) as client``: the server's info and channels, subscriptions,
    and every message received by topic."""

    ws: Any
    info: dict[str, Any] = field(default_factory=dict)
    channels: dict[int, dict[str, Any]] = field(default_factory=dict)  # id -> advertisement
    messages: dict[str, list[Received]] = field(default_factory=dict)
    _subscriptions: dict[int, str] = field(default_factory=dict)  # subscription id -> topic
    time_ns: int | None = None

    def by_topic(self) -> dict[str, dict[str, Any]]:
        return {c["topic"]: c for c in self.channels.values()}

    async def read_advertisements(self, topics: set[str], timeout_s: float) -> None:
        """Read until ``serverInfo`` and every topic of ``topics`` were advertised."""
        deadline = time.monotonic() + timeout_s
        while not (self.info and topics <= set(self.by_topic())):
            await self._read_one(deadline)

    async def subscribe(self, topics: list[str]) -> None:
        by_topic = self.by_topic()
        subscriptions = []
        for topic in topics:
            sub_id = len(self._subscriptions) + 1
            self._subscriptions[sub_id] = topic
            subscriptions.append({"id": sub_id, "channelId": by_topic[topic]["id"]})
        await self.ws.send(json.dumps({"op": "subscribe", "subscriptions": subscriptions}))

    async def until(self, done: Any, timeout_s: float) -> None:
        """Read until ``done(self)`` is true; AssertionError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not done(self):
            await self._read_one(deadline)

    async def read_one(self, timeout_s: float) -> None:
        """Read one frame from the server (a message, or a JSON operation)."""
        await self._read_one(time.monotonic() + timeout_s)

    async def _read_one(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("timed out waiting for the server")
        try:
            frame = await asyncio.wait_for(self.ws.recv(), left)
        except asyncio.TimeoutError:
            raise AssertionError("timed out waiting for the server") from None
        if isinstance(frame, str):
            message = json.loads(frame)
            op = message.get("op")
            if op == "serverInfo":
                self.info = message
            elif op == "advertise":
                for channel in message["channels"]:
                    self.channels[channel["id"]] = channel
            elif op == "unadvertise":
                for channel_id in message["channelIds"]:
                    self.channels.pop(channel_id, None)
            return
        if frame[0] == OP_MESSAGE_DATA:
            _, sub_id, log_ns = _HEADER.unpack_from(frame)
            topic = self._subscriptions[sub_id]
            self.messages.setdefault(topic, []).append(Received(log_ns, bytes(frame[13:])))
        elif frame[0] == OP_TIME:
            self.time_ns = struct.unpack_from("<Q", frame, 1)[0]

    def decode(self, topic: str, received: Received) -> Any:
        channel = self.by_topic()[topic]
        schema = channel["schema"]
        data = (
            base64.b64decode(schema)
            if channel.get("schemaEncoding") == "protobuf"
            else schema.encode()
        )
        return decode(channel["encoding"], channel["schemaName"], data, received.payload)


class connect:  # noqa: N801 - used as ``async with connect(url)``
    def __init__(self, url: str, **kwargs: Any) -> None:
        self._url, self._kwargs = url, kwargs
        self._ws: Any = None

    async def __aenter__(self) -> FoxgloveClient:
        self._ws = await websockets.connect(
            self._url,
            subprotocols=[SUBPROTOCOL],
            max_size=None,
            close_timeout=1.0,  # a server with a full queue for us does not answer the close
            **self._kwargs,
        )
        return FoxgloveClient(self._ws)

    async def __aexit__(self, *exc: object) -> None:
        await self._ws.close()
