"""Ports free right now: every rig and test binds those, never a fixed one, so two rigs (or a
rig and the tests) run side by side and nothing binds RflySim's own ports.

They are picked below the kernel's ephemeral range. A port the kernel hands out for ``bind(0)``
is in that range, and so is every automatic port (a UDP socket sending before it binds, a TCP
connect): released for the caller to bind, it could go to any socket on the machine meanwhile.
That happened in CI (certify's replies port, taken by another socket). A port below the range
is only ever taken by a program that names it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

HOST = "127.0.0.1"
_KINDS = {"udp": socket.SOCK_DGRAM, "tcp": socket.SOCK_STREAM}
# RflySim's own ports are 9999 + SeqID, 20002-20009, 20010 + window, 20100 + 2 * copter (PX4),
# 30100 + 2 * copter (CopterSim), 31000 + copter, 40100 + 2 * copter and 50000: between
# 21000 and 30000 only PX4's ports of copters over 450 could be, and RflySim has 255 at most.
PICK_FROM, PICK_TO = 21000, 30000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_TRIES_PER_PORT = 20


def free_ports(count: int = 1, kind: str = "udp", host: str = HOST) -> list[int]:
    """``count`` distinct ``kind`` ports free on ``host`` right now, all held at once while
    picked so none repeats.

    They are released before the caller binds them: a program naming one in between makes
    that bind fail with an error naming the port. Where the ephemeral range reaches below
    :data:`PICK_TO` (or is unknown), they are the kernel's picks instead.
    """
    socks: list[socket.socket] = []
    try:
        if _below_ephemeral():
            picker = random.Random()  # spreads the picks; nothing secret
            tries = 0
            while len(socks) < count:
                tries += 1
                if tries > _TRIES_PER_PORT * count:
                    raise OSError(f"no {count} free {kind} ports in {PICK_FROM}-{PICK_TO - 1}")
                sock = _bound(kind, host, picker.randrange(PICK_FROM, PICK_TO))
                if sock is not None:
                    socks.append(sock)
        else:
            for _ in range(count):
                sock = _bound(kind, host, 0)
                assert sock is not None, "bind(0) raises rather than fails"
                socks.append(sock)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for sock in socks:
            sock.close()


def _bound(kind: str, host: str, port: int) -> socket.socket | None:
    """A socket bound to ``port``, or None when that port is in use (port 0 always binds)."""
    sock = socket.socket(socket.AF_INET, _KINDS[kind])
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        if port == 0:
            raise
        return None
    return sock


def _below_ephemeral() -> bool:
    """Whether :data:`PICK_FROM` to :data:`PICK_TO` lies below the kernel's ephemeral range."""
    try:
        low = int(EPHEMERAL_RANGE.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return low >= PICK_TO


def port_is_free(port: int, kind: str = "udp", host: str = HOST) -> bool:
    """Whether ``port`` can be bound on ``host`` right now (a fixed port a rig must use)."""
    with socket.socket(socket.AF_INET, _KINDS[kind]) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True
