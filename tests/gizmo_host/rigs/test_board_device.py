"""``gizmo-host emulate --device``: a real serial device opened with serialx (here the slave
end of a pty, which serialx opens as it would a USB-UART), read back from the other end."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
import tty

import pytest

from gizmo_host.wire.parser import StreamParser

pytestmark = pytest.mark.subprocess

DEADLINE_S = 10.0


def _read_frames(master_fd: int, count: int) -> tuple[list, StreamParser]:
    parser = StreamParser()
    frames: list = []
    deadline = time.monotonic() + DEADLINE_S
    with selectors.DefaultSelector() as selector:
        selector.register(master_fd, selectors.EVENT_READ)
        while len(frames) < count:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"only {len(frames)} frames before the deadline"
            if selector.select(remaining):
                frames.extend(parser.feed(os.read(master_fd, 4096)))
    return frames, parser


def test_frames_reach_a_device_in_order_and_intact() -> None:
    master, slave = os.openpty()
    tty.setraw(master)
    path = os.ttyname(slave)
    cmd = [sys.executable, "-m", "gizmo_host.cli", "emulate", "--device", path]
    cmd += ["--duration", "3", "--start-sequence", "65530", "--stats"]
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        frames, parser = _read_frames(master, 20)
    finally:
        process.terminate()
        _, err = process.communicate(timeout=DEADLINE_S)
        os.close(master)
        os.close(slave)
    sequences = [f.sequence for f in frames]
    assert sequences == [(65530 + n) % 65536 for n in range(len(frames))]  # wraps in order
    stats = parser.stats
    assert stats.crc_errors == 0 and stats.bytes_discarded == 0
    assert process.returncode in (0, -15), err


def test_a_device_that_cannot_be_opened_is_one_line_and_a_nonzero_exit(tmp_path) -> None:
    missing = str(tmp_path / "ttyUSB9")
    cmd = [sys.executable, "-m", "gizmo_host.cli", "emulate", "--device", missing]
    cmd += ["--duration", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=DEADLINE_S, check=False)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and missing in lines[0] and "Traceback" not in done.stderr
