"""The host's JSON Lines outputs (``[publish]``): stdout, a Unix socket, UDP datagrams.

Each is an ``Output``: a line sink with a start, a close and its counters in the ``stats``
line. A new sink (MAVLink, Foxglove, Zenoh) is one more ``Output`` given to
``Host.add_output``; the publishers themselves live in ``gizmo_host.publish.lines``.
"""

from __future__ import annotations

from typing import Protocol

from gizmo_host.app.host_config import PublishConfig, parse_host_port
from gizmo_host.errors import ServiceFailed
from gizmo_host.publish.sinks import QueuedSink, stdout_sink, udp_sink
from gizmo_host.publish.unix_socket import UnixSocketServer


class Output(Protocol):
    """A line sink the host owns: ``send`` must never block."""

    name: str  # its key under ``publish`` in the stats line

    def send(self, line: bytes) -> None: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def stats(self) -> dict[str, int]: ...


class _QueuedOutput:
    """An output through a bounded queue of its own (``QueuedSink``), once started."""

    sink: QueuedSink | None = None

    def send(self, line: bytes) -> None:
        if self.sink is not None:
            self.sink.send(line)

    def send_lines(self, lines: list[bytes]) -> None:
        if self.sink is not None:
            self.sink.send_lines(lines)

    async def close(self) -> None:
        if self.sink is not None:  # a stalled reader gets CLOSE_FLUSH_S, then lines drop
            await self.sink.close()

    def stats(self) -> dict[str, int]:
        return (
            {"queued": 0, "dropped": 0, "disconnected": 0}
            if self.sink is None
            else self.sink.stats()
        )


class StdoutOutput(_QueuedOutput):
    """stdout through its own bounded queue: a reader that stops never blocks the loop."""

    name = "stdout"

    async def start(self) -> None:
        self.sink = stdout_sink()


class UnixSocketOutput:
    name = "unix_socket"

    def __init__(
        self, path: str, version_line: bytes, max_buffer_bytes: int, max_clients: int
    ) -> None:
        self.server = UnixSocketServer(
            path, version_line, max_buffer_bytes=max_buffer_bytes, max_clients=max_clients
        )
        self.send = self.server.send
        self.send_lines = self.server.send_lines

    async def start(self) -> None:
        try:
            await self.server.start()
        except OSError as exc:  # a missing directory, no permission, another instance
            raise ServiceFailed(
                f"publish.unix_socket {self.server.path}: cannot serve: {exc.strerror or exc}"
            ) from None

    async def close(self) -> None:
        await self.server.close()

    def stats(self) -> dict[str, int]:
        return self.server.stats()


class UdpOutput(_QueuedOutput):
    """One datagram per line through its own bounded queue (the oldest dropped, counted)."""

    name = "udp"

    def __init__(self, address: str) -> None:
        self.address = address
        self._host_port = parse_host_port(address)

    async def start(self) -> None:
        try:
            self.sink = await udp_sink(*self._host_port)
        except OSError as exc:  # e.g. a host name that does not resolve
            raise ServiceFailed(
                f"publish.udp {self.address}: cannot send: {exc.strerror or exc}"
            ) from None


def outputs_for(publish: PublishConfig, version_line: bytes) -> list[Output]:
    """The outputs ``[publish]`` asks for, in the order they receive each line."""
    outputs: list[Output] = []
    if publish.stdout:
        outputs.append(StdoutOutput())
    if publish.unix_socket:
        outputs.append(
            UnixSocketOutput(
                publish.unix_socket,
                version_line,
                publish.unix_max_buffer_bytes,
                publish.unix_max_clients,
            )
        )
    if publish.udp:
        outputs.append(UdpOutput(publish.udp))
    return outputs
