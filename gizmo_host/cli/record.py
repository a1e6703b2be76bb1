"""``gizmo-host record --serial PATH -o FILE.mcap``: run the live host and record it in MCAP.

It records the inputs (every chunk read from the serial port with its receive time, the port's
opens and losses, and the RflySim datagrams on the ports named by ``--rflysim-copter-id`` and
``--udp-port``, each with its sender) and the host's own output (``result``, ``link``,
``verdict`` and ``stats`` JSON) on the channels of ``gizmo_host.capture.channels``. Settings
come from ``--config`` and flags as for ``gizmo-host run``, and are stored in the capture so
that ``gizmo-host replay --offline`` recomputes the same output.

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
import signal
import sys
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from gizmo_host import __version__
from gizmo_host.capture.settings import HostSettings
from gizmo_host.cli.config import Config, load_config
from gizmo_host.deploy.diagnostics import explain_open_error
from gizmo_host.errors import ConfigError
from gizmo_host.live.service import GizmoService

if TYPE_CHECKING:
    from gizmo_host.capture.background import BackgroundWriter

LOGGER = logging.getLogger("gizmo_host.record")

FLAGS = {
    "serial.path": "--serial",
    "serial.baudrate": "--baud",
    "serial.silent_after_s": "--silent-after-s",
    "serial.transport_delay_ms": "--transport-delay-ms",
    "store.ttl_ms": "--ttl-ms",
    "verdict.select": "--select",
    "publish.stats_interval_s": "--stats-interval-s",
}


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
    parser.add_argument(
        "--rflysim-copter-id",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="record CopterSim vehicle N's state, reply and PX4 ports (and heartbeat 20005)",
    )
    parser.add_argument(
        "--udp-port",
        type=int,
        action="append",
        default=[],
        metavar="P",
        help="record every datagram to UDP port P (repeatable)",
    )
    parser.add_argument("--bind", default="127.0.0.1", help="UDP address (default 127.0.0.1)")
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


def udp_ports(copter_ids: list[int], ports: list[int]) -> list[int]:
    """The ports to record: each vehicle's state, reply and PX4 ports, the heartbeat port,
    and ``ports``; ``ValueError`` naming the flag for one off the map."""
    from rfly_link import ports as rp  # noqa: PLC0415 - only when recording UDP

    out = set()
    for copter_id in copter_ids:
        if not 1 <= copter_id <= rp.MAX_COPTERS:
            raise ValueError(f"--rflysim-copter-id: expected 1..{rp.MAX_COPTERS}, got {copter_id}")
        out |= {
            rp.coptersim_state_port(copter_id),
            rp.coptersim_reply_port(copter_id),
            rp.px4_state_port(copter_id),
            rp.px4_ext_port(copter_id),
            rp.TIME_STAMP_PORT,
        }
    for port in ports:
        if not 1 <= port <= 65535:
            raise ValueError(f"--udp-port: expected 1..65535, got {port}")
        out.add(port)
    return sorted(out)


def _config(args: argparse.Namespace) -> Config:
    overrides: dict[str, dict[str, Any]] = {
        "serial": {
            "path": args.serial,
            "baudrate": args.baud,
            "silent_after_s": args.silent_after_s,
            "transport_delay_ms": args.transport_delay_ms,
        },
        "store": {"ttl_ms": args.ttl_ms},
        "verdict": {"select": args.select},
        "publish": {"stats_interval_s": args.stats_interval_s},
    }
    config = load_config(args.config, overrides, FLAGS)
    if config.serial.path is None:
        raise ConfigError("serial.path: expected a device path (--serial PATH or [serial] path)")
    return config


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level, stream=sys.stderr, format="%(levelname)s %(message)s")
    try:
        config = _config(args)
        ports = udp_ports(args.rflysim_copter_id, args.udp_port)
        if args.duration is not None and not args.duration > 0:
            raise ValueError(f"--duration: expected > 0, got {args.duration}")
        if not args.max_queue_mb > 0:
            raise ValueError(f"--max-queue-mb: expected > 0, got {args.max_queue_mb}")
    except (ConfigError, ValueError) as exc:
        print(f"gizmo-host record: {exc}", file=sys.stderr)
        return 2
    try:
        import mcap  # noqa: F401, PLC0415 - an optional extra
    except ImportError as exc:
        print(f"gizmo-host record: {exc} (pip install 'gizmo-host[record]')", file=sys.stderr)
        return 2
    path = config.serial.path
    assert path is not None
    settings = HostSettings(
        serial_path=path,
        baudrate=config.serial.baudrate,
        silent_after_s=config.serial.silent_after_s,
        transport_delay_ns=(
            None
            if config.serial.transport_delay_ms is None
            else round(config.serial.transport_delay_ms * 1e6)
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
    recorder = Recorder(args, config, settings, ports)
    try:
        return asyncio.run(recorder.record())
    except OSError as exc:  # the output cannot be created, a UDP port cannot be bound
        print(f"gizmo-host record: {exc}", file=sys.stderr)
        return 1


class Recorder:
    """The live service and the UDP taps, feeding one ``BackgroundWriter``."""

    def __init__(
        self, args: argparse.Namespace, config: Config, settings: HostSettings, ports: list[int]
    ) -> None:
        self.args, self.config, self.settings, self.ports = args, config, settings, ports
        self.clock = time.monotonic_ns

    async def record(self) -> int:
        from gizmo_host.capture.background import BackgroundWriter  # noqa: PLC0415
        from gizmo_host.capture.channels import recorded_input  # noqa: PLC0415
        from gizmo_host.capture.writer import CaptureWriter  # noqa: PLC0415
        from gizmo_host.errors import CaptureWriteError  # noqa: PLC0415
        from gizmo_host.stream.events import LinkEvent  # noqa: PLC0415

        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
        name = self.args.output
        stream = _open_output(name)
        info = {
            "package_version": __version__,
            "host_clock": "CLOCK_MONOTONIC",
            "monotonic_ns_at_start": str(time.monotonic_ns()),
            "wall_clock_ns_at_start": str(time.time_ns()),
        }
        try:
            writer = CaptureWriter(stream, name, self.settings, info=info)
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
        service = GizmoService(
            self.settings.serial_path,
            **self.settings.service_kwargs(),
            backoff_min_s=self.config.serial.backoff_min_s,
            backoff_max_s=self.config.serial.backoff_max_s,
            explain_open_error=explain_open_error,
            on_bytes=background.uart,
        )
        clock = self.clock

        def listener(message: Any) -> None:
            if isinstance(message, LinkEvent):
                port_input = recorded_input(message)
                if port_input is not None:
                    background.port(port_input, message.reason, message.host_ns)
            background.host(message, clock())

        service.watch(self.settings.selector)
        service.add_listener(listener)
        transports: list[asyncio.DatagramTransport] = []
        tasks: list[asyncio.Task[Any]] = []
        try:
            for port in self.ports:
                transport, _ = await loop.create_datagram_endpoint(
                    functools.partial(_DatagramTap, port, self.args.bind, background, clock),
                    local_addr=(self.args.bind, port),
                )
                transports.append(transport)
            async with service:
                if self.settings.stats_interval_s > 0:
                    tasks.append(asyncio.create_task(self._stats(service, background)))
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.args.duration)
        finally:
            for task in tasks:
                task.cancel()
            for transport in transports:
                transport.close()
            try:
                await loop.run_in_executor(None, background.close)
            except CaptureWriteError as exc:
                print(f"gizmo-host record: {exc}", file=sys.stderr)
                _close_quietly(stream)
                return 1
            _close_quietly(stream)
        stats = background.stats()
        print(
            f"gizmo-host record: {name}: {stats['messages']} messages, {stats['dropped']} dropped",
            file=sys.stderr,
        )
        return 0

    async def _stats(self, service: GizmoService, background: BackgroundWriter) -> None:
        while True:
            await asyncio.sleep(self.settings.stats_interval_s)
            background.host_dict(service.stats(), self.clock())


class _DatagramTap(asyncio.DatagramProtocol):
    """Every datagram to one port, with its sender and receive time, into the capture."""

    def __init__(
        self, port: int, bind: str, background: BackgroundWriter, clock: Callable[[], int]
    ) -> None:
        self._port, self._bind, self._background, self._clock = port, bind, background, clock

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self._background.datagram(self._port, self._bind, (addr[0], addr[1]), data, self._clock())

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
