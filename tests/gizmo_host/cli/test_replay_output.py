"""``gizmo-host replay --offline`` writes its lines in blocks, in order, and all of them.

Where stdout is unbuffered (``python -u``, ``PYTHONUNBUFFERED``) a write per line was a system
call per frame: into a pipe, a 20 s capture of a saturated 921600 line took 2.5-3.5 s where
blocks take 1.8-1.9. A block may be taken in part by such a stream, and the lines read before
a damaged capture's error are still written before the error line. An outside review of the
first version found a failed write's block written again (bytes twice in the output), Ctrl-C
on ``replay | grep`` turned into a quiet exit 0, and a full non-blocking stdout spun a CPU:
each has its test here.
"""

from __future__ import annotations

import functools
import io
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gizmo_host.app.offline_replay import OfflineReplay
from gizmo_host.capture.reader import CaptureReader
from gizmo_host.cli.replay import BLOCK_BYTES, write_in_blocks
from gizmo_host.errors import CaptureError
from tests.captures import generate


class Raw(io.RawIOBase):
    """An unbuffered stream that takes at most ``most`` bytes a write, and records each; its
    write number ``fail_at`` (from 0) raises ``fail`` instead."""

    def __init__(
        self, most: int | None = None, fail_at: int = -1, fail: BaseException | None = None
    ) -> None:
        self.most, self.fail_at, self.fail = most, fail_at, fail
        self.offered: list[int] = []
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, block: bytes | memoryview) -> int:  # type: ignore[override]
        view = memoryview(block)
        if len(self.offered) == self.fail_at and self.fail is not None:
            fail, self.fail = self.fail, None  # once: a write after it would succeed
            raise fail
        self.offered.append(len(view))
        taken = view[: self.most] if self.most is not None else view
        self.data += taken
        return len(taken)


# Lines of every length a replay prints, from a few bytes to a world line's kilobytes.
LINES = [b'{"n":%d,"pad":"%s"}\n' % (n, b"x" * (n * 37 % 1500)) for n in range(2000)]
BLOCK = 1 << 16  # these tests' block: LINES make 23 of them


def test_every_line_in_order_in_blocks_of_at_least_the_block_size() -> None:
    lines = LINES
    total = sum(map(len, lines))
    assert total > 3 * BLOCK  # several blocks, or the test says nothing
    raw = Raw()
    write_in_blocks(iter(lines), raw, BLOCK)
    assert bytes(raw.data) == b"".join(lines)
    assert all(size >= BLOCK for size in raw.offered[:-1])
    assert len(raw.offered) <= total // BLOCK + 1
    assert len(raw.offered) < len(lines) / 50
    assert max(raw.offered) <= BLOCK + max(map(len, lines))  # a block and a line at most


@pytest.mark.parametrize(
    "fail", [BrokenPipeError(32, "Broken pipe"), KeyboardInterrupt()], ids=["EPIPE", "Ctrl-C"]
)
def test_a_write_that_fails_part_way_leaves_a_prefix_never_written_twice(fail) -> None:
    """Review of this change: the block being written was written again, from its start,
    after the failure (the first 64 KiB twice in the output)."""
    raw = Raw(most=1000, fail_at=70, fail=fail)  # in the second block's writes
    with pytest.raises(type(fail)):
        write_in_blocks(iter(LINES), raw, BLOCK)
    whole = b"".join(LINES)
    assert len(raw.data) > BLOCK and whole.startswith(bytes(raw.data))


def test_an_interrupt_from_the_replay_writes_nothing_more() -> None:
    """Ctrl-C reaches the whole pipeline (``replay | grep``): the reader is gone, so a last
    write would turn the interrupt into a broken pipe, read as ``| head`` ending: exit 0."""

    def interrupted() -> Iterator[bytes]:
        yield from LINES[:20]  # less than a block
        raise KeyboardInterrupt

    raw = Raw(fail_at=0, fail=BrokenPipeError(32, "Broken pipe"))
    with pytest.raises(KeyboardInterrupt):
        write_in_blocks(interrupted(), raw, BLOCK)
    assert raw.offered == []


def test_the_lines_before_an_error_leave_a_buffered_stream_too() -> None:
    """Stdout buffered: the lines read before the error are flushed before the error line."""
    raw = Raw()

    def damaged() -> Iterator[bytes]:
        yield from LINES[:5]
        raise CaptureError("x.mcap: damaged or truncated at byte 7")

    buffered = io.BufferedWriter(raw, 1 << 20)  # held: closing it would flush it
    with pytest.raises(CaptureError):
        write_in_blocks(damaged(), buffered, BLOCK)
    assert bytes(raw.data) == b"".join(LINES[:5])


