"""``gizmo-host record --serial PATH -o FILE.mcap``: run the live host and record it in MCAP.

It records the inputs (every chunk read from the serial port with its receive time, the port's
opens and losses, and the RflySim datagrams with their senders) and the host's own output
(``result``, ``link``, ``verdict``, ``stats`` and ``world`` JSON) on the channels of
``gizmo_host.capture.channels``. Settings come from ``--config`` and flags as for ``gizmo-host
run``, and are stored in the capture so that ``gizmo-host replay --offline`` recomputes the
same output. With ``[camera]`` configured it runs the world model as ``run`` does: the ports
its receivers would hear (``[rflysim]``) are recorded, and what arrives on them feeds the model
through the same pipelines (``gizmo_host.cli.capture_world``); ``--udp-port`` adds ports.

The file is written from its own thread behind a bounded queue (``--max-queue-mb``): a slow
disk costs dropped messages (counted in the summary), never a stalled reader. A full disk or a
write error ends the recording with one line and exit status 1; bad flags, exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import sys
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from gizmo_host import __version__
from gizmo_host.capture.channels import recorded_input
from gizmo_host.capture.settings import HostSettings
from gizmo_host.cli.config import Config
from gizmo_host.cli.run import config_from_args
from gizmo_host.cli.world_config import WorldSetup
from gizmo_host.deploy.diagnostics import explain_open_error
from gizmo_host.errors import ConfigError
from gizmo_host.live.rfly_sources import SensorRequester
from gizmo_host.live.service import GizmoService
from gizmo_host.live.stop_signals import add_stop_handlers
from gizmo_host.live.world import WorldService
from gizmo_host.stream.events import LinkEvent

if TYPE_CHECKING:
    from gizmo_host.capture.background import BackgroundWriter
    from gizmo_host.cli.capture_world import DatagramRouter

LOGGER = logging.getLogger("gizmo_host.record")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--serial", metavar="PATH", help="serial device, e.g. /dev/gizmo0")
    parser.add_argument(
        "-o", "--output", metavar="FILE", required=True, help="the MCAP file to write ('-': stdout)"
    )
    parser.add_argument("--config", metavar="FILE", help="TOML settings; flags override it")
    parser.add_argument("--baud", type=int, metavar="N", help="baud rate (default 115200)")
    parser.add_argument("--select", metavar="SELECTOR", help="verdict target (as for run)")
    parser.add_argument("--ttl-ms", type=float, metavar="MS", help="result TTL (default 250)")
    parser.add_argument("--silent-after-s", type=float, metavar="S", help="(default 1)")
    parser.add_argument("--transport-delay-ms", type=float, metavar="MS", help="(as for run)")
    parser.add_argument(
        "--stats-interval-s", type=float, metavar="S", help="stats period, 0 for none (10)"
    )
    world = parser.add_argument_group("world model (with [camera] configured, as for run)")
    world.add_argument("--rflysim-copter-id", type=int, metavar="N", help="the vehicle's CopterID")
    world.add_argument("--rflysim-config", metavar="FILE", help="RflySim Config.json")
    world.add_argument(
        "--rflysim-request-odometry-hz", type=int, metavar="HZ", help="pose from odometry replies"
    )
    parser.add_argument(
        "--udp-port",
        type=int,
        action="append",
        default=[],
        metavar="P",
        help="also record every datagram to UDP port P (repeatable)",
    )
    parser.add_argument(
        "--bind", metavar="IPV4", help="UDP address (default: [rflysim] bind, or 127.0.0.1)"
    )
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    parser.add_argument(
        "--max-queue-mb",
        type=float,
        default=64.0,
        metavar="MB",
        help="bytes waiting for the disk before messages are dropped (default 64)",
    )
    parser.add_argument(
        "--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )


def udp_ports(world_ports: list[int], ports: list[int]) -> list[int]:
    """The ports to record: the world's and ``ports`` (``ValueError`` naming the flag)."""
    for port in ports:
        if not 1 <= port <= 65535:
            raise ValueError(f"--udp-port: expected 1..65535, got {port}")
    return sorted({*world_ports, *ports})


def host_settings(config: Config) -> HostSettings:
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
        ttl_ms=config.store.ttl_ms,
        ttl_ms_by_type=tuple(sorted(config.store.ttl_ms_by_type.items())),
        reset_hold_ms=config.store.reset_hold_ms,
        verdict_interval_s=config.verdict.interval_s,
        stats_interval_s=config.publish.stats_interval_s,
        selector=config.selector,
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level, stream=sys.stderr, format="%(levelname)s %(message)s")
    try:
        config = config_from_args(args)
        setup = config.world_setup()
        if args.duration is not None and not args.duration > 0:
            raise ValueError(f"--duration: expected > 0, got {args.duration}")
        if not args.max_queue_mb > 0:
            raise ValueError(f"--max-queue-mb: expected > 0, got {args.max_queue_mb}")
        try:
            import mcap  # noqa: F401, PLC0415 - an optional extra
        except ImportError as exc:
            raise ConfigError(f"{exc} (pip install 'gizmo-host[record]')") from None
        from gizmo_host.cli.capture_world import build_world  # noqa: PLC0415 - needs mcap

        world = None if setup is None else build_world(setup, requester=_requester(setup))
        router = None if world is None else world[1]
        ports = udp_ports([] if router is None else router.ports, args.udp_port)
    except (ConfigError, ValueError) as exc:
        print(f"gizmo-host record: {exc}", file=sys.stderr)
        return 2
    bind = args.bind or (
        setup.rflysim.bind if setup is not None and setup.rflysim is not None else "127.0.0.1"
    )
    recorder = Recorder(args, config, host_settings(config), ports, bind)
    if setup is not None and world is not None:
        recorder.add_world(setup, *world)
    try:
        return asyncio.run(recorder.record())
    except OSError as exc:  # the output cannot be created, a UDP port cannot be bound
        print(f"gizmo-host record: {exc}", file=sys.stderr)
        return 1


