"""Facts about UDP sockets and addresses that receivers report or warn about.

Linux counts receive-buffer overflows per socket (/proc/net/udp) and system-wide
(/proc/net/snmp), and reports ``SO_RCVBUF`` at twice its usable size; these helpers read those
facts, and classify bind addresses (loopback, wildcard) for the receivers' warnings.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path

_LINUX = sys.platform.startswith("linux")
# Python's socket module has no SO_RCVBUFFORCE; Linux's value is 33 (asm-generic/socket.h).
SO_RCVBUFFORCE: int | None = getattr(socket, "SO_RCVBUFFORCE", 33 if _LINUX else None)


def read_udp_rcvbuf_errors(path: str = "/proc/net/snmp") -> int | None:
    """System-wide ``Udp: RcvbufErrors`` (None where /proc is unavailable)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    udp = [line.split() for line in lines if line.startswith("Udp:")]
    if len(udp) < 2 or "RcvbufErrors" not in udp[0]:
        return None
    return int(udp[1][udp[0].index("RcvbufErrors")])


def read_socket_drops(sock: socket.socket) -> int | None:
    """This socket's drop counter from /proc/net/udp, found by inode."""
    try:
        inode = str(os.fstat(sock.fileno()).st_ino)
        lines = Path("/proc/net/udp").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 12 and fields[9] == inode:
            return int(fields[-1])
    return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """True for the addresses that bind every local interface."""
    return host in ("", "0.0.0.0")


def serves_destination(bind_host: str, destination_ip: str) -> bool:
    """Whether a socket bound to ``bind_host`` receives datagrams sent to ``destination_ip``."""
    if is_wildcard(bind_host):
        return True
    bind = "127.0.0.1" if bind_host == "localhost" else bind_host
    return bind == destination_ip


def usable_rcvbuf(granted: int) -> int:
    """Payload bytes a granted ``SO_RCVBUF`` holds: Linux reports twice the size (bookkeeping)."""
    return granted // 2 if _LINUX else granted
