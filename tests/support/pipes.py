"""Pipes for the tests of readers that stall."""

from __future__ import annotations

import contextlib
import os


def full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is already full: the first write to it would block. Its write end
    is blocking again, as a shell would hand it over (a sink reopens it non-blocking)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    with contextlib.suppress(BlockingIOError):
        while True:
            os.write(write_fd, b"#" * 4096)
    os.set_blocking(write_fd, True)
    return read_fd, write_fd
