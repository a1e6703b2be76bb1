"""Writing a capture: the channels of ``channels`` into one MCAP file, registered on first use.

Single-threaded and synchronous; the recorder runs it in its own thread behind a bounded queue
(``capture.background``), the capture generator calls it directly. Every write error becomes a
``CaptureWriteError`` naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO

from mcap.writer import CompressionType, Writer

from gizmo_host.capture import channels as ch
from gizmo_host.capture.carried_settings import HostSettings
from gizmo_host.errors import CaptureWriteError
from gizmo_host.stream.linkstate import LinkInput

DEFAULT_CHUNK_BYTES = 256 * 1024  # the most a crash can lose, besides the queue
DEFAULT_MAX_UDP_CHANNELS = 256  # (port, sender) pairs; datagrams beyond are dropped, counted
Sender = tuple[str, int]


class CaptureWriter:
    """One capture being written to ``stream`` (named ``name`` in errors)."""

    def __init__(
        self,
        stream: IO[bytes],
        name: str,
        settings: HostSettings,
        *,
        info: Mapping[str, str] | None = None,
        metadata: Mapping[str, Mapping[str, str]] | None = None,
        compress: bool = True,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        max_udp_channels: int = DEFAULT_MAX_UDP_CHANNELS,
    ) -> None:
        """``info`` joins the ``gizmo-host.capture`` metadata (package version, clocks);
        ``metadata`` adds records of its own (``channels.WORLD_METADATA``: the world's settings)."""
        self.name = name
        self._stream = _Counted(stream)
        self._max_udp_channels = max_udp_channels
        self._channels: dict[object, int] = {}
        self._sequences: dict[int, int] = {}
        self.messages = 0
        self.udp_channels = 0
        self.udp_dropped = 0  # datagrams from a (port, sender) past max_udp_channels
        self._finished = False
        with self._errors("start"):
            self._writer = Writer(
                self._stream,  # type: ignore[arg-type]
                chunk_size=chunk_bytes,
                compression=CompressionType.ZSTD if compress else CompressionType.NONE,
            )
            self._writer.start(profile=ch.PROFILE, library="gizmo-host")
            capture_info = {"format_version": str(ch.CAPTURE_FORMAT_VERSION), **(info or {})}
            self._writer.add_metadata(ch.CAPTURE_METADATA, capture_info)
            self._writer.add_metadata(ch.SETTINGS_METADATA, settings.to_metadata())
            for record_name, record in (metadata or {}).items():
                if record_name in (ch.CAPTURE_METADATA, ch.SETTINGS_METADATA):
                    raise ValueError(f"metadata: {record_name!r} comes from info and settings")
                self._writer.add_metadata(record_name, dict(record))
            self._uart = self._register(ch.UART, {"path": settings.serial_path})
            self._port = self._register(ch.PORT, {"path": settings.serial_path})

    # -- inputs ----------------------------------------------------------------------------

    def uart(self, data: bytes, rx_ns: int) -> None:
        """A chunk read from the serial port at host time ``rx_ns``."""
        self._add(self._uart, rx_ns, data)

    def port(self, event: LinkInput, reason: str, host_ns: int) -> None:
        """A port event (``channels.PORT_EVENTS``)."""
        self._add(self._port, host_ns, ch.port_event_json(event, reason))

    def datagram(self, port: int, bind: str, sender: Sender, data: bytes, rx_ns: int) -> bool:
        """A datagram received on ``bind:port`` from ``sender``; False when dropped (too many
        distinct senders: counted in ``udp_dropped``)."""
        key = ("udp", port, bind, sender)
        channel = self._channels.get(key)
        if channel is None:
            if self.udp_channels >= self._max_udp_channels:
                self.udp_dropped += 1
                return False
            self.udp_channels += 1
            metadata = {"port": str(port), "bind": bind, "sender": f"{sender[0]}:{sender[1]}"}
            channel = self._register(ch.udp_channel(port), metadata, key)
        self._add(channel, rx_ns, data)
        return True

    # -- outputs ---------------------------------------------------------------------------

    def host(self, message_type: str, line: bytes, log_ns: int) -> None:
        """One of the host's JSON lines (``message_type`` in ``channels.HOST_TYPES``)."""
        key = ("host", message_type)
        channel = self._channels.get(key)
        if channel is None:
            channel = self._register(ch.host_channel(message_type), {}, key)
        self._add(channel, log_ns, line.rstrip(b"\n"))

    def view(self, channel: ch.ViewChannel, data: bytes, log_ns: int) -> None:
        """A message of a viewer's channel, its schema registered as given on first use."""
        key = ("view", channel.topic)
        channel_id = self._channels.get(key)
        if channel_id is None:
            with self._errors("register channel"):
                schema_id = self._writer.register_schema(
                    channel.schema_name, channel.schema_encoding, channel.schema_data
                )
                channel_id = self._writer.register_channel(
                    channel.topic, channel.message_encoding, schema_id, {}
                )
            self._channels[key] = channel_id
        self._add(channel_id, log_ns, data)

    # -- lifecycle -------------------------------------------------------------------------

    def flush(self) -> None:
        """Write the chunk in progress and flush the file: a crash loses nothing before."""
        with self._errors("flush"):
            self._writer.flush()  # type: ignore[no-untyped-call]

    def finish(self) -> None:
        """Write the summary and the footer (the file is then a complete MCAP)."""
        if self._finished:
            return
        self._finished = True
        with self._errors("finish"):
            self._writer.finish()  # type: ignore[no-untyped-call]
            self._stream.flush()

    def _register(self, spec: ch.ChannelSpec, metadata: dict[str, str], key: object = None) -> int:
        with self._errors("register channel"):
            schema_id = 0
            if spec.schema_name is not None:
                schema_id = self._writer.register_schema(
                    spec.schema_name, ch.JSON_SCHEMA_ENCODING, spec.schema_bytes()
                )
            channel: int = self._writer.register_channel(
                spec.topic, spec.message_encoding, schema_id, metadata
            )
        self._channels[spec.topic if key is None else key] = channel
        return channel

    def _add(self, channel: int, log_ns: int, data: bytes) -> None:
        sequence = self._sequences.get(channel, 0)
        self._sequences[channel] = (sequence + 1) & 0xFFFFFFFF
        with self._errors("write"):
            self._writer.add_message(
                channel_id=channel,
                log_time=log_ns,
                data=data,
                publish_time=log_ns,
                sequence=sequence,
            )
        self.messages += 1

    def _errors(self, what: str) -> _WriteErrors:
        return _WriteErrors(self.name, what)


class _Counted:
    """The stream with ``tell`` from a count of the bytes written: the MCAP writer asks for
    offsets, and a pipe (``record -o -``) cannot seek."""

    __slots__ = ("_stream", "written")

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.written = 0

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:  # a raw stream may take part of it
            view = view[self._stream.write(view) :]
        self.written += len(data)
        return len(data)

    def tell(self) -> int:
        return self.written

    def flush(self) -> None:
        self._stream.flush()


class _WriteErrors:
    """``with``: an ``OSError`` becomes a one-line ``CaptureWriteError`` naming the file."""

    __slots__ = ("_name", "_what")

    def __init__(self, name: str, what: str) -> None:
        self._name, self._what = name, what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, OSError) and not isinstance(exc, CaptureWriteError):
            error = CaptureWriteError(f"{self._name}: {self._what}: {exc.strerror or exc}")
            error.errno = exc.errno
            raise error from exc
