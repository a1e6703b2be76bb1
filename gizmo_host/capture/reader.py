"""Reading a capture: typed messages in file order, and a typed error for any damage.

The recorder writes messages in the order it received them, on one clock, so file order is
time order. A file cut short (a recorder killed, a full disk) yields every message before the
cut, then raises ``CaptureError`` naming the byte offset; so does any other damage, whatever
the MCAP library raised. Channels that are not ours (a capture merged with other data) are
skipped and counted, never guessed at.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any, NamedTuple

from mcap.data_stream import ReadDataStream
from mcap.exceptions import EndOfFile
from mcap.opcode import Opcode
from mcap.records import Channel, Chunk, DataEnd, Footer, Message, Metadata
from mcap.stream_reader import StreamReader

from gizmo_host.capture import channels as ch
from gizmo_host.capture.carried_settings import HostSettings
from gizmo_host.errors import CaptureError
from gizmo_host.stream.linkstate import LinkInput

_OUR_METADATA = frozenset((ch.CAPTURE_METADATA, ch.SETTINGS_METADATA, ch.WORLD_METADATA))
MAX_RECORD_BYTES = 64 * 1024 * 1024  # a damaged length field must not allocate gigabytes
# Records in one chunk, at most: the recorder's 256 KiB chunks hold about 8,000 messages at
# the most; 2.1 million empty ones in 64 MiB (a few KB of zstd) took 334 MB and 26 s (rt59)
MAX_CHUNK_RECORDS = 65_536
# A record's opcode and length, and a Message record's fixed fields (channel id, sequence,
# log time, publish time): the MCAP specification's layouts, read inside a chunk.
_RECORD_HEAD = struct.Struct("<BQ")
_MESSAGE_HEAD = struct.Struct("<HIQQ")
_CHANNEL, _MESSAGE = int(Opcode.CHANNEL), int(Opcode.MESSAGE)
_MESSAGE_INDEX = int(Opcode.MESSAGE_INDEX)
_SKIP_PIECE = 1 << 20  # a damaged index length must not allocate gigabytes at once


class UartChunk(NamedTuple):
    rx_ns: int
    data: bytes


class PortEvent(NamedTuple):
    host_ns: int
    event: LinkInput
    reason: str


class Datagram(NamedTuple):
    rx_ns: int
    port: int
    bind: str
    sender: tuple[str, int]
    data: bytes


class HostLine(NamedTuple):
    log_ns: int
    message_type: str
    line: bytes  # one JSON object, no newline


CaptureMessage = UartChunk | PortEvent | Datagram | HostLine


@dataclass(frozen=True, slots=True)
class CaptureInfo:
    """The metadata written before the first message: the settings, the capture record and
    the world model's settings (None: the host ran without one)."""

    settings: HostSettings = field(default_factory=HostSettings)
    capture: dict[str, str] = field(default_factory=dict)
    world: dict[str, str] | None = None


class _Decoder(NamedTuple):
    kind: ch.ChannelKind
    port: int = 0
    bind: str = ""
    sender: tuple[str, int] = ("", 0)
    message_type: str = ""


