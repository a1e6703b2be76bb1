"""Ports the kernel has just handed out: every rig and test binds those, never a fixed one, so
two rigs (or a rig and the tests) run side by side and nothing binds RflySim's own ports."""

from __future__ import annotations

import socket

HOST = "127.0.0.1"
_KINDS = {"udp": socket.SOCK_DGRAM, "tcp": socket.SOCK_STREAM}


def free_ports(count: int = 1, kind: str = "udp", host: str = HOST) -> list[int]:
    """``count`` distinct ``kind`` ports free on ``host`` right now (the kernel's ephemeral
    picks, all held at once so none repeats).

    They are released before the caller binds them: another program could take one in
    between, and that part then fails to bind with an error naming the port.
    """
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, _KINDS[kind])
            socks.append(sock)
            sock.bind((host, 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for sock in socks:
            sock.close()


def port_is_free(port: int, kind: str = "udp", host: str = HOST) -> bool:
    """Whether ``port`` can be bound on ``host`` right now (a fixed port a rig must use)."""
    with socket.socket(socket.AF_INET, _KINDS[kind]) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True
