"""``gizmo-host run --serial PATH``: the live service, publishing JSON Lines.

By default it prints JSON Lines on stdout: every result, every link transition, the verdict for
the configured target selector whenever it changes and every ``verdict.interval_s``, and a
``stats`` line every ``publish.stats_interval_s``. ``--unix-socket`` and ``--udp`` add the other
sinks. With ``[camera]`` configured it also runs the world model (``[world]``, ``[rflysim]``:
see ``gizmo_host.app.world_config``) and publishes ``world`` snapshots on the same sinks.
Settings come from ``--config FILE`` (TOML, see ``gizmo_host.app.host_config``) and flags, which
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

from gizmo_core import ConfigError
from gizmo_host.app import settings
from gizmo_host.app.foxglove_view import add_foxglove_flag, announce, attach_foxglove
from gizmo_host.app.host import Host
from gizmo_host.app.host_config import HostConfig as Config
from gizmo_host.app.host_config import config_from_args
from gizmo_host.app.idle import log_idle_settings
from gizmo_host.cli.common import EXIT_USAGE, add_log_level, file_to_write, setup_logging
from gizmo_host.deploy.sd_notify import SdNotifier, watchdog_loop
from gizmo_host.errors import ServiceFailed
from gizmo_host.live import event_loop, wakeup_slice
from gizmo_host.live.stop_signals import add_stop_handlers

LOGGER = logging.getLogger("gizmo_host.run")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="TOML settings; flags override it")
    settings.add_flags(parser, "run")
    add_foxglove_flag(parser)
    add_log_level(parser, "INFO")


def run(args: argparse.Namespace) -> int:
    setup_logging(args.log_level)
    try:
        config = config_from_args(args)
        if config.publish.unix_socket is not None:  # here, not in the settings: the doctor
            # reads them where the service's runtime directory may not exist yet
            file_to_write("publish.unix_socket", config.publish.unix_socket)
    except ConfigError as exc:
        print(f"gizmo-host run: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # Every check is done (files and extras too): from here on a log line is never followed
    # by a config error.
    log_idle_settings(config)  # settings that would do nothing, one warning line each
    loop = event_loop.resolve(config.runtime.event_loop)
    LOGGER.info("event loop: %s", loop)
    _request_slice(config.runtime.wakeup_slice_us)
    try:
        event_loop.run(serve(config), loop)
    except ConfigError as exc:  # Config.json changed since the check
        print(f"gizmo-host run: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, ServiceFailed) as exc:  # e.g. the Unix socket path cannot be bound
        print(f"gizmo-host run: {exc}", file=sys.stderr)
        return 1
    return 0


def _request_slice(slice_us: int) -> None:
    """Ask for the reader's short slice before any thread starts (threads inherit it); one
    log line says what the kernel granted, a warning if it granted none."""
    outcome = wakeup_slice.request_slice(slice_us)
    if outcome.granted_ns is not None or slice_us == 0:
        LOGGER.info("wake-up: %s", outcome.note)
    else:
        LOGGER.warning("wake-up: %s", outcome.note)


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
    stop = stop or asyncio.Event()
    _stop_on_signals(stop)
    host = Host.serving(config)
    foxglove = attach_foxglove(host, config)
    notifier = _notifier()
    watchdog: asyncio.Task[None] | None = None
    async with host:
        if foxglove is not None:
            announce(foxglove, "run")
        gc.freeze()  # start-up objects live forever: keep them out of every collection
        _notify(notifier, SdNotifier.ready, "ready")
        _notify(notifier, lambda n: n.status(f"reading {host.service.config.path}"), "status")
        if notifier is not None:
            watchdog = asyncio.create_task(watchdog_loop(notifier), name="gizmo-watchdog")
        try:
            await host.wait(stop)
        finally:
            _notify(notifier, SdNotifier.stopping, "stopping")
            if watchdog is not None:
                watchdog.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watchdog
        LOGGER.info("stopping")


def _stop_on_signals(stop: asyncio.Event) -> None:
    """SIGINT/SIGTERM set ``stop``, and the process ends within a second whatever happens."""
    add_stop_handlers(asyncio.get_running_loop(), stop.set)
