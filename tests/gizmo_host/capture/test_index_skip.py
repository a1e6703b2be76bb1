"""The reader skips each MessageIndex record rather than reading it entry by entry
(``reader._IndexSkippingReader``). The MCAP library's own ``MessageIndex.read`` is the oracle:
on any file, whole, cut short anywhere in or around an index, or with an index's fields
damaged, the reader gives the same messages and then the same error (its offset included) as
with the library reading every index."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcap.stream_reader import StreamReader

from gizmo_host.capture import reader as reader_module
from gizmo_host.capture.carried_settings import HostSettings
from gizmo_host.capture.reader import CaptureReader, UartChunk
from gizmo_host.capture.writer import CaptureWriter
from gizmo_host.errors import CaptureError

_MESSAGE_INDEX = 0x07
_RECORD_HEAD = struct.Struct("<BQ")
_Outcome = tuple[list[object], str | None]  # the messages read, then the error if any


@contextlib.contextmanager
def _library_reads_the_index() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reader_module._IndexSkippingReader, "_read_record", StreamReader._read_record)
        yield


def _outcome(path: Path) -> _Outcome:
    seen: list[object] = []
    try:
        seen.extend(CaptureReader(str(path)).messages())
    except CaptureError as exc:
        return seen, str(exc)
    return seen, None


def _both(path: Path, raw: bytes) -> tuple[_Outcome, _Outcome]:
    path.write_bytes(raw)
    fast = _outcome(path)
    with _library_reads_the_index():
        library = _outcome(path)
    return fast, library


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, list[int]]:
    """A plain capture of several chunks, and where its MessageIndex records start."""
    path = tmp_path_factory.mktemp("idx") / "c.mcap"
    with path.open("wb") as stream:
        writer = CaptureWriter(stream, str(path), HostSettings(), compress=False, chunk_bytes=300)
        for n in range(40):
            writer.uart(bytes([0xA5, 0x47, n]) * (1 + n % 9), 10_000 + 1_000 * n)
        writer.finish()
    raw = path.read_bytes()
    starts, at = [], 8  # after the magic
    while at + _RECORD_HEAD.size <= len(raw):
        opcode, length = _RECORD_HEAD.unpack_from(raw, at)
        if opcode == _MESSAGE_INDEX:
            starts.append(at)
        if opcode == 0x02:  # the footer
            break
        at += _RECORD_HEAD.size + length
    assert len(starts) >= 3
    return raw, starts


def test_a_whole_capture_reads_the_same(capture: tuple[bytes, list[int]], tmp_path: Path) -> None:
    raw, _ = capture
    fast, library = _both(tmp_path / "c.mcap", raw)
    assert fast == library
    assert len(fast[0]) == 40 and fast[1] is None
    assert all(isinstance(m, UartChunk) for m in fast[0])


def test_a_capture_cut_in_or_around_any_index_reads_the_same(
    capture: tuple[bytes, list[int]], tmp_path: Path
) -> None:
    raw, starts = capture
    errors = set()
    for start in (starts[0], starts[-1]):
        length = _RECORD_HEAD.unpack_from(raw, start)[1]
        for cut in range(start - 2, start + _RECORD_HEAD.size + length + 3):
            fast, library = _both(tmp_path / "cut.mcap", raw[:cut])
            assert fast == library, cut
            errors.add(fast[1])
    assert any("EndOfFile" in str(e) for e in errors)
    assert any("unpack requires a buffer of 8 bytes" in str(e) for e in errors)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    entries_length=st.one_of(
        st.integers(0, 80), st.sampled_from([2**32 - 1, 2**31, 1 << 20, (1 << 20) + 8])
    ),
    channel_id=st.integers(0, 0xFFFF),
    cut_back=st.one_of(st.just(0), st.integers(1, 40)),
)
def test_an_index_with_damaged_fields_reads_the_same(
    capture: tuple[bytes, list[int]],
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
    entries_length: int,
    channel_id: int,
    cut_back: int,
) -> None:
    """An entries length that is not a multiple of 16, shorter or longer than the record,
    past the end of the file or huge, a channel id that names nothing; optionally with the
    file cut short too."""
    raw, starts = capture
    start = data.draw(st.sampled_from(starts))
    damaged = bytearray(raw)
    struct.pack_into("<HI", damaged, start + _RECORD_HEAD.size, channel_id, entries_length)
    if cut_back:
        damaged = damaged[: len(damaged) - cut_back]
    fast, library = _both(tmp_path_factory.mktemp("bad") / "bad.mcap", bytes(damaged))
    assert fast == library