class CaptureReader:
    """``CaptureReader(path).messages()``: the capture at ``path``, message by message."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.skipped = 0  # messages on channels that are not ours
        # Of those, messages on topics like our inputs' (one character off, say): what the
        # replay computes would have changed had they been read. Their topics: the first 16.
        self.lookalikes = 0
        self.lookalike_topics: set[str] = set()
        self._lookalike_ids: set[int] = set()
        self.late_metadata = 0  # records of our metadata after the data: not read
        self.lookalike_metadata: list[str] = []  # records named like ours, not read: 16
        self.settings_missing = False  # no settings record: the replay runs on defaults
        self.info = self._read_info()

    def messages(self) -> Iterator[CaptureMessage]:
        """Every message of ours, in file order; ``CaptureError`` where the file is damaged."""
        decoders: dict[int, _Decoder | None] = {}
        uart, new = ch.ChannelKind.UART, tuple.__new__
        declared: dict[int, tuple[object, ...]] = {}  # each channel's fields, as first declared
        data_seen = False
        with self._open() as stream:
            for record in self._records(stream, emit_chunks=True):
                if isinstance(record, Chunk):
                    data_seen = True
                    for item in self._chunk_messages(record, stream):
                        if isinstance(item, Channel):
                            self._declare(decoders, declared, item, stream)
                            continue
                        channel_id, log_time, data = item
                        if channel_id not in decoders:
                            raise self._error(stream, f"message on undeclared channel {channel_id}")
                        decoder = decoders[channel_id]
                        if decoder is None:
                            self.skipped += 1
                            self.lookalikes += channel_id in self._lookalike_ids
                        elif decoder.kind is uart:  # most messages: ``_decode``'s, inline
                            yield new(UartChunk, (log_time, data))
                        else:
                            yield self._decode(decoder, log_time, data, stream)
                elif isinstance(record, Channel):
                    self._declare(decoders, declared, record, stream)
                elif isinstance(record, Metadata):
                    # ``info`` was read from before the data: ours after it went unread
                    self.late_metadata += data_seen and record.name in _OUR_METADATA
                elif isinstance(record, Message):
                    data_seen = True
                    if record.channel_id not in decoders:
                        raise self._error(
                            stream, f"message on undeclared channel {record.channel_id}"
                        )
                    decoder = decoders[record.channel_id]
                    if decoder is None:
                        self.skipped += 1
                        self.lookalikes += record.channel_id in self._lookalike_ids
                        continue
                    yield self._decode(decoder, record.log_time, bytes(record.data), stream)

    def _declare(
        self,
        decoders: dict[int, _Decoder | None],
        declared: dict[int, tuple[object, ...]],
        channel: Channel,
        stream: IO[bytes],
    ) -> None:
        """A channel's declaration: again, it must be the same (the MCAP specification's rule;
        red team rt27: the port's channel declared again mid-file as another topic skipped
        its last events, while the summary that tools show still named it the port's)."""
        fields = (channel.topic, channel.message_encoding, channel.schema_id, channel.metadata)
        first = declared.setdefault(channel.id, fields)
        if first != fields:
            raise self._error(
                stream,
                f"channel {channel.id} declared again as {channel.topic!r}, first as {first[0]!r}",
            )
        if channel.id not in decoders:
            decoders[channel.id] = self._decoder(channel, stream)

    def _chunk_messages(
        self, chunk: Chunk, stream: IO[bytes]
    ) -> list[tuple[int, int, bytes] | Channel]:
        """A chunk's Message records as (channel id, log time, data) and its Channel records,
        in order; other records skipped, as the MCAP library does. Read here rather than by
        the library's record objects: a saturated line's capture holds thousands of messages
        a second, and those cost 2.7 us each against 1.0 here (``docs/bench.md``). The whole
        chunk is read before any of its messages is given: a damaged chunk gives none, as
        with the library. Stricter than the library: a record length that runs past its chunk,
        or leaves a record that does not parse after it, is damage, where the library read it
        loosely and handed on the next record's bytes as a message's data."""
        try:
            data = _chunk_data(chunk)
        except Exception as exc:  # decompression fails in many ways on a damaged chunk
            raise self._error(stream, _describe(exc)) from None
        out: list[tuple[int, int, bytes] | Channel] = []
        head, message_head = _RECORD_HEAD, _MESSAGE_HEAD
        offset, end, records = 0, len(data), 0
        while offset < end:
            if end - offset < head.size:
                raise self._error(stream, f"chunk record header cut at {offset} of {end}")
            opcode, length = head.unpack_from(data, offset)
            start = offset + head.size
            offset = start + length
            if offset > end:
                raise self._error(stream, f"chunk record of {length} bytes overruns its chunk")
            records += 1
            if records > MAX_CHUNK_RECORDS:
                raise self._error(stream, f"a chunk of over {MAX_CHUNK_RECORDS} records")
            if opcode == _MESSAGE:
                if length < message_head.size:
                    raise self._error(stream, f"message record of {length} bytes")
                channel_id, _, log_time, _ = message_head.unpack_from(data, start)
                out.append((channel_id, log_time, data[start + message_head.size : offset]))
            elif opcode == _CHANNEL:
                try:
                    out.append(Channel.read(ReadDataStream(io.BytesIO(data[start:offset]))))
                except Exception as exc:  # a damaged record: cut strings, bad UTF-8
                    raise self._error(stream, _describe(exc)) from None
        return out

    # -- records ---------------------------------------------------------------------------

    def _open(self) -> IO[bytes]:
        try:
            return open(self.path, "rb")
        except OSError as exc:
            raise CaptureError(f"{self.path}: cannot open: {exc.strerror or exc}") from None

    def _records(self, stream: IO[bytes], *, emit_chunks: bool) -> Iterator[Any]:
        records = _IndexSkippingReader(
            stream, emit_chunks=emit_chunks, record_size_limit=MAX_RECORD_BYTES
        ).records
        while True:
            try:
                record = next(records)
            except StopIteration:
                return
            except Exception as exc:  # the MCAP library raises many kinds for a damaged file
                raise self._error(stream, _describe(exc)) from None
            yield record

    def _read_info(self) -> CaptureInfo:
        """The metadata records before the data: the recorder writes them first."""
        metadata: dict[str, dict[str, str]] = {}
        with self._open() as stream:
            for record in self._records(stream, emit_chunks=True):
                if isinstance(record, Metadata):
                    if record.name in _OUR_METADATA and record.name in metadata:
                        raise CaptureError(
                            f"{self.path}: {record.name}: two records before the data (a "
                            "recorder writes one): which one held is not known"
                        )  # red team rt26: a forged first one was read, with no word
                    metadata.setdefault(record.name, dict(record.metadata))
                    if (
                        record.name not in _OUR_METADATA
                        and len(self.lookalike_metadata) < 16
                        and ch.looks_like_our_metadata(record.name)
                    ):
                        self.lookalike_metadata.append(record.name)
                elif isinstance(record, (Chunk, Message, DataEnd, Footer)):
                    break
        self.settings_missing = ch.SETTINGS_METADATA not in metadata
        capture = metadata.get(ch.CAPTURE_METADATA, {})
        version = capture.get("format_version", str(ch.CAPTURE_FORMAT_VERSION))
        if version != str(ch.CAPTURE_FORMAT_VERSION):
            raise CaptureError(
                f"{self.path}: {ch.CAPTURE_METADATA} format_version: expected "
                f"{ch.CAPTURE_FORMAT_VERSION}, got {version!r}"
            )
        settings = HostSettings.from_metadata(
            metadata.get(ch.SETTINGS_METADATA, {}), f"{self.path}: {ch.SETTINGS_METADATA}"
        )
        return CaptureInfo(settings, capture, metadata.get(ch.WORLD_METADATA))

    # -- channels and messages -------------------------------------------------------------

    def _decoder(self, channel: Channel, stream: IO[bytes]) -> _Decoder | None:
        kind = ch.kind_of(channel.topic)
        if kind is None:
            if ch.looks_like_input(channel.topic):
                self._lookalike_ids.add(channel.id)
                if len(self.lookalike_topics) < 16:
                    self.lookalike_topics.add(channel.topic)
            return None
        if kind is ch.ChannelKind.HOST:
            message_type = channel.topic.removeprefix(ch.HOST_TOPIC_PREFIX)
            return _Decoder(kind, message_type=message_type)
        if kind is not ch.ChannelKind.UDP:
            return _Decoder(kind)
        meta = channel.metadata
        host, _, sender_port = meta.get("sender", "").rpartition(":")
        port = _port_number(channel.topic.removeprefix(ch.UDP_TOPIC_PREFIX))
        sender = (host, _port_number(sender_port, allow_zero=True))
        if port <= 0 or sender[1] < 0 or not host:
            raise self._error(
                stream,
                f"channel {channel.topic!r}: expected {ch.UDP_TOPIC_PREFIX}PORT (1..65535) with "
                f"metadata sender HOST:PORT, got sender {meta.get('sender')!r}",
            )
        return _Decoder(kind, port, meta.get("bind", ""), sender)

    def _decode(self, decoder: _Decoder, t: int, data: bytes, stream: IO[bytes]) -> CaptureMessage:
        kind = decoder.kind
        if kind is ch.ChannelKind.UART:
            return UartChunk(t, data)
        if kind is ch.ChannelKind.UDP:
            return Datagram(t, decoder.port, decoder.bind, decoder.sender, data)
        if kind is ch.ChannelKind.HOST:
            return HostLine(t, decoder.message_type, data)
        try:
            value = json.loads(data)
            event = ch.PORT_EVENTS[value["event"]]
            reason = value["reason"]
            if not isinstance(reason, str):
                raise TypeError
        except (ValueError, KeyError, TypeError, RecursionError):
            raise self._error(
                stream,
                f"{ch.PORT_TOPIC} message: expected {{'event': one of "
                f"{', '.join(ch.PORT_EVENTS)}, 'reason': text}}, got {data[:80]!r}",
            ) from None
        return PortEvent(t, event, reason)

    def _error(self, stream: IO[bytes], what: str) -> CaptureError:
        try:
            offset = f" at byte {stream.tell()}"
        except (OSError, ValueError):
            offset = ""
        return CaptureError(f"{self.path}: damaged or truncated{offset}: {what}")


