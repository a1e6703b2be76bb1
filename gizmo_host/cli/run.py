"""``gizmo-host run --serial PATH``: the live service, publishing JSON Lines.

By default it prints JSON Lines on stdout: every result, every link transition, the verdict for
the configured target selector whenever it changes and every ``verdict.interval_s``, and a
``stats`` line every ``publish.stats_interval_s``. ``--unix-socket`` and ``--udp`` add the other
sinks. With ``[camera]`` configured it also runs the world model (``[world]``, ``[rflysim]``:
see ``gizmo_host.cli.world_config``) and publishes ``world`` snapshots on the same sinks.
Settings come from ``--config FILE`` (TOML, see ``gizmo_host.cli.config``) and flags, which
override the file. Under systemd it reports READY, pings the watchdog and reports STOPPING.
Logs go to stderr; stdout carries only JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import sys
from collections.abc import Callable
from typing import Any

from fusion import WorldModel
from gizmo_host import __version__
from gizmo_host.cli.config import Config, load_config, parse_host_port
from gizmo_host.cli.world_config import WorldSetup
from gizmo_host.deploy.diagnostics import explain_open_error
from gizmo_host.deploy.sd_notify import SdNotifier, watchdog_loop
from gizmo_host.errors import ConfigError, ServiceFailed
from gizmo_host.live import event_loop
from gizmo_host.live.publish import (
    JsonLinesPublisher,
    StdoutSink,
    UdpSink,
    UnixSocketServer,
    encode_line,
    with_types,
)
from gizmo_host.live.service import GizmoService
from gizmo_host.live.stop_signals import add_stop_handlers
from gizmo_host.live.world import WorldService
from gizmo_host.stream.events import version_message

LOGGER = logging.getLogger("gizmo_host.run")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--serial", metavar="PATH", help="serial device, e.g. /dev/gizmo0")
    parser.add_argument("--config", metavar="FILE", help="TOML settings; flags override it")
    parser.add_argument("--baud", type=int, metavar="N", help="baud rate (default 115200)")
    parser.add_argument(
        "--select",
        metavar="SELECTOR",
        help="verdict target: 'any' (default) or source=N,type=N|NAME,id=N",
    )
    parser.add_argument(
        "--ttl-ms", type=float, metavar="MS", help="a result older than this is stale (default 250)"
    )
    parser.add_argument(
        "--silent-after-s",
        type=float,
        metavar="S",
        help="link SILENT after this long without a valid frame (default 1)",
    )
    parser.add_argument(
        "--transport-delay-ms",
        type=float,
        metavar="MS",
        help="minimum frame transport delay (default: 35 bytes at the baud "
        "rate; 0 for a pseudo-terminal)",
    )
    parser.add_argument(
        "--unix-socket",
        "--socket",
        dest="unix_socket",
        metavar="PATH",
        help="also serve JSON Lines on this Unix socket",
    )
    parser.add_argument("--udp", metavar="HOST:PORT", help="also send JSON Lines datagrams")
    parser.add_argument("--no-stdout", action="store_true", help="do not print JSON Lines")
    parser.add_argument(
        "--stats-interval-s",
        type=float,
        metavar="S",
        help="stats line period, 0 for none (default 10)",
    )
    parser.add_argument(
        "--event-loop",
        choices=event_loop.EVENT_LOOPS,
        help="auto (default: uvloop when installed), asyncio or uvloop",
    )
    world = parser.add_argument_group("world model (with [camera] configured)")
    world.add_argument("--rflysim-copter-id", type=int, metavar="N", help="the vehicle's CopterID")
    world.add_argument("--rflysim-config", metavar="FILE", help="RflySim Config.json")
    world.add_argument(
        "--rflysim-bind", metavar="IPV4", help="local address for RflySim (default 127.0.0.1)"
    )
    world.add_argument(
        "--rflysim-sim-host", metavar="IPV4", help="the simulator's address (default 127.0.0.1)"
    )
    world.add_argument(
        "--rflysim-request-odometry-hz",
        type=int,
        metavar="HZ",
        help="ask CopterSim for odometry at this rate and take the pose from it (default 0: "
        "the pose comes from the state port)",
    )
    world.add_argument(
        "--rflysim-request-imu-hz", type=int, metavar="HZ", help="ask CopterSim for IMU replies"
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level",
    )


# section.key -> the flag that sets it: an error in a flag's value names the flag.
FLAGS = {
    "serial.path": "--serial",
    "serial.baudrate": "--baud",
    "serial.silent_after_s": "--silent-after-s",
    "serial.transport_delay_ms": "--transport-delay-ms",
    "store.ttl_ms": "--ttl-ms",
    "verdict.select": "--select",
    "publish.unix_socket": "--unix-socket",
    "publish.udp": "--udp",
    "publish.stats_interval_s": "--stats-interval-s",
    "runtime.event_loop": "--event-loop",
    "rflysim.copter_id": "--rflysim-copter-id",
    "rflysim.config": "--rflysim-config",
    "rflysim.bind": "--rflysim-bind",
    "rflysim.sim_host": "--rflysim-sim-host",
    "rflysim.request_odometry_hz": "--rflysim-request-odometry-hz",
    "rflysim.request_imu_hz": "--rflysim-request-imu-hz",
}


def config_from_args(args: argparse.Namespace) -> Config:
    """The checked settings: the file's, with the flags given over them. A command that lacks
    some of ``run``'s flags (``record``) leaves those keys to the file."""
    flag = vars(args).get
    overrides: dict[str, dict[str, Any]] = {
        "serial": {
            "path": flag("serial"),
            "baudrate": flag("baud"),
            "silent_after_s": flag("silent_after_s"),
            "transport_delay_ms": flag("transport_delay_ms"),
        },
        "store": {"ttl_ms": flag("ttl_ms")},
        "verdict": {"select": flag("select")},
        "publish": {
            "unix_socket": flag("unix_socket"),
            "udp": flag("udp"),
            "stdout": False if flag("no_stdout") else None,
            "stats_interval_s": flag("stats_interval_s"),
        },
        "runtime": {"event_loop": flag("event_loop")},
        "rflysim": {
            "copter_id": flag("rflysim_copter_id"),
            "config": flag("rflysim_config"),
            "bind": flag("rflysim_bind"),
            "sim_host": flag("rflysim_sim_host"),
            "request_odometry_hz": flag("rflysim_request_odometry_hz"),
            "request_imu_hz": flag("rflysim_request_imu_hz"),
        },
    }
    config = load_config(args.config, overrides, FLAGS)
    if config.serial.path is None:
        raise ConfigError("serial.path: expected a device path (--serial PATH or [serial] path)")
    return config


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        print(f"gizmo-host run: config error: {exc}", file=sys.stderr)
        return 2
    loop = event_loop.resolve(config.runtime.event_loop)
    LOGGER.info("event loop: %s", loop)
    try:
        event_loop.run(serve(config), loop)
    except ConfigError as exc:  # Config.json changed since the check
        print(f"gizmo-host run: config error: {exc}", file=sys.stderr)
        return 2
    except (OSError, ServiceFailed) as exc:  # e.g. the Unix socket path cannot be bound
        print(f"gizmo-host run: {exc}", file=sys.stderr)
        return 1
    return 0


