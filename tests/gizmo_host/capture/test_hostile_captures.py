"""A capture is untrusted input (red team rt24): a chunk never decompresses beyond what it
declares, what the replay skips that would have changed its lines is said, a value nested or
sized beyond reason is one line naming it, gaps that add up past a day are damage, and the
paced player's flags are checked. Each file is made here, its truth the bytes written."""

from __future__ import annotations

import io
import json
from pathlib import Path

import lz4.frame
import pytest
import zstandard
from mcap.reader import make_reader
from mcap.records import Channel, Chunk
from mcap.writer import CompressionType, Writer

from gizmo_host.app.offline_replay import QUIET_NS, OfflineReplay
from gizmo_host.capture.carried_settings import HostSettings
from gizmo_host.capture.channels import MAX_GAP_NS
from gizmo_host.capture.reader import (
    MAX_CHUNK_RECORDS,
    MAX_RECORD_BYTES,
    CaptureInfo,
    UartChunk,
    _chunk_data,
)
from gizmo_host.cli.main import main
from gizmo_host.errors import CaptureError
from gizmo_host.rigs.board import BoardModel

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
MS = 1_000_000


def _zeros_zstd(size: int) -> bytes:
    """``size`` zero bytes as one zstd frame that says its size, made without holding them."""
    out = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(out, size=size, closefd=False) as writer:
        block = bytes(1 << 20)
        for _ in range(size >> 20):
            writer.write(block)
    return out.getvalue()


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_a_chunk_never_decompresses_beyond_its_declared_size(compression: str) -> None:
    """Before: a 132 KB file whose chunk declared 16 bytes and held 4 GiB took 8 GB."""
    size = 256 << 20  # 256 MiB of zeros, a few hundred KB compressed
    data = _zeros_zstd(size) if compression == "zstd" else lz4.frame.compress(bytes(size))
    chunk = Chunk(compression, data, 0, 0, 0, 16)
    with pytest.raises(ValueError, match="declared 16 bytes uncompressed, held 17"):
        _chunk_data(chunk)
    over = Chunk(compression, data, 0, 0, 0, size)  # declared, but beyond the record bound
    with pytest.raises(ValueError, match=f"over {MAX_RECORD_BYTES}"):
        _chunk_data(over)
    small = zstandard.compress(b"abc") if compression == "zstd" else lz4.frame.compress(b"abc")
    assert _chunk_data(Chunk(compression, small, 0, 0, 0, 3)) == b"abc"


def _rewrite(source: Path, target: Path, *, topic: dict[str, str], metadata_last: bool) -> None:
    """``source`` copied record by record, channels renamed by ``topic``, the metadata before
    the data or (``metadata_last``) after it."""
    with source.open("rb") as f:
        reader = make_reader(f)
        metadata = list(reader.iter_metadata())
        messages = list(reader.iter_messages())
    with target.open("wb") as f:  # unchunked: a record is written where it is added
        writer = Writer(f, compression=CompressionType.NONE, use_chunking=False)
        writer.start(profile="", library="test")
        if not metadata_last:
            for record in metadata:
                writer.add_metadata(record.name, record.metadata)
        ids: dict[int, int] = {}
        for schema, channel, message in messages:
            if channel.id not in ids:
                schema_id = 0
                if schema is not None:
                    schema_id = writer.register_schema(schema.name, schema.encoding, schema.data)
                ids[channel.id] = writer.register_channel(
                    topic.get(channel.topic, channel.topic),
                    channel.message_encoding,
                    schema_id,
                    dict(channel.metadata),
                )
            writer.add_message(ids[channel.id], message.log_time, message.data, message.log_time)
        if metadata_last:
            for record in metadata:
                writer.add_metadata(record.name, record.metadata)
        writer.finish()