class _IndexSkippingReader(StreamReader):
    """The MCAP library's record reader, but a MessageIndex record (one after each chunk,
    16 bytes a message in it) is skipped rather than read entry by entry: the reader never
    uses one, and reading it cost 0.4 us a message, as much as taking the message out of its
    chunk. The bytes it reads, and the error where they run out, are the library's
    (``_skip_message_index``)."""

    def _read_record(self, opcode: int, length: int) -> Any:
        if opcode == _MESSAGE_INDEX:
            _skip_message_index(self._stream)
            return None
        return super()._read_record(opcode, length)


def _skip_message_index(stream: ReadDataStream) -> None:
    """What ``MessageIndex.read`` reads from ``stream``, read and dropped: its channel id, its
    entries' length, then the entries 16 bytes at a time while that length is not reached
    (so a length that is not a multiple of 16, or one past the record, reads as far as the
    library does). At the end of the file it raises what the library raises there: its
    ``EndOfFile`` where an 8-byte read would have found nothing, ``struct.error`` where one
    would have found part of a value."""
    stream.read2()
    remaining = -(-stream.read4() // 16) * 16
    while remaining:
        wanted = min(remaining, _SKIP_PIECE)
        got = len(stream.read(wanted))  # EndOfFile when nothing is left
        remaining -= got
        if got < wanted:  # the end of the file: where the library's 8-byte reads stop
            if got % 8:
                struct.unpack("<Q", bytes(got % 8))  # raises struct.error, as read8 does
            raise EndOfFile()


def _describe(exc: BaseException) -> str:
    name = type(exc).__name__
    text = str(exc)
    return f"{name}: {text}" if text else name


def _port_number(text: str, *, allow_zero: bool = False) -> int:
    """The port number in ``text``, -1 when it is none (0 only with ``allow_zero``)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 5:
        return -1
    port = int(text)
    return port if (0 if allow_zero else 1) <= port < 65536 else -1


def _chunk_data(chunk: Chunk) -> bytes:
    """A chunk's records, decompressed to no more than its declared size, itself at most
    ``MAX_RECORD_BYTES``: the MCAP library trusts a zstd frame's own size (red team rt24: a
    132 KB file whose one chunk declared 16 bytes and held 4 GiB of zeros took 8 GB)."""
    declared = chunk.uncompressed_size
    if declared > MAX_RECORD_BYTES:
        raise ValueError(f"a chunk of {declared} bytes uncompressed, over {MAX_RECORD_BYTES}")
    compression = chunk.compression
    if compression == "":
        data = bytes(chunk.data)
    elif compression == "zstd":
        import zstandard  # noqa: PLC0415 - the MCAP library's own optional codec

        reader = zstandard.ZstdDecompressor().stream_reader(chunk.data, read_across_frames=True)
        parts, size = [], 0
        while size <= declared:
            part = reader.read(declared + 1 - size)
            if not part:
                break
            parts.append(part)
            size += len(part)
        data = b"".join(parts)
    elif compression == "lz4":
        import lz4.frame  # noqa: PLC0415 - likewise

        data = lz4.frame.LZ4FrameDecompressor().decompress(chunk.data, max_length=declared + 1)
    else:
        raise ValueError(f"chunk compression {compression!r}: expected zstd, lz4 or none")
    if len(data) != declared:
        raise ValueError(f"a chunk declared {declared} bytes uncompressed, held {len(data)}+")
    return data
