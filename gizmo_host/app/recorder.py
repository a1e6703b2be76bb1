"""The recorder: the live ``Host`` and the UDP taps into one MCAP file (``gizmo-host record``).

Every chunk read from the serial port (with its receive time), the port's opens and losses, the
RflySim datagrams (with their senders) and the host's own output go to the channels of
``gizmo_host.capture.channels`` (with the ``foxglove`` extra, the Foxglove topics too), from a
thread of their own behind a bounded queue (``BackgroundWriter``): a slow disk costs dropped
messages (counted), never a stalled reader.
The host's world model hears the tapped datagrams through the ``DatagramRouter``, as offline
replay will.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from fusion import WorldSnapshot
from gizmo_host import __version__
from gizmo_host.app.foxglove_view import capture_view, watch_world
from gizmo_host.app.host import Host
from gizmo_host.app.host_config import HostConfig
from gizmo_host.app.world_config import WorldSetup
from gizmo_host.capture.carried_settings import HostSettings
from gizmo_host.capture.channels import recorded_input
from gizmo_host.live.stop_signals import add_stop_handlers
from gizmo_host.stream.events import LinkEvent

if TYPE_CHECKING:
    from gizmo_host.capture.background import BackgroundWriter

LOGGER = logging.getLogger("gizmo_host.record")


def host_settings(config: HostConfig) -> HostSettings:
    """What decides the host's output, from a checked ``config``."""
    serial = config.serial
    assert serial.path is not None
    return HostSettings(
        serial_path=serial.path,
        baudrate=serial.baudrate,
        silent_after_s=serial.silent_after_s,
        transport_delay_ns=(
            None if serial.transport_delay_ms is None else round(serial.transport_delay_ms * 1e6)
        ),
        max_skew_ppm=config.clock.max_skew_ppm,
        phase_error_threshold_ms=config.clock.phase_error_threshold_ms,
        lock_after_ms=config.clock.lock_after_ms,
        ttl_ms=config.store.ttl_ms,
        ttl_ms_by_type=tuple(sorted(config.store.ttl_ms_by_type.items())),
        reset_hold_ms=config.store.reset_hold_ms,
        verdict_interval_s=config.verdict.interval_s,
        stats_interval_s=config.publish.stats_interval_s,
        selector=config.selector,
    )


@dataclass(frozen=True, slots=True)
class RecordOptions:
    """What ``record`` adds to the host's settings: the file, the UDP taps, the limits."""

    output: str
    ports: tuple[int, ...] = ()
    bind: str = "127.0.0.1"
    duration_s: float | None = None
    max_queue_bytes: int = 64 * 1024 * 1024


class Recorder:
    """The live ``Host`` (its world fed by the UDP taps) into one ``BackgroundWriter``."""

    def __init__(self, options: RecordOptions, config: HostConfig, setup: WorldSetup | None):
        self.options, self.config, self.setup = options, config, setup
        self.settings = host_settings(config)
        self.clock = time.monotonic_ns
        self.world_input_errors: int | None = None  # once served, with a world model

    async def record(self) -> int:
        from gizmo_host.app.capture_world import world_metadata  # noqa: PLC0415
        from gizmo_host.capture.background import BackgroundWriter  # noqa: PLC0415
        from gizmo_host.capture.channels import WORLD_METADATA  # noqa: PLC0415
        from gizmo_host.capture.writer import CaptureWriter  # noqa: PLC0415
        from gizmo_host.errors import CaptureWriteError  # noqa: PLC0415

        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        add_stop_handlers(loop, stop.set)  # and the process ends within a second regardless
        name = self.options.output
        stream = _open_output(name)
        info = {
            "package_version": __version__,
            "host_clock": "CLOCK_MONOTONIC",
            "monotonic_ns_at_start": str(time.monotonic_ns()),
            "wall_clock_ns_at_start": str(time.time_ns()),
        }
        metadata = {} if self.setup is None else {WORLD_METADATA: world_metadata(self.setup)}
        try:
            writer = CaptureWriter(stream, name, self.settings, info=info, metadata=metadata)
        except CaptureWriteError as exc:
            print(f"gizmo-host record: {exc}", file=sys.stderr)
            _close_quietly(stream)
            return 1
        background = BackgroundWriter(
            writer,
            max_bytes=self.options.max_queue_bytes,
            on_failure=lambda _exc: _call_soon(loop, stop.set),
        )
        background.start()
        try:
            await self._serve(loop, stop, background)
        finally:
            try:
                await loop.run_in_executor(None, background.close)
            except CaptureWriteError as exc:
                print(f"gizmo-host record: {exc}", file=sys.stderr)
                _close_quietly(stream)
                return 1
            _close_quietly(stream)
        stats = background.stats()
        errors = self.world_input_errors
        print(
            f"gizmo-host record: {name}: {stats['messages']} messages, {stats['dropped']} dropped"
            + ("" if errors is None else f", {errors} world input errors"),
            file=sys.stderr,
        )
        return 0

    async def _serve(
        self, loop: asyncio.AbstractEventLoop, stop: asyncio.Event, background: BackgroundWriter
    ) -> None:
        host = Host.recording(self.config, background.uart)
        host.add_sink(functools.partial(_record_message, background, self.clock))
        view = capture_view(background, self.setup, self.clock)  # the Foxglove topics
        if view is not None:
            host.add_sink(view)
            watch_world(host, view)
        transports: list[asyncio.DatagramTransport] = []
        try:
            for port in self.options.ports:
                transport, _ = await loop.create_datagram_endpoint(
                    functools.partial(_DatagramTap, port, self, host, background),
                    local_addr=(self.options.bind, port),
                )
                transports.append(transport)
            async with host:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(host.wait(stop), self.options.duration_s)
        finally:
            for transport in transports:
                transport.close()
            if host.world is not None:
                self.world_input_errors = host.world.stats()["input_errors"]


def _record_message(background: BackgroundWriter, clock: Callable[[], int], message: Any) -> None:
    """A host sink: the message on its host channel, and a link transition's port event on
    ``/gizmo/uart/port`` (what replay cannot derive from the bytes)."""
    if isinstance(message, dict):  # the stats line
        background.host_dict(message, clock())
        return
    if isinstance(message, WorldSnapshot):
        background.host_dict(message.to_dict(), clock())
        return
    if isinstance(message, LinkEvent):
        port_input = recorded_input(message)
        if port_input is not None:
            background.port(port_input, message.reason, message.host_ns)
    background.host(message, clock())


class _DatagramTap(asyncio.DatagramProtocol):
    """Every datagram to one port, with its sender and receive time, into the capture."""

    def __init__(
        self, port: int, recorder: Recorder, host: Host, background: BackgroundWriter
    ) -> None:
        self._port, self._recorder, self._background = port, recorder, background
        self._host = host

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        rx_ns = self._recorder.clock()
        sender = (str(addr[0]), int(addr[1]))
        self._background.datagram(self._port, self._recorder.options.bind, sender, data, rx_ns)
        self._host.datagram(self._port, sender, data, rx_ns)

    def error_received(self, exc: Exception) -> None:
        LOGGER.warning("udp %d: %s", self._port, exc)


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    """From the writer's thread: run ``callback`` on the loop (which may have closed)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback)


def _open_output(name: str) -> IO[bytes]:
    if name == "-":
        return sys.stdout.buffer
    return open(name, "wb")


def _close_quietly(stream: IO[bytes]) -> None:
    """After a write error the buffer cannot be flushed either: that error was reported."""
    with contextlib.suppress(OSError, ValueError):
        stream.close()