def test_what_the_replay_skips_that_would_change_its_lines_is_said(tmp_path, capsys) -> None:
    """The port's events moved to a topic one space off: the link never went DOWN and five
    HOLDs turned PROCEED, with exit 0 and not a word. Now a warning names them; and settings
    written after the data (a replay without them) are said too."""
    lookalike = tmp_path / "lookalike.mcap"
    _rewrite(CAPTURES / "unplug.mcap", lookalike, topic={"/gizmo/uart/port": "/gizmo/uart/port "},
             metadata_last=False)  # fmt: skip
    assert main(["replay", str(lookalike), "--offline"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "messages on topics like the inputs" in err[0]
    assert "'/gizmo/uart/port '" in err[0]
    late = tmp_path / "late.mcap"
    _rewrite(CAPTURES / "reset.mcap", late, topic={}, metadata_last=True)
    assert main(["replay", str(late), "--offline"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "settings records after the data were not read" in err[0]
    assert main(["replay", str(CAPTURES / "live_clean.mcap"), "--offline"]) == 0
    assert capsys.readouterr().err == ""  # its view and output topics are only counted


@pytest.mark.parametrize(
    "topic",
    ["gizmo/uart/port", "\u200b/gizmo/uart/port", "//gizmo/uart/port", "/Gizmo/uart/port",
     "/gizmo/u\u0430rt/port", "/g\u0456zm\u043e/u\u0430rt/port", "/uav1/gizmo/uart/port",
     "\u200b" * 256 + "/gizmo/uart/port", "/g\u0131zm\u0585/\u057d\u0251rt/port"],
)  # fmt: skip
def test_a_topic_that_reads_like_an_input_is_said(tmp_path, capsys, topic) -> None:
    """Red team rt26: the port's events on topics a person reads as ``/gizmo/uart/port`` but
    that do not start with its bytes (no leading slash, a zero-width space, a doubled slash, a
    capital, a Cyrillic letter) slipped past the warning: the link DOWN lines went from 5 to 0
    and PROCEEDs from 22 to 23, exit 0 and not a word."""
    path = tmp_path / "lookalike.mcap"
    _rewrite(CAPTURES / "unplug.mcap", path, topic={"/gizmo/uart/port": topic},
             metadata_last=False)  # fmt: skip
    assert main(["replay", str(path), "--offline"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "messages on topics like the inputs" in err[0]
    assert repr(topic) in err[0]


def test_a_channel_declared_again_as_another_topic_is_damage(tmp_path, capsys) -> None:
    """Red team rt27: the serial channel's id declared again mid-file as another topic: the
    reader took the new declaration and skipped what followed, exit 0, while the summary that
    tools show still named the channel the port's. The MCAP specification wants repeated
    declarations identical; one that differs is one error line."""
    path = tmp_path / "redeclared.mcap"
    frame = BoardModel().next_frame()
    with path.open("wb") as f:
        writer = Writer(f, compression=CompressionType.NONE, use_chunking=False)
        writer.start(profile="", library="test")
        writer.add_metadata("gizmo-host.capture", {"format_version": "1"})
        channel = writer.register_channel("/gizmo/uart", "application/octet-stream", 0)
        writer.add_message(channel, 10**9, frame, 10**9)
        again = Channel(
            id=channel,
            topic="/other",
            message_encoding="application/octet-stream",
            schema_id=0,
            metadata={},
        )
        again.write(writer._Writer__record_builder)
        writer.add_message(channel, 2 * 10**9, frame, 2 * 10**9)
        writer.finish()
    assert main(["replay", str(path), "--offline"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "declared again as '/other'" in err


@pytest.mark.parametrize(("record", "renamed"), [
    ("gizmo-host.settings", "gizmo-host.sett\u0456ngs"),
    ("gizmo-host.settings", "gizmo_host.settings"),
])  # fmt: skip
def test_a_metadata_record_named_like_ours_is_said(tmp_path, capsys, record, renamed) -> None:
    """Red team rt29: the settings record renamed with one Cyrillic letter: the replay ran on
    the default settings (103 of 140 lines differed), exit 0 and not a word."""
    path = tmp_path / "renamed.mcap"
    with (CAPTURES / "unplug.mcap").open("rb") as f:
        reader = make_reader(f)
        metadata = list(reader.iter_metadata())
        messages = list(reader.iter_messages())
    with path.open("wb") as f:
        writer = Writer(f, compression=CompressionType.NONE)
        writer.start(profile="", library="test")
        for item in metadata:
            writer.add_metadata(renamed if item.name == record else item.name, item.metadata)
        ids: dict[int, int] = {}
        for _, channel, message in messages:
            if channel.id not in ids:
                ids[channel.id] = writer.register_channel(
                    channel.topic, channel.message_encoding, 0, dict(channel.metadata)
                )
            writer.add_message(ids[channel.id], message.log_time, message.data, message.log_time)
        writer.finish()
    assert main(["replay", str(path), "--offline"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert any("metadata records named like the capture's own" in e and repr(renamed) in e
               for e in err)  # fmt: skip
    assert any("no gizmo-host.settings record" in e for e in err)


def test_two_settings_records_are_one_line_not_a_guess(tmp_path, capsys) -> None:
    """Red team rt26: a forged settings record (a TTL of 5 s) before the recorded one was
    read, with no word: PROCEEDs then claimed 4985 ms of validity instead of 237 ms."""
    path = tmp_path / "two.mcap"
    with path.open("wb") as f:
        writer = Writer(f, compression=CompressionType.NONE)
        writer.start(profile="", library="test")
        writer.add_metadata("gizmo-host.capture", {"format_version": "1"})
        writer.add_metadata("gizmo-host.settings", {"ttl_ms": "5000"})
        writer.add_metadata("gizmo-host.settings", {"ttl_ms": "250"})
        channel = writer.register_channel("/gizmo/uart", "application/octet-stream", 0)
        writer.add_message(channel, 10**9, BoardModel().next_frame(), 10**9)
        writer.finish()
    assert main(["replay", str(path), "--offline"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gizmo-host.settings: two records" in err


@pytest.mark.parametrize(
    "metadata",
    [
        {"gizmo-host.settings": {"ttl_ms": "1" + "0" * 400}},
        {"gizmo-host.settings": {"baudrate": "1" + "0" * 400}},
        {"gizmo-host.settings": {"transport_delay_ns": "1" + "0" * 400}},  # rt59: a traceback
        {"gizmo-host.settings": {"ttl_ms": "[" * 200_000 + "]" * 200_000}},
        {"gizmo-host.world": {"camera": "[" * 200_000 + "]" * 200_000}},
    ],
)
def test_a_value_beyond_reason_is_one_line_naming_it(tmp_path, capsys, metadata) -> None:
    path = tmp_path / "bad.mcap"
    with path.open("wb") as f:
        writer = Writer(f, compression=CompressionType.NONE)
        writer.start(profile="", library="test")
        writer.add_metadata("gizmo-host.capture", {"format_version": "1"})
        for name, values in metadata.items():
            writer.add_metadata(name, values)
        channel = writer.register_channel("/gizmo/uart", "application/octet-stream", 0)
        writer.add_message(channel, 10**9, BoardModel().next_frame(), 10**9)
        writer.finish()
    assert main(["replay", str(path), "--offline"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "gizmo-host." in err


@pytest.mark.parametrize("gap_ns", [MAX_GAP_NS // 2 + 1, 3_600 * 10**9])
def test_gaps_that_add_up_past_a_day_are_damage(gap_ns: int) -> None:
    """Before: each gap was bounded, not their sum: a 2.3 KB file of 23.9 h gaps printed 24 MB
    a gap; and gaps of a second or less were not counted (rt59: a 26 KB file of them replayed
    1.4 h of timers). Each gap's time past ``QUIET_NS`` counts, up to a day in all."""
    board = BoardModel()
    frame = board.next_frame()
    count = MAX_GAP_NS // (gap_ns - QUIET_NS) + 2
    messages = (UartChunk(10**9 + k * gap_ns, frame) for k in range(count))
    replay = OfflineReplay(CaptureInfo(HostSettings(stats_interval_s=0)))
    with pytest.raises(CaptureError, match="time between inputs, past 50 ms each, adds up to"):
        for _ in replay.replay(messages):
            pass
    near = [UartChunk(10**9 + k * QUIET_NS, board.next_frame()) for k in range(50)]
    replay = OfflineReplay(CaptureInfo(HostSettings(stats_interval_s=0)))
    lines = [json.loads(line) for line in replay.replay(near)]  # none past it: no sum
    assert sum(line["type"] == "result" for line in lines) == 50
    assert replay._quiet_ns == 0


@pytest.mark.parametrize("gap_ns", [10**9, 10**9 - 1, QUIET_NS + 1])
def test_gaps_of_a_second_or_less_count_too(gap_ns: int) -> None:
    """rt59: gaps of exactly a second took the per-chunk path that counts none: a 26 KB file of
    them replayed 1.4 h of timers, at 100 stats lines a second. Every gap's time past
    ``QUIET_NS`` counts towards the day."""
    board = BoardModel()
    messages = [UartChunk(10**9 + k * gap_ns, board.next_frame()) for k in range(10)]
    replay = OfflineReplay(CaptureInfo(HostSettings(stats_interval_s=0)))
    assert sum(b'"type":"result"' in line for line in replay.replay(messages)) == 10
    assert replay._quiet_ns == 9 * (gap_ns - QUIET_NS)


@pytest.mark.parametrize(
    "flags", [["--speed", "inf"], ["--speed", "1e-300"], ["--wait-s", "inf"],
              ["--linger-s", "nan"], ["--linger-s", "1e300"]],
)  # fmt: skip
def test_the_paced_players_flags_are_one_line_and_status_2(capsys, flags) -> None:
    assert main(["replay", str(CAPTURES / "clean.mcap"), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--speed must be from" in err


def test_a_chunk_of_too_many_records_is_one_line_naming_it(tmp_path, capsys) -> None:
    """rt59: 2.1 million empty messages in one 64 MiB chunk, a few KB of zstd, took 334 MB and
    26 s of replay; ten such chunks, 60 KB. A chunk holds at most ``MAX_CHUNK_RECORDS``."""
    path = tmp_path / "bomb.mcap"
    with path.open("wb") as f:
        writer = Writer(f, chunk_size=1 << 30, compression=CompressionType.ZSTD)
        writer.start(profile="", library="test")
        writer.add_metadata("gizmo-host.capture", {"format_version": "1"})
        channel = writer.register_channel("/gizmo/uart", "application/octet-stream", 0)
        for k in range(MAX_CHUNK_RECORDS + 1):
            writer.add_message(channel, 10**9 + k, b"", 10**9 + k)
        writer.finish()
    assert main(["replay", str(path), "--offline"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"a chunk of over {MAX_CHUNK_RECORDS} records" in err
