"""Shared fixtures for deployment tests: a real datagram socket standing in for systemd."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

RECEIVE_TIMEOUT_S = 10.0


class NotifyReceiver:
    """The service manager's end of ``$NOTIFY_SOCKET``: a bound ``AF_UNIX`` datagram socket."""

    def __init__(self, sock: socket.socket, env_value: str) -> None:
        self.sock = sock
        self.env_value = env_value

    def receive(self, timeout_s: float = RECEIVE_TIMEOUT_S) -> dict[str, str]:
        """The next notification as a dict; raises ``TimeoutError`` if none arrives in time."""
        self.sock.settimeout(timeout_s)
        datagram = self.sock.recv(4096)
        return dict(line.split("=", 1) for line in datagram.decode().splitlines())

    def receive_until(self, key: str, value: str) -> list[dict[str, str]]:
        """All notifications up to and including the first with ``key=value``."""
        seen = []
        while True:
            message = self.receive()
            seen.append(message)
            if message.get(key) == value:
                return seen


@pytest.fixture
def notify_receiver(tmp_path: Path) -> Iterator[NotifyReceiver]:
    path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(os.fspath(path))
        yield NotifyReceiver(sock, os.fspath(path))


@pytest.fixture
def abstract_notify_receiver() -> Iterator[NotifyReceiver]:
    name = f"gizmo-host-test-{os.getpid()}-{os.urandom(4).hex()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        yield NotifyReceiver(sock, "@" + name)