def _notifier() -> SdNotifier | None:
    """The systemd notifier, or None outside systemd (or when its address is unusable)."""
    try:
        return SdNotifier.from_environment()
    except ValueError as exc:
        LOGGER.warning("systemd notification disabled: %s", exc)
        return None


def _notify(notifier: SdNotifier | None, send: Callable[[SdNotifier], None], what: str) -> None:
    """Tell systemd ``what``; a failed send is logged, never fatal (systemd decides)."""
    if notifier is None:
        return
    try:
        send(notifier)
    except OSError as exc:
        LOGGER.warning("systemd notification %s failed: %s", what, exc)


async def serve(config: Config, stop: asyncio.Event | None = None) -> None:
    """Run until SIGINT/SIGTERM (or ``stop`` is set)."""
    loop = asyncio.get_running_loop()
    stop = stop or asyncio.Event()
    add_stop_handlers(loop, stop.set)  # and the process ends within a second whatever happens
    service = build_service(config)
    world_setup = config.world_setup()
    world = None if world_setup is None else build_world(world_setup)
    path = config.serial.path
    assert path is not None
    version = version_message(__version__, path)
    if world is not None:
        version = with_types(version, "world")
    publisher = JsonLinesPublisher()
    socket_server: UnixSocketServer | None = None
    udp: UdpSink | None = None
    if config.publish.stdout:
        publisher.add_sink(StdoutSink())
    if config.publish.unix_socket:
        socket_server = UnixSocketServer(
            config.publish.unix_socket,
            encode_line(version),
            max_buffer_bytes=config.publish.unix_max_buffer_bytes,
        )
        try:
            await socket_server.start()
        except OSError as exc:  # a missing directory, no permission, another instance
            raise ServiceFailed(
                f"publish.unix_socket {socket_server.path}: cannot serve: {exc.strerror or exc}"
            ) from None
        publisher.add_sink(socket_server)
    if config.publish.udp:
        udp = UdpSink(*parse_host_port(config.publish.udp))
        try:
            await udp.start()
        except OSError as exc:  # e.g. a host name that does not resolve
            raise ServiceFailed(
                f"publish.udp {config.publish.udp}: cannot send: {exc.strerror or exc}"
            ) from None
        publisher.add_sink(udp)
    service.watch(config.selector)
    service.add_listener(publisher)
    if world is not None:
        service.add_listener(world.on_gizmo)
        world.add_listener(publisher)
    notifier = _notifier()
    tasks: list[asyncio.Task[Any]] = []
    try:
        publisher.publish(version)
        if world is not None:  # before the link, so it hears the link's first events running
            try:
                await world.start()
            except OSError as exc:  # a port taken by another program, an address not ours
                raise ServiceFailed(f"rflysim: cannot listen: {exc.strerror or exc}") from None
        async with service:
            gc.freeze()  # start-up objects live forever: keep them out of every collection
            _notify(notifier, SdNotifier.ready, "ready")
            _notify(notifier, lambda n: n.status(f"reading {path}"), "status")
            if notifier is not None:
                tasks.append(asyncio.create_task(watchdog_loop(notifier), name="gizmo-watchdog"))
            if config.publish.stats_interval_s > 0:
                tasks.append(
                    asyncio.create_task(
                        _stats_loop(
                            service,
                            publisher,
                            socket_server,
                            udp,
                            config.publish.stats_interval_s,
                            world,
                        ),
                        name="gizmo-stats",
                    )
                )
            stopped = asyncio.create_task(stop.wait(), name="gizmo-stop")
            failed = asyncio.create_task(service.wait_failed(), name="gizmo-failure")
            tasks += [stopped, failed]
            if world is not None:
                tasks.append(asyncio.create_task(world.wait_failed(), name="world-failure"))
            done, _ = await asyncio.wait(tasks[-3:], return_when=asyncio.FIRST_COMPLETED)
            _notify(notifier, SdNotifier.stopping, "stopping")
            for task in done:
                if task is not stopped:
                    raise ServiceFailed(f"service failed: {task.result()!r}")
            LOGGER.info("stopping")
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if world is not None:
            await world.stop()
        if socket_server is not None:
            await socket_server.close()
        if udp is not None:
            udp.close()


