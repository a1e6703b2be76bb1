"""The Foxglove topics into a capture, through its one writer (``BackgroundWriter.view``):
each channel registered with the SDK's schema, each message written as ``msg.encode()`` in
the writer's thread. Every topic is wanted: a capture keeps all of them."""

from __future__ import annotations

from typing import Any, Protocol

from gizmo_host.capture.channels import ViewChannel
from gizmo_host.foxglove import topics as tp
from gizmo_host.foxglove.schemas import view_channel


class ViewSink(Protocol):
    def view(self, channel: ViewChannel, message: Any, now_ns: int) -> None: ...


class CaptureEmitter:
    """An ``Emitter`` onto a capture's ``BackgroundWriter`` (or anything with ``view``)."""

    def __init__(self, sink: ViewSink) -> None:
        self._sink = sink
        self._channels = {topic: view_channel(topic) for topic in tp.TOPICS}

    def wants(self, topic: str) -> bool:
        return True

    def emit(self, topic: str, message: Any, log_ns: int) -> None:
        self._sink.view(self._channels[topic], message, log_ns)
