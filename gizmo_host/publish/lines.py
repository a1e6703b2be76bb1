"""JSON Lines publishing: the publisher that encodes each message once for every sink.

``JsonLinesPublisher`` is a service listener: it turns each result, link event and verdict (and,
as a world service listener, each world snapshot) into one JSON object (always with a
``type``), encodes it once, and hands the line to every sink. As the service's batch listener
it takes a read's messages at once and hands their lines to each sink together
(``send_lines``: stdout and the socket's clients get one write per read, not one per line).
Sinks never block the reader, and none waits for another, and a sink that falls behind skips
the lines that expired meanwhile (each has its own bounded queue, counted in ``stats``):

- ``gizmo_host.publish.unix_socket.UnixSocketServer`` serves up to ``max_clients`` clients;
- stdout and UDP are ``QueuedSink``s (``gizmo_host.publish.sinks``: ``stdout_sink``,
  ``udp_sink``): written at once while their reader keeps up, else queued up to a byte budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from fusion import WorldSnapshot
from gizmo_host.jsonl import encode_line
from gizmo_host.publish.sinks import Sink
from gizmo_host.stream.events import LinkEvent, ReceivedResult
from gizmo_host.stream.store import LinkVerdict

Message = ReceivedResult | LinkEvent | LinkVerdict | WorldSnapshot


def with_types(version: dict[str, Any], *types: str) -> dict[str, Any]:
    """A ``version`` message whose ``types`` also lists ``types`` (e.g. ``"world"``)."""
    return {**version, "types": [*version["types"], *types]}


LinesSender = Callable[[list[bytes]], None]


def lines_sender(sink: Sink) -> LinesSender:
    """How ``sink`` takes several lines: its ``send_lines`` (one write for them all) if it has
    one, else ``send`` for each."""
    send_lines: LinesSender | None = getattr(sink, "send_lines", None)
    if send_lines is not None:
        return send_lines
    send = sink.send

    def each(lines: list[bytes]) -> None:
        for line in lines:
            send(line)

    return each


def _line(message: Message, now_ns: int) -> bytes:
    """``message`` as one JSON line published at ``now_ns``: results and verdicts from
    templates (the per-frame path and a steady stream's renewals), the rest through the
    encoder."""
    if isinstance(message, ReceivedResult):
        return message.to_json_line(now_ns)
    if isinstance(message, LinkVerdict):
        return message.to_json_line()
    return encode_line(message.to_dict())


class JsonLinesPublisher:
    """A service listener that fans JSON lines out to sinks."""

    def __init__(self, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self._clock = clock
        self._sinks: list[Sink] = []
        self._senders: list[LinesSender] = []
        self.lines = 0

    def add_sink(self, sink: Sink) -> None:
        self._sinks.append(sink)
        self._senders.append(lines_sender(sink))

    def sink_stats(self) -> dict[str, dict[str, int]]:
        """Per sink (by name): ``queued``, ``dropped``, ``disconnected`` and its own counters."""
        return {sink.name: sink.stats() for sink in self._sinks}

    def __call__(self, message: Message) -> None:
        line = _line(message, self._clock())
        self.lines += 1
        for sink in self._sinks:
            sink.send(line)

    def publish_batch(self, messages: Sequence[Message]) -> None:
        """A read's messages, in order (a service batch listener): every line encoded, all
        published at one time (``host_published_ns``), then handed to each sink at once."""
        now_ns = self._clock()  # one publication time for the whole read
        result = ReceivedResult  # results (most lines) without ``_line``'s call
        if len(messages) == 1:  # a read of one frame (a 30 Hz stream): one line, one send
            message = messages[0]
            line = (
                message.to_json_line(now_ns) if type(message) is result else _line(message, now_ns)
            )
            self.lines += 1
            for sink in self._sinks:
                sink.send(line)
            return
        lines = [
            message.to_json_line(now_ns) if type(message) is result else _line(message, now_ns)
            for message in messages
        ]
        self.lines += len(lines)
        for send_lines in self._senders:
            send_lines(lines)

    def publish(self, obj: dict[str, Any]) -> None:
        self.send_line(encode_line(obj))

    def send_line(self, line: bytes) -> None:
        self.lines += 1
        for sink in self._sinks:
            sink.send(line)
