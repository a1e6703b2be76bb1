"""The live view: the Foxglove SDK's WebSocket server (``foxglove.sdk.v1``) with the topics.

Every topic of ``topics`` is a channel of the server's own SDK ``Context`` (protobuf topics
with the SDK's schema, JSON topics with the host line's JSON Schema), advertised at once, so
a viewer sees them all on connecting. Messages are built only for channels someone has
subscribed to (``has_sinks``). The SDK queues each client's messages in its own bounded
backlog (``[foxglove] client_backlog``) and drops for a client that falls behind, so a stuck
viewer slows neither the host's loop nor the other viewers. A viewer subscribing to
``/gizmo/tf`` gets the static transforms again, and one subscribing to ``/gizmo/link`` the
link's current state (nothing logged before a subscription is replayed to it). ``stats``
counts messages sent, subscriptions and clients.

The server does not broadcast a time (``Capability.Time``): a viewer's clock is the log
times, host ``time.monotonic_ns()``. Time messages travel on the SDK's lossless control
queue, which disconnects a viewer once it holds a backlog of them; at the world rate a viewer
that stalls for five seconds would be cut off rather than merely lose old messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any

import foxglove
from foxglove import Channel, Context
from foxglove.websocket import ChannelView, Client, ServerListener, WebSocketServer

from gizmo_host.errors import ServiceFailed
from gizmo_host.foxglove import topics as tp
from gizmo_host.foxglove.render import FoxgloveRenderer
from gizmo_host.foxglove.schemas import message_encoding, sdk_schema

LOGGER = logging.getLogger(__name__)
SERVER_NAME = "gizmo-host"


def channels(context: Context) -> dict[str, Channel]:
    """One channel per topic in ``context``: raw bytes in, the topic's schema advertised."""
    return {
        topic: Channel(
            topic,
            schema=sdk_schema(topic),
            message_encoding=message_encoding(topic),
            context=context,
        )
        for topic in tp.TOPICS
    }


class ChannelEmitter:
    """An ``Emitter`` onto SDK channels: protobuf messages encoded here, JSON bytes as they
    are; ``sent`` counts messages by topic."""

    def __init__(self, by_topic: dict[str, Channel]) -> None:
        self._channels = by_topic
        self.sent: dict[str, int] = dict.fromkeys(by_topic, 0)

    def wants(self, topic: str) -> bool:
        return self._channels[topic].has_sinks()

    def emit(self, topic: str, message: Any, log_ns: int) -> None:
        data = message if isinstance(message, bytes) else message.encode()
        self._channels[topic].log(data, log_time=log_ns)
        self.sent[topic] += 1


class McapFile:
    """The topics into a new MCAP file written by the SDK (``replay --foxglove-out``)."""

    def __init__(self, path: str) -> None:
        self.context = Context()
        self.emitter = ChannelEmitter(channels(self.context))
        self._writer = foxglove.open_mcap(path, allow_overwrite=True, context=self.context)

    def close(self) -> None:
        self._writer.close()


class _Listener(ServerListener):
    """The server's callbacks (from the SDK's thread): count, and ask the loop for the static
    transforms when a viewer subscribes to ``/gizmo/tf``."""

    def __init__(self, server: FoxgloveServer) -> None:
        self._server = server

    def on_subscribe(self, client: Client, channel: ChannelView) -> None:
        self._server.subscribed(client.id, channel.topic)

    def on_unsubscribe(self, client: Client, channel: ChannelView) -> None:
        self._server.unsubscribed(client.id, channel.topic)


class FoxgloveServer:
    """``[foxglove] listen``'s server: an ``Output`` of the host (started and closed with it,
    its counters in the ``stats`` line under ``publish.foxglove``) that takes no JSON lines:
    its ``sink`` is a ``Host.add_sink``, feeding its ``FoxgloveRenderer``."""

    name = "foxglove"
    takes_lines = False  # the host encodes no JSON line for it: ``sink`` has the messages

    def __init__(
        self,
        host: str,
        port: int,
        renderer_factory: Any,
        *,
        client_backlog: int = 256,
    ) -> None:
        """``renderer_factory(emitter) -> FoxgloveRenderer``."""
        self.host, self.port = host, port
        self.context = Context()
        self.emitter = ChannelEmitter(channels(self.context))
        self.renderer: FoxgloveRenderer = renderer_factory(self.emitter)
        self._backlog = client_backlog
        self._server: WebSocketServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()  # the SDK's thread and the loop both count
        self.subscriptions = 0
        self._clients: dict[int, int] = {}  # client id -> its subscriptions
        self.clients_seen = 0
        self.latched_sent = 0  # static transforms and link states sent to late viewers
        self._sources: list[Any] = []  # started and closed with the server (start, close)

    @property
    def address(self) -> str:
        return f"ws://{self.host}:{self.port}"

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            self._server = foxglove.start_server(
                name=SERVER_NAME,
                host=self.host,
                port=self.port,
                capabilities=[],  # no Capability.Time: a viewer's clock is the log times
                server_listener=_Listener(self),
                context=self.context,
                message_backlog_size=self._backlog,
            )
        except Exception as exc:  # the SDK's own error: a port taken, an address not ours
            raise ServiceFailed(f"foxglove {self.address}: cannot serve: {exc}") from None
        for source in self._sources:
            try:
                await source.start()
            except OSError as exc:  # a sensor's port taken
                await self.close()
                raise ServiceFailed(f"foxglove: camera image: {exc.strerror or exc}") from None
        self.port = self._server.port
        self.renderer.static(self.renderer.clock())

    def add_source(self, source: Any) -> None:
        """A source of images for the view (``start``, ``close``, ``stats``), run with it."""
        self._sources.append(source)

    async def close(self) -> None:
        for source in self._sources:
            await source.close()
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def send(self, line: bytes) -> None:
        """Never called (``takes_lines`` is False): ``sink`` has the messages themselves."""

    def sink(self, message: Any) -> None:
        """A ``Host.add_sink``: every message to the renderer."""
        self.renderer(message)

    # -- from the SDK's thread -------------------------------------------------------------

    def subscribed(self, client_id: int, topic: str) -> None:
        with self._lock:
            self.subscriptions += 1
            if client_id not in self._clients:
                self.clients_seen += 1
            self._clients[client_id] = self._clients.get(client_id, 0) + 1
        if topic in (tp.TF, tp.LINK) and self._loop is not None:
            # on the loop, once the subscription is in place (it is not, inside this call)
            with contextlib.suppress(RuntimeError):  # the loop has closed
                self._loop.call_soon_threadsafe(self._latched, topic)

    def unsubscribed(self, client_id: int, topic: str) -> None:
        with self._lock:
            left = self._clients.get(client_id, 0) - 1
            if left <= 0:
                self._clients.pop(client_id, None)
            else:
                self._clients[client_id] = left

    # -- on the loop -----------------------------------------------------------------------

    def _latched(self, topic: str) -> None:
        self.renderer.latched(topic)
        self.latched_sent += 1

    def stats(self) -> dict[str, Any]:
        with self._lock:
            clients = len(self._clients)
        return {
            "listen": self.address,
            "clients": clients,
            "clients_seen": self.clients_seen,
            "subscriptions": self.subscriptions,
            "latched_sent": self.latched_sent,
            "sent": sum(self.emitter.sent.values()),
            **self.renderer.stats(),
            **({"image_source": self._sources[0].stats()} if self._sources else {}),
        }