def _requester(setup: WorldSetup) -> SensorRequester | None:
    rflysim = setup.rflysim
    if rflysim is None or not (rflysim.request_odometry_hz or rflysim.request_imu_hz):
        return None
    return SensorRequester(rflysim)


class Recorder:
    """The live service, the world model if any, and the UDP taps, feeding one
    ``BackgroundWriter``."""

    def __init__(
        self,
        args: argparse.Namespace,
        config: Config,
        settings: HostSettings,
        ports: list[int],
        bind: str,
    ) -> None:
        self.args, self.config, self.settings, self.ports = args, config, settings, ports
        self.bind = bind
        self.clock = time.monotonic_ns
        self.setup: WorldSetup | None = None
        self.world: WorldService | None = None
        self.router: DatagramRouter | None = None
        self.world_errors = 0

    def add_world(
        self, setup: WorldSetup, world: WorldService, router: DatagramRouter | None
    ) -> None:
        self.setup, self.world, self.router = setup, world, router

    async def record(self) -> int:
        from gizmo_host.capture.background import BackgroundWriter  # noqa: PLC0415
        from gizmo_host.capture.channels import WORLD_METADATA  # noqa: PLC0415
        from gizmo_host.capture.writer import CaptureWriter  # noqa: PLC0415
        from gizmo_host.cli.capture_world import world_metadata  # noqa: PLC0415
        from gizmo_host.errors import CaptureWriteError  # noqa: PLC0415

        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        add_stop_handlers(loop, stop.set)  # and the process ends within a second regardless
        name = self.args.output
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
            max_bytes=round(self.args.max_queue_mb * 1024 * 1024),
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
        errors = "" if self.world is None else f", {self.world_errors} world input errors"
        print(
            f"gizmo-host record: {name}: {stats['messages']} messages, {stats['dropped']} dropped"
            f"{errors}",
            file=sys.stderr,
        )
        return 0

    async def _serve(
        self, loop: asyncio.AbstractEventLoop, stop: asyncio.Event, background: BackgroundWriter
    ) -> None:
        service = GizmoService(
            self.settings.serial_path,
            **self.settings.service_kwargs(),
            backoff_min_s=self.config.serial.backoff_min_s,
            backoff_max_s=self.config.serial.backoff_max_s,
            explain_open_error=explain_open_error,
            on_bytes=background.uart,
        )
        clock, world = self.clock, self.world
        service.watch(self.settings.selector)
        service.add_listener(functools.partial(_record_message, background, clock))
        if world is not None:  # after the recording: ``run`` publishes, then feeds the world
            service.add_listener(world.on_gizmo)
            world.add_listener(lambda snapshot: background.host_dict(snapshot.to_dict(), clock()))
        transports: list[asyncio.DatagramTransport] = []
        tasks: list[asyncio.Task[Any]] = []
        try:
            for port in self.ports:
                transport, _ = await loop.create_datagram_endpoint(
                    functools.partial(_DatagramTap, port, self, background),
                    local_addr=(self.bind, port),
                )
                transports.append(transport)
            if world is not None:  # first: its first snapshot comes with the link opening
                await world.start()
            async with service:
                if self.settings.stats_interval_s > 0:
                    tasks.append(asyncio.create_task(self._stats(service, background)))
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.args.duration)
        finally:
            for task in tasks:
                task.cancel()
            if world is not None:
                await world.stop()
            for transport in transports:
                transport.close()

    def datagram(self, port: int, sender: tuple[str, int], data: bytes, rx_ns: int) -> None:
        """A datagram for the world (after it is recorded), as its receivers would pass it."""
        from gizmo_host.cli.capture_world import apply_events  # noqa: PLC0415

        if self.router is None or self.world is None:
            return
        try:
            apply_events(self.world, self.router.feed(port, sender, data, rx_ns))
        except Exception:  # a bug on one message must not end the recording
            self.world_errors += 1
            LOGGER.exception("world input on port %d", port)

    async def _stats(self, service: GizmoService, background: BackgroundWriter) -> None:
        from gizmo_host.cli.capture_world import world_stats  # noqa: PLC0415

        while True:
            await asyncio.sleep(self.settings.stats_interval_s)
            message = service.stats()
            if self.world is not None:
                message["world"] = world_stats(self.world, self.router)
                # The world's datagrams come through the recorder here, not its receivers:
                # their failures count where `run` counts its receivers' (world.input_errors).
                message["world"]["input_errors"] += self.world_errors
            background.host_dict(message, self.clock())


def _record_message(background: BackgroundWriter, clock: Callable[[], int], message: Any) -> None:
    """A service listener: the message on its host channel, and a link transition's port
    event on ``/gizmo/uart/port`` (what replay cannot derive from the bytes)."""
    if isinstance(message, LinkEvent):
        port_input = recorded_input(message)
        if port_input is not None:
            background.port(port_input, message.reason, message.host_ns)
    background.host(message, clock())


class _DatagramTap(asyncio.DatagramProtocol):
    """Every datagram to one port, with its sender and receive time, into the capture."""

    def __init__(self, port: int, recorder: Recorder, background: BackgroundWriter) -> None:
        self._port, self._recorder, self._background = port, recorder, background

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        rx_ns = self._recorder.clock()
        sender = (str(addr[0]), int(addr[1]))
        self._background.datagram(self._port, self._recorder.bind, sender, data, rx_ns)
        self._recorder.datagram(self._port, sender, data, rx_ns)

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
