"""A capture written from its own thread, so a slow or full disk never stalls the reader.

The event loop only puts items on a bounded queue (a few hundred nanoseconds per chunk); the
thread encodes them, writes them and flushes the file every ``flush_interval_s``, so a crash
loses at most that much. When the queue is full (the disk cannot keep up) an item is dropped
and counted, never waited for. A write error stops the writing: ``failure`` holds the
``CaptureWriteError``, ``on_failure`` is called once (from the thread), later items are counted
as dropped, and ``close`` raises it.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from gizmo_host.capture.channels import HOST_TYPES, HostMessage, ViewChannel, message_line
from gizmo_host.capture.writer import CaptureWriter, Sender
from gizmo_host.errors import CaptureWriteError
from gizmo_host.jsonl import encode_line
from gizmo_host.stream.linkstate import LinkInput

DEFAULT_MAX_ITEMS = 65536
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_FLUSH_INTERVAL_S = 1.0
_UART, _PORT, _UDP, _HOST, _DICT, _VIEW = range(6)
VIEW_ITEM_BYTES = 1024  # what a viewer's message is counted as in the queue (before encoding)
_STOP: Any = object()


class BackgroundWriter:
    """Queue items for ``writer`` from the event loop; ``start``, then ``close`` at the end."""

    def __init__(
        self,
        writer: CaptureWriter,
        *,
        max_items: int = DEFAULT_MAX_ITEMS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        flush_interval_s: float = DEFAULT_FLUSH_INTERVAL_S,
        on_failure: Callable[[CaptureWriteError], None] | None = None,
    ) -> None:
        if max_items <= 0 or max_bytes <= 0 or flush_interval_s <= 0:
            raise ValueError("max_items, max_bytes and flush_interval_s: expected > 0")
        self.writer = writer
        self._queue: queue.Queue[Any] = queue.Queue(max_items)
        self._max_bytes = max_bytes
        self._flush_interval_s = flush_interval_s
        self._on_failure = on_failure
        self._thread = threading.Thread(target=self._run, name="gizmo-capture", daemon=True)
        self.failure: CaptureWriteError | None = None
        self.queued = self.dropped = self.written = 0
        # Each counter is written by one thread only: queued bytes = in - out, no lock.
        self._bytes_in = self._bytes_out = 0

    def start(self) -> None:
        self._thread.start()

    # -- the event loop's side: never blocks ----------------------------------------------

    def uart(self, data: bytes, rx_ns: int) -> None:
        """The link's ``on_bytes`` tap."""
        self._put((_UART, rx_ns, data), len(data))

    def port(self, event: LinkInput, reason: str, host_ns: int) -> None:
        self._put((_PORT, host_ns, event, reason), len(reason))

    def datagram(self, port: int, bind: str, sender: Sender, data: bytes, rx_ns: int) -> None:
        self._put((_UDP, rx_ns, port, bind, sender, data), len(data))

    def host(self, message: HostMessage, now_ns: int) -> None:
        """A service message; encoded in the writer's thread (the values are immutable)."""
        self._put((_HOST, now_ns, message), 256)

    def host_dict(self, obj: dict[str, Any], now_ns: int) -> None:
        """A JSON message built for the occasion (``stats``, ``world``): not reused after."""
        if obj.get("type") not in HOST_TYPES:
            expected = ", ".join(HOST_TYPES)
            raise ValueError(f"type: expected one of {expected}, got {obj.get('type')!r}")
        self._put((_DICT, now_ns, obj), 1024)

    def view(self, channel: ViewChannel, message: Any, now_ns: int) -> None:
        """A viewer's message: bytes, or an immutable message whose ``encode()`` gives them
        (encoded in the writer's thread)."""
        size = len(message) if isinstance(message, bytes) else VIEW_ITEM_BYTES
        self._put((_VIEW, now_ns, channel, message, size), size)

    def _put(self, item: tuple[Any, ...], size: int) -> None:
        if self.failure is not None or self._bytes_in - self._bytes_out + size > self._max_bytes:
            self.dropped += 1
            return
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1
            return
        self.queued += 1
        self._bytes_in += size

    def close(self, timeout_s: float = 30.0) -> None:
        """Write what is queued, finish the file; raises the ``CaptureWriteError`` if any."""
        if self._thread.is_alive():
            with contextlib.suppress(queue.Full):  # the thread is stuck: joining times out
                self._queue.put(_STOP, timeout=timeout_s)
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                self._failed(CaptureWriteError(f"{self.writer.name}: writing did not finish"))
        if self.failure is not None:
            raise self.failure

    def stats(self) -> dict[str, int]:
        return {
            "messages": self.written,
            "dropped": self.dropped + self.writer.udp_dropped,
            "queued_bytes": max(0, self._bytes_in - self._bytes_out),
        }

    # -- the writer's thread ---------------------------------------------------------------

    def _run(self) -> None:
        next_flush = time.monotonic() + self._flush_interval_s
        while True:
            try:
                item = self._queue.get(timeout=self._flush_interval_s)
            except queue.Empty:
                item = None
            if item is _STOP:
                break
            if item is not None and self.failure is None:
                self._write(item)
            if self.failure is None and time.monotonic() >= next_flush:
                next_flush = time.monotonic() + self._flush_interval_s
                self._guard(self.writer.flush)
        if self.failure is None:
            self._guard(self.writer.finish)

    def _write(self, item: tuple[Any, ...]) -> None:
        kind, t = item[0], item[1]
        writer = self.writer
        try:
            if kind == _UART:
                writer.uart(item[2], t)
                self._bytes_out += len(item[2])
            elif kind == _PORT:
                writer.port(item[2], item[3], t)
                self._bytes_out += len(item[3])
            elif kind == _UDP:
                writer.datagram(item[2], item[3], item[4], item[5], t)
                self._bytes_out += len(item[5])
            elif kind == _HOST:
                writer.host(*message_line(item[2], t), t)
                self._bytes_out += 256
            elif kind == _VIEW:
                message = item[3]
                data = message if isinstance(message, bytes) else message.encode()
                writer.view(item[2], data, t)
                self._bytes_out += item[4]
            else:
                writer.host(item[2]["type"], encode_line(item[2]), t)
                self._bytes_out += 1024
        except CaptureWriteError as exc:
            self._failed(exc)
            return
        self.written += 1

    def _guard(self, step: Callable[[], None]) -> None:
        try:
            step()
        except CaptureWriteError as exc:
            self._failed(exc)

    def _failed(self, exc: CaptureWriteError) -> None:
        if self.failure is None:
            self.failure = exc
            if self._on_failure is not None:
                self._on_failure(exc)
