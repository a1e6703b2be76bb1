"""Ctrl-C and SIGTERM end a command within a second even while its stdout is stalled.

A pipe that nobody reads, shrunk to one page so it fills at once, stands for a consumer that
stopped reading. Before the fix ``gizmo-host rfly`` sat in ``write(2)`` on that pipe and ignored
SIGINT for minutes (gizmo_host/live/stop_signals.py says why).
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import pytest

from rfly_link import ports
from tests.support.coptersim import free_copter_id, state_datagram

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[3]
F_SETPIPE_SZ = 1031  # Linux
FILL_DEADLINE_S = 20.0
END_DEADLINE_S = 10.0  # generous on a loaded machine; without the fix it never ends


def stalled_pipe() -> tuple[int, int]:
    """(read end, write end) of a one-page pipe whose read end is never read."""
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, F_SETPIPE_SZ, 4096)
    return read_fd, write_fd


def blocked_on_pipe(pid: int) -> bool:
    """Whether the process's main thread sleeps in a pipe write (Linux's /proc wchan)."""
    return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()


class Command(subprocess.Popen):
    """``gizmo-host`` with ``args``, its stdout ``write_fd``, its stderr a file that an early
    end is told with."""

    def __init__(self, args: list[str], write_fd: int) -> None:
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed with the test's process
        command = [sys.executable, "-m", "gizmo_host.cli", *args]
        super().__init__(command, stdout=write_fd, stderr=self.errors, cwd=ROOT)
        os.close(write_fd)

    def ended_early(self) -> str:
        self.errors.seek(0)
        text = self.errors.read().decode(errors="replace").strip()
        return f"the command ended early ({self.returncode}): {text[-800:]}"


def queued_bytes(read_fd: int) -> int:
    return struct.unpack("i", fcntl.ioctl(read_fd, termios.FIONREAD, b"\0" * 4))[0]


def feed_until_blocked(proc: Command, feed, read_fd: int | None = None) -> None:
    """Call ``feed`` until the command's main thread is blocked writing to the full pipe, or
    (``read_fd`` given: a command whose stdout has its own queue and never blocks) until the
    pipe holds most of its page."""
    deadline = time.monotonic() + FILL_DEADLINE_S
    while not blocked_on_pipe(proc.pid) and not (
        read_fd is not None and queued_bytes(read_fd) >= 3072
    ):
        if proc.poll() is not None:
            raise AssertionError(proc.ended_early())
        assert time.monotonic() < deadline, "the command's stdout never filled"
        feed()


def ends_after(proc: subprocess.Popen[bytes], signum: int) -> int:
    proc.send_signal(signum)
    try:
        return proc.wait(END_DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"still running {END_DEADLINE_S} s after signal {signum}") from None


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_rfly_with_a_stalled_stdout_ends_on_a_signal(signum: int) -> None:
    copter_id = free_copter_id()
    read_fd, write_fd = stalled_pipe()
    proc = Command(["rfly", "--copter", str(copter_id), "--bind", "127.0.0.1"], write_fd)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    address = ("127.0.0.1", ports.coptersim_state_port(copter_id))
    try:
        feed_until_blocked(proc, lambda: sock.sendto(state_datagram(copter_id, 1.0), address))
        status = ends_after(proc, signum)
    finally:
        sock.close()
        os.close(read_fd)
    assert status in {0, 128 + signum, -signum}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_run_with_a_stalled_stdout_ends_on_a_signal(signum: int, tmp_path: Path) -> None:
    read_fd, write_fd = stalled_pipe()
    # No board: the link retries and the stats lines alone fill the page.
    args = ["run", "--serial", str(tmp_path / "gizmo0"), "--stats-interval-s", "0.05"]
    proc = Command(args, write_fd)
    try:
        feed_until_blocked(proc, lambda: time.sleep(0.01), read_fd)  # wait for the process
        status = ends_after(proc, signum)
    finally:
        os.close(read_fd)
    assert status in {0, 128 + signum, -signum}


@pytest.mark.realtime
def test_demo_with_a_stalled_stdout_ends_on_sigterm() -> None:
    read_fd, write_fd = stalled_pipe()
    proc = Command(["demo", "--json", "--duration", "120"], write_fd)  # world lines on stdout
    try:
        feed_until_blocked(proc, lambda: time.sleep(0.01), read_fd)  # wait for the process
        status = ends_after(proc, signal.SIGTERM)
    finally:
        os.close(read_fd)
    assert status in {0, 128 + signal.SIGTERM, -signal.SIGTERM}
