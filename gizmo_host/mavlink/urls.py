"""pymavlink-style connection strings, parsed once into an :class:`Endpoint`.

``udpin:HOST:PORT`` listens (and answers whoever spoke last, or ``send_to``),
``udpout:HOST:PORT`` sends to a listener, ``tcp:HOST:PORT`` connects, and a device path with
an optional baud rate (``/dev/ttyAMA1:921600``) opens a serial port. ``send_to = "HOST:PORT"``
is for links that listen on one port and send to another, as RflySim's companion ports do
(it receives on 20100+2N-1 and sends to 20100+2N-2), which one pymavlink URL cannot say.
A mistake is a one-line ``ValueError`` naming the string.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

DEFAULT_BAUDRATE = 115200
RFLYSIM_MAVLINK_BASE = 20100


def rflysim_companion_ports(copter_id: int) -> tuple[int, int]:
    """RflySim's companion MAVLink ports for vehicle ``copter_id`` (CopterSim relays PX4 SITL
    or HITL): the companion receives on ``20100 + 2N - 1`` and sends to ``20100 + 2N - 2``."""
    if not 1 <= copter_id <= 450:
        raise ValueError(f"copter_id: expected 1..450, got {copter_id!r}")
    return RFLYSIM_MAVLINK_BASE + 2 * copter_id - 1, RFLYSIM_MAVLINK_BASE + 2 * copter_id - 2


class Kind(Enum):
    UDPIN = "udpin"
    UDPOUT = "udpout"
    TCP = "tcp"
    SERIAL = "serial"


class Endpoint(NamedTuple):
    kind: Kind
    host: str  # the device path for SERIAL
    port: int  # the baud rate for SERIAL
    send_to: tuple[str, int] | None = None

    def describe(self) -> str:
        if self.kind is Kind.SERIAL:
            return f"{self.host}:{self.port}"
        text = f"{self.kind.value}:{self.host}:{self.port}"
        return (
            text if self.send_to is None else f"{text} send_to {self.send_to[0]}:{self.send_to[1]}"
        )


def _host_port(text: str, what: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{what}: expected HOST:PORT, got {text!r}")
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"{what}: expected a port number after ':', got {text!r}") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"{what}: expected a port in 0..65535, got {text!r}")
    return host, number


def parse_url(url: str, send_to: str | None = None) -> Endpoint:
    """``url`` (and ``send_to``) as an :class:`Endpoint`; ``ValueError`` in one line."""
    if not isinstance(url, str) or not url:
        raise ValueError(f"mavlink url: expected a connection string, got {url!r}")
    scheme, sep, rest = url.partition(":")
    target: tuple[str, int] | None = None
    if send_to is not None:
        target = _host_port(send_to, "mavlink send_to")
    if url.startswith("/") or url.upper().startswith("COM"):
        path, colon, baud = url.rpartition(":")
        if not colon:
            path, baud = url, str(DEFAULT_BAUDRATE)
        try:
            baudrate = int(baud)
        except ValueError:
            raise ValueError(f"mavlink url: expected DEVICE[:BAUD], got {url!r}") from None
        if baudrate <= 0 or not path:
            raise ValueError(f"mavlink url: expected DEVICE[:BAUD] with BAUD > 0, got {url!r}")
        if target is not None:
            raise ValueError(f"mavlink send_to: only for udpin: urls, got {url!r}")
        return Endpoint(Kind.SERIAL, path, baudrate)
    kinds = {k.value: k for k in Kind if k is not Kind.SERIAL}
    kind = kinds.get(scheme.lower()) if sep else None
    if kind is None:
        raise ValueError(
            f"mavlink url: expected udpin:HOST:PORT, udpout:HOST:PORT, tcp:HOST:PORT or "
            f"/dev/DEVICE:BAUD, got {url!r}"
        )
    host, port = _host_port(rest, f"mavlink url {url!r}")
    if target is not None and kind is not Kind.UDPIN:
        raise ValueError(f"mavlink send_to: only for udpin: urls, got {url!r}")
    if kind is not Kind.UDPIN and port == 0:
        raise ValueError(f"mavlink url: expected a port > 0 to reach, got {url!r}")
    return Endpoint(kind, host, port, target)