def test_a_non_blocking_pipe_that_fills_gets_every_byte() -> None:
    """A write to a full non-blocking pipe returns None: wait until the reader takes more
    (the review: retried at once, 100 % of a CPU while the reader was slow)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    got = bytearray()
    out = Counted(write_fd, "wb")

    def drain() -> None:
        out.filled.wait(60)  # the reader starts once the pipe is full: it fills every run
        with open(read_fd, "rb", buffering=0) as stream:
            while chunk := stream.read(4096):  # slower than the writer
                got.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    with out:
        write_in_blocks(iter(LINES), out, BLOCK)
    reader.join(timeout=60)
    assert bytes(got) == b"".join(LINES)
    assert out.full > 0  # the pipe filled, or the test says nothing
    assert out.full <= out.taken  # each time full, a wait until it takes more: no spinning


class Counted(io.FileIO):
    """A file that counts its writes that took something and those that found it full."""

    def __init__(self, fd: int, mode: str) -> None:
        super().__init__(fd, mode)
        self.taken = self.full = 0
        self.filled = threading.Event()  # set when it first finds the pipe full

    def write(self, block: bytes | memoryview) -> int | None:  # type: ignore[override]
        written = super().write(block)
        if written is None:
            self.full += 1
            self.filled.set()
        else:
            self.taken += 1
        return written


def test_a_stream_that_takes_part_of_a_block_gets_all_of_it() -> None:
    lines = LINES
    raw = Raw(most=1000)
    write_in_blocks(iter(lines), raw, BLOCK)
    assert bytes(raw.data) == b"".join(lines)
    assert max(raw.offered) >= BLOCK  # blocks were offered, and taken in parts


def test_the_lines_before_an_error_are_written_then_the_error_goes_on() -> None:
    def damaged() -> Iterator[bytes]:
        yield b'{"n":1}\n'
        yield b'{"n":2}\n'
        raise CaptureError("x.mcap: damaged or truncated at byte 7")

    raw = Raw()
    with pytest.raises(CaptureError, match="byte 7"):
        write_in_blocks(damaged(), raw)
    assert bytes(raw.data) == b'{"n":1}\n{"n":2}\n'


@functools.cache
def _long_capture() -> bytes:
    """The generator's clean case 80 s long: some 3,000 lines, 1.7 MB of them."""
    generate.CASES["long"] = generate.CASES["clean"]._replace(duration_s=80.0, world=False)
    try:
        return generate.build("long")
    finally:
        del generate.CASES["long"]


@pytest.mark.subprocess
def test_the_command_unbuffered_prints_what_it_read_of_a_truncated_capture(tmp_path) -> None:
    """The real command, ``PYTHONUNBUFFERED=1``, into a pipe: the truth is the in-process
    replay's lines up to the reader's error."""
    whole = _long_capture()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(whole[: len(whole) * 3 // 4])
    reader = CaptureReader(str(cut))
    read: list[bytes] = []
    with pytest.raises(CaptureError):
        read.extend(OfflineReplay(reader.info, reader.path).replay(reader.messages()))
    assert sum(map(len, read)) > BLOCK_BYTES  # a block, and part of the next, before the error
    command = [sys.executable, "-m", "gizmo_host.cli", "replay", str(cut), "--offline"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    done = subprocess.run(command, capture_output=True, timeout=60, check=False, env=env)
    assert done.returncode == 1
    assert done.stdout == b"".join(read)
    assert done.stderr.decode().count("\n") == 1 and "cut.mcap" in done.stderr.decode()


@pytest.mark.subprocess
def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path) -> None:
    """``| head -1``: the first line, then the pipe closed mid-block: exit 0, not a word."""
    path = tmp_path / "long.mcap"
    path.write_bytes(_long_capture())
    command = [sys.executable, "-m", "gizmo_host.cli", "replay", str(path), "--offline"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as p:
        assert p.stdout is not None and p.stderr is not None
        first = p.stdout.readline()
        p.stdout.close()
        assert p.wait(timeout=60) == 0
        assert p.stderr.read() == b""
    assert first.startswith(b'{"type":')


@pytest.mark.subprocess
def test_a_closed_stdout_is_one_line_not_a_traceback() -> None:
    """``>&-``: Python starts with no ``sys.stdout``; it was an AttributeError's traceback."""
    path = Path(__file__).resolve().parents[2] / "captures" / "udp_loss.mcap"
    command = [sys.executable, "-m", "gizmo_host.cli", "replay", str(path), "--offline"]
    done = subprocess.run(
        command, stderr=subprocess.PIPE, timeout=60, check=False, preexec_fn=lambda: os.close(1)
    )
    assert done.returncode == 1
    assert done.stderr == b"gizmo-host replay: stdout is closed: nowhere to print\n"