def build_service(config: Config) -> GizmoService:
    """The service for a validated ``config`` (every value is within ``config.LIMITS``)."""
    path = config.serial.path
    assert path is not None
    serial = config.serial
    return GizmoService(
        path,
        baudrate=serial.baudrate,
        silent_after_s=serial.silent_after_s,
        backoff_min_s=serial.backoff_min_s,
        backoff_max_s=serial.backoff_max_s,
        transport_delay_ns=(
            None if serial.transport_delay_ms is None else round(serial.transport_delay_ms * 1e6)
        ),
        max_skew_ppm=config.clock.max_skew_ppm,
        phase_error_threshold_ms=config.clock.phase_error_threshold_ms,
        ttl_ms=config.store.ttl_ms,
        ttl_ms_by_type=dict(config.store.ttl_ms_by_type),
        reset_hold_ms=config.store.reset_hold_ms,
        verdict_interval_s=config.verdict.interval_s,
        explain_open_error=explain_open_error,
    )


def build_world(setup: WorldSetup) -> WorldService:
    """The world service for resolved settings: the model, and RflySim's receivers if any."""
    model = WorldModel(setup.camera, setup.world, selector=setup.selector)
    return WorldService.for_rflysim(model, setup.rflysim)


def stats_message(
    service: GizmoService,
    socket_server: UnixSocketServer | None,
    udp: UdpSink | None,
    world: WorldService | None = None,
) -> dict[str, Any]:
    message = service.stats()
    message["publish"] = {
        "unix_socket": None if socket_server is None else socket_server.stats(),
        "udp": None
        if udp is None
        else {"datagrams": udp.datagrams, "errors": udp.errors, "dropped": udp.dropped},
    }
    if world is not None:
        message["world"] = world.stats()
    return message


async def _stats_loop(
    service: GizmoService,
    publisher: JsonLinesPublisher,
    socket_server: UnixSocketServer | None,
    udp: UdpSink | None,
    interval_s: float,
    world: WorldService | None,
) -> None:
    while True:
        await asyncio.sleep(interval_s)
        publisher.publish(stats_message(service, socket_server, udp, world))
