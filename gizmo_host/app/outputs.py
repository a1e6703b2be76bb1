"""The host's JSON Lines outputs (``[publish]``): stdout, a Unix socket, UDP datagrams.

Each is an ``Output``: a line sink with a start, a close and its counters in the ``stats``
line. A new sink (MAVLink, Foxglove, Zenoh) is one more ``Output`` given to
``Host.add_output``; the publishers themselves live in ``gizmo_host.live.publish``.
"""

from __future__ import annotations

from typing import Any, Protocol

from gizmo_host.app.config import PublishConfig, parse_host_port
from gizmo_host.errors import ServiceFailed
from gizmo_host.live.publish import StdoutSink, UdpSink, UnixSocketServer


class Output(Protocol):
    """A line sink the host owns: ``send`` must never block."""

    name: str  # its key under ``publish`` in the stats line ("" for none)

    def send(self, line: bytes) -> None: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def stats(self) -> dict[str, Any] | None: ...


class StdoutOutput:
    name = ""

    def __init__(self) -> None:
        self.sink = StdoutSink()
        self.send = self.sink.send

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def stats(self) -> dict[str, Any] | None:
        return None


class UnixSocketOutput:
    name = "unix_socket"

    def __init__(self, path: str, version_line: bytes, max_buffer_bytes: int) -> None:
        self.server = UnixSocketServer(path, version_line, max_buffer_bytes=max_buffer_bytes)
        self.send = self.server.send

    async def start(self) -> None:
        try:
            await self.server.start()
        except OSError as exc:  # a missing directory, no permission, another instance
            raise ServiceFailed(
                f"publish.unix_socket {self.server.path}: cannot serve: {exc.strerror or exc}"
            ) from None

    async def close(self) -> None:
        await self.server.close()

    def stats(self) -> dict[str, Any] | None:
        return dict(self.server.stats())


class UdpOutput:
    name = "udp"

    def __init__(self, address: str) -> None:
        self.address = address
        self.sink = UdpSink(*parse_host_port(address))
        self.send = self.sink.send

    async def start(self) -> None:
        try:
            await self.sink.start()
        except OSError as exc:  # e.g. a host name that does not resolve
            raise ServiceFailed(
                f"publish.udp {self.address}: cannot send: {exc.strerror or exc}"
            ) from None

    async def close(self) -> None:
        self.sink.close()

    def stats(self) -> dict[str, Any] | None:
        udp = self.sink
        return {"datagrams": udp.datagrams, "errors": udp.errors, "dropped": udp.dropped}


def outputs_for(publish: PublishConfig, version_line: bytes) -> list[Output]:
    """The outputs ``[publish]`` asks for, in the order they receive each line."""
    outputs: list[Output] = []
    if publish.stdout:
        outputs.append(StdoutOutput())
    if publish.unix_socket:
        outputs.append(
            UnixSocketOutput(publish.unix_socket, version_line, publish.unix_max_buffer_bytes)
        )
    if publish.udp:
        outputs.append(UdpOutput(publish.udp))
    return outputs
