"""MCAP captures through real files: what the writer puts in, the reader takes out, and any
damage to the file is one ``CaptureError``, never another exception."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import BinaryIO

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcap.records import Message
from mcap.stream_reader import StreamReader
from mcap.writer import Writer

from gizmo_core import Selector
from gizmo_host.capture import channels as ch
from gizmo_host.capture.background import BackgroundWriter
from gizmo_host.capture.carried_settings import HostSettings
from gizmo_host.capture.reader import (
    CaptureReader,
    Datagram,
    HostLine,
    PortEvent,
    UartChunk,
)
from gizmo_host.capture.writer import CaptureWriter
from gizmo_host.errors import CaptureError, CaptureWriteError
from gizmo_host.stream.linkstate import LinkInput
from tests.support.schemas import validate_schema

SETTINGS = HostSettings(
    serial_path="/dev/gizmo7",
    baudrate=921600,
    transport_delay_ns=0,
    ttl_ms=120.0,
    ttl_ms_by_type=((1, 80.0), (5, 300.0)),
    selector=Selector(source_id=2, result_type=5, id=None),
    stats_interval_s=0.0,
)
EXPECTED = [
    PortEvent(1_000, LinkInput.OPEN_STARTED, "opening"),
    PortEvent(2_000, LinkInput.OPENED, "port open"),
    UartChunk(3_000, b"\xa5\x47\x01"),
    Datagram(3_500, 30101, "127.0.0.1", ("127.0.0.1", 40000), b"\x00" * 168),
    Datagram(3_600, 30101, "127.0.0.1", ("127.0.0.2", 40001), b"\x01" * 8),
    UartChunk(4_000, bytes(range(256)) * 3),
    HostLine(4_100, "link", b'{"type":"link"}'),
    PortEvent(5_000, LinkInput.LOST, "disconnected: [errno 5] EIO"),
]


def write(path: Path, messages: list[object], *, compress: bool = True) -> None:
    with path.open("wb") as stream:
        writer = CaptureWriter(stream, str(path), SETTINGS, info={"who": "test"}, compress=compress)
        for m in messages:
            if isinstance(m, UartChunk):
                writer.uart(m.data, m.rx_ns)
            elif isinstance(m, PortEvent):
                writer.port(m.event, m.reason, m.host_ns)
            elif isinstance(m, Datagram):
                assert writer.datagram(m.port, m.bind, m.sender, m.data, m.rx_ns)
            elif isinstance(m, HostLine):
                writer.host(m.message_type, m.line + b"\n", m.log_ns)
        writer.finish()


@pytest.fixture(scope="module")
def capture_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("cap") / "all.mcap"
    write(path, EXPECTED, compress=False)
    return path.read_bytes()


@pytest.mark.parametrize("compress", [True, False])
def test_every_channel_round_trips(tmp_path: Path, compress: bool) -> None:
    path = tmp_path / "c.mcap"
    write(path, EXPECTED, compress=compress)
    reader = CaptureReader(str(path))
    assert list(reader.messages()) == EXPECTED
    assert reader.info.settings == SETTINGS
    assert reader.info.capture == {"format_version": "1", "who": "test"}
    assert reader.skipped == 0


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("chunk_bytes", [1, 200, 1 << 20])
def test_the_chunk_scan_reads_what_the_mcap_library_reads(
    tmp_path: Path, compress: bool, chunk_bytes: int
) -> None:
    """The reader takes messages out of chunks itself (``_chunk_messages``); the MCAP
    library's own record reader is the oracle: every message, channel and time the same,
    whether a chunk holds one message, a few or all of them."""
    path = tmp_path / "c.mcap"
    messages = [UartChunk(10_000 + n, bytes([n % 256]) * (1 + n % 70)) for n in range(300)]
    with path.open("wb") as stream:
        writer = CaptureWriter(
            stream, str(path), SETTINGS, compress=compress, chunk_bytes=chunk_bytes
        )
        for m in messages:
            writer.uart(m.data, m.rx_ns)
        writer.finish()
    with path.open("rb") as stream:
        library = [
            (r.log_time, bytes(r.data))
            for r in StreamReader(stream).records
            if isinstance(r, Message)
        ]
    assert library == [(m.rx_ns, m.data) for m in messages]
    assert list(CaptureReader(str(path)).messages()) == messages


def test_an_unchunked_file_is_read_record_by_record(tmp_path: Path) -> None:
    """Another writer may put messages outside chunks: they are read as well."""
    path = tmp_path / "flat.mcap"
    with path.open("wb") as stream:
        writer = Writer(stream, use_chunking=False)
        writer.start()
        channel = writer.register_channel(ch.UART_TOPIC, "application/octet-stream", 0)
        for n in range(3):
            writer.add_message(channel, log_time=n, data=bytes([n]), publish_time=n)
        writer.finish()
    assert list(CaptureReader(str(path)).messages()) == [UartChunk(n, bytes([n])) for n in range(3)]


def test_settings_metadata_round_trips_and_names_a_bad_key() -> None:
    assert HostSettings.from_metadata(SETTINGS.to_metadata(), "f") == SETTINGS
    assert HostSettings.from_metadata({"future_setting": "1"}, "f") == HostSettings()
    bad = {**SETTINGS.to_metadata(), "ttl_ms": '"fast"'}
    with pytest.raises(CaptureError, match=r"f: setting ttl_ms: expected a number"):
        HostSettings.from_metadata(bad, "f")
    with pytest.raises(CaptureError, match="silent_after_s"):
        HostSettings.from_metadata({"silent_after_s": "-1"}, "f")
    with pytest.raises(CaptureError, match="selector"):
        HostSettings.from_metadata({"selector": '{"colour": 1}'}, "f")


def _raw_mcap(path: Path, topic: str, data: bytes, metadata: dict[str, str] | None = None) -> None:
    with path.open("wb") as stream:
        writer = Writer(stream)
        writer.start()
        channel = writer.register_channel(topic, "x", 0, metadata or {})
        writer.add_message(channel, log_time=1, data=data, publish_time=1)
        writer.finish()


def test_foreign_channels_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "foreign.mcap"
    _raw_mcap(path, "/camera/image", b"jpeg")
    reader = CaptureReader(str(path))
    assert list(reader.messages()) == []
    assert reader.skipped == 1


@pytest.mark.parametrize(
    ("topic", "data", "metadata", "match"),
    [
        (ch.PORT_TOPIC, b'{"event":"exploded","reason":""}', None, "expected {'event'"),
        (ch.PORT_TOPIC, b"not json", None, "expected {'event'"),
        ("/rflysim/udp/99999", b"", {"sender": "1.2.3.4:5"}, r"PORT \(1..65535\)"),
        ("/rflysim/udp/30101", b"", {"sender": "nobody"}, "sender HOST:PORT"),
    ],
)
def test_bad_channels_and_messages_are_named(
    tmp_path: Path, topic: str, data: bytes, metadata: dict[str, str] | None, match: str
) -> None:
    path = tmp_path / "bad.mcap"
    _raw_mcap(path, topic, data, metadata)
    with pytest.raises(CaptureError, match=match):
        list(CaptureReader(str(path)).messages())


def test_not_an_mcap_and_a_missing_file_are_capture_errors(tmp_path: Path) -> None:
    path = tmp_path / "text.mcap"
    path.write_text("hello, world\n" * 10)
    with pytest.raises(CaptureError, match=r"text.mcap: damaged or truncated at byte \d+"):
        CaptureReader(str(path))
    with pytest.raises(CaptureError, match="cannot open"):
        CaptureReader(str(tmp_path / "missing.mcap"))


def test_a_newer_format_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v2.mcap"
    with path.open("wb") as stream:
        writer = Writer(stream)
        writer.start()
        writer.add_metadata(ch.CAPTURE_METADATA, {"format_version": "2"})
        writer.finish()
    with pytest.raises(CaptureError, match="format_version: expected 1, got '2'"):
        CaptureReader(str(path))


def _read_all(path: Path) -> list[object]:
    return list(CaptureReader(str(path)).messages())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.integers(min_value=0))
def test_a_truncated_capture_yields_a_prefix_then_a_capture_error(
    capture_bytes: bytes, tmp_path_factory: pytest.TempPathFactory, cut: int
) -> None:
    cut %= len(capture_bytes)
    path = tmp_path_factory.mktemp("cut") / "cut.mcap"
    path.write_bytes(capture_bytes[:cut])
    seen: list[object] = []
    with pytest.raises(CaptureError, match=r"cut\.mcap: "):
        seen.extend(CaptureReader(str(path)).messages())
    assert seen == EXPECTED[: len(seen)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_bytes_are_a_capture_error_or_read(
    capture_bytes: bytes, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    damaged = bytearray(capture_bytes)
    for _ in range(data.draw(st.integers(1, 4))):
        damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path_factory.mktemp("bad") / "bad.mcap"
    path.write_bytes(bytes(damaged))
    try:
        list(CaptureReader(str(path)).messages())
    except CaptureError as exc:
        assert str(exc).startswith(str(path))


def _full_disk() -> BinaryIO:
    """/dev/full behind a buffer: the capture starts, then a write fails with ENOSPC."""
    return open("/dev/full", "wb", buffering=1 << 20)


def test_a_full_disk_is_one_capture_write_error() -> None:
    stream = _full_disk()
    with pytest.raises(CaptureWriteError) as raised:
        writer = CaptureWriter(stream, "/dev/full", SETTINGS, compress=False, chunk_bytes=1)
        for i in range(1000):
            writer.uart(b"x" * 4096, i)
        writer.finish()
    assert str(raised.value) == "/dev/full: write: No space left on device"
    with contextlib.suppress(OSError):
        stream.close()


def test_background_writer_on_a_full_disk_fails_once_and_drops_the_rest() -> None:
    failures: list[CaptureWriteError] = []
    failed = threading.Event()

    def on_failure(exc: CaptureWriteError) -> None:
        failures.append(exc)
        failed.set()

    stream = _full_disk()
    writer = CaptureWriter(stream, "/dev/full", SETTINGS, compress=False, chunk_bytes=1)
    background = BackgroundWriter(writer, on_failure=on_failure)
    background.start()
    background.uart(b"x" * (2 << 20), 1)
    assert failed.wait(10), "the full disk was never reported"
    background.uart(b"y", 2)
    with pytest.raises(CaptureWriteError, match="No space left"):
        background.close(timeout_s=5)
    assert len(failures) == 1
    assert background.dropped == 1
    with contextlib.suppress(OSError):
        stream.close()


def test_background_writer_never_blocks_the_producer(tmp_path: Path) -> None:
    """The disk (a pipe nobody reads) stalls: puts return at once and excess items are
    dropped and counted; once the disk drains, everything queued is written."""
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "wb", buffering=0)
    writer = CaptureWriter(stream, "pipe", SETTINGS, compress=False, chunk_bytes=1)
    background = BackgroundWriter(writer, max_items=50)
    background.start()
    for i in range(2000):
        background.uart(b"z" * 1024, i)
    assert background.dropped > 0
    assert background.queued + background.dropped == 2000
    received = bytearray()
    drain = threading.Thread(target=lambda: _drain(read_fd, received))
    drain.start()
    background.close(timeout_s=10)
    stream.close()
    drain.join(10)
    assert background.written == background.queued
    (tmp_path / "p.mcap").write_bytes(received)
    chunks = _read_all(tmp_path / "p.mcap")
    assert len(chunks) == background.queued
    assert [c.rx_ns for c in chunks] == sorted(c.rx_ns for c in chunks)  # type: ignore[attr-defined]


def _drain(fd: int, out: bytearray) -> None:
    while block := os.read(fd, 65536):
        out += block
    os.close(fd)


def test_port_event_schema_matches_what_the_writer_writes() -> None:
    for event in ch.PORT_EVENTS.values():
        validate_schema(json.loads(ch.port_event_json(event, "why")), ch.PORT_EVENT_SCHEMA)
    with pytest.raises(ValueError, match="event: expected"):
        ch.port_event_json(LinkInput.FRAME, "frames are in the bytes")
