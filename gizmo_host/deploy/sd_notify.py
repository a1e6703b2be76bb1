"""systemd readiness and watchdog notifications over ``$NOTIFY_SOCKET``, with the standard library.

The protocol is one datagram of newline-separated ``KEY=VALUE`` lines sent to the Unix socket
named by ``$NOTIFY_SOCKET`` (a path, or ``@name`` for the abstract namespace). No libsystemd
build is needed, and outside systemd :meth:`SdNotifier.from_environment` returns ``None`` so the
caller simply skips notifications.

The watchdog is pinged from a task on the asyncio event loop (:func:`watchdog_loop`), never from a
thread: if the loop blocks, the pings stop and systemd restarts the service, which is the point.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

from gizmo_host.timing import LoopScheduler, Scheduler

__all__ = ["SdNotifier", "watchdog_loop"]

_log = logging.getLogger(__name__)

_USEC_PER_S = 1_000_000
MIN_WATCHDOG_PING_S = 0.01


class SdNotifier:
    """Sends state changes to the service manager at ``address``.

    A fresh non-blocking socket is used per message, as libsystemd does: nothing to open or close,
    and a service manager that restarted is reached again on the next message. Sending never
    blocks the event loop; a full or vanished socket raises :class:`OSError`.
    """

    __slots__ = ("_address", "_watchdog_usec")

    def __init__(self, address: str | bytes, *, watchdog_usec: int | None = None) -> None:
        self._address = _socket_address(address)
        if watchdog_usec is not None and watchdog_usec <= 0:
            raise ValueError(f"watchdog_usec must be a positive integer, got {watchdog_usec!r}")
        self._watchdog_usec = watchdog_usec

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> SdNotifier | None:
        """The notifier systemd asked for, or ``None`` when not started with ``Type=notify``.

        ``WATCHDOG_USEC`` enables the watchdog; ``WATCHDOG_PID``, when set, must be this process
        (otherwise the watchdog belongs to another process, e.g. a wrapper, and stays disabled).
        Malformed values raise :class:`ValueError` naming the variable and the expected value.
        """
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        if not address:
            return None
        return cls(address, watchdog_usec=_watchdog_usec_from(env))

    @property
    def address(self) -> str | bytes:
        """The socket address as passed to ``sendto`` (abstract names start with a NUL byte)."""
        return self._address

    @property
    def watchdog_interval_s(self) -> float | None:
        """How often to ping: half of ``WATCHDOG_USEC`` as systemd recommends, but never more
        often than every ``MIN_WATCHDOG_PING_S`` (a tiny value must not spin the CPU; a
        watchdog that short would fire anyway); ``None`` if off."""
        if self._watchdog_usec is None:
            return None
        return max(self._watchdog_usec / _USEC_PER_S / 2, MIN_WATCHDOG_PING_S)

    def notify(self, *assignments: str) -> None:
        """Send ``KEY=VALUE`` assignments in one datagram."""
        for assignment in assignments:
            if "=" not in assignment or "\n" in assignment:
                raise ValueError(f"notification must be one KEY=VALUE line, got {assignment!r}")
        message = "\n".join(assignments).encode("utf-8")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.setblocking(False)
            sock.sendto(message, self._address)

    def ready(self, status: str | None = None) -> None:
        """Startup finished: systemd marks the unit active and starts units ordered after it."""
        self.notify("READY=1", *(() if status is None else (_status_line(status),)))

    def stopping(self) -> None:
        """Shutdown began, so a slow stop is not mistaken for a hang."""
        self.notify("STOPPING=1")

    def watchdog(self) -> None:
        """Keep-alive ping; missing it for ``WatchdogSec=`` makes systemd restart the service."""
        self.notify("WATCHDOG=1")

    def status(self, text: str) -> None:
        """Free-form one-line status shown by ``systemctl status``."""
        self.notify(_status_line(text))


async def watchdog_loop(notifier: SdNotifier | None, scheduler: Scheduler | None = None) -> None:
    """Ping the watchdog from the event loop until cancelled; returns at once if it is off.

    Run it as a task next to the real work. A blocked event loop stops the pings, so systemd
    detects a hung service, not just a dead one. A failed send is logged and retried at the next
    interval: the service manager decides what a missed ping means.
    """
    interval_s = None if notifier is None else notifier.watchdog_interval_s
    if notifier is None or interval_s is None:
        return
    scheduler = scheduler or LoopScheduler()
    while True:
        try:
            notifier.watchdog()
        except OSError as exc:
            _log.warning("watchdog ping to %r failed: %s", notifier.address, exc)
        await scheduler.sleep(interval_s)


def _socket_address(address: str | bytes) -> str | bytes:
    text = address.decode("utf-8", "surrogateescape") if isinstance(address, bytes) else address
    if text.startswith("@"):
        return b"\0" + text[1:].encode("utf-8", "surrogateescape")
    if text.startswith("/"):
        return text
    if text.startswith("\0"):
        return text.encode("utf-8", "surrogateescape")
    raise ValueError(
        f"NOTIFY_SOCKET must be an absolute path or an abstract name starting with '@', "
        f"got {text!r}"
    )


def _watchdog_usec_from(env: Mapping[str, str]) -> int | None:
    raw_usec = env.get("WATCHDOG_USEC", "")
    if not raw_usec:
        return None
    try:
        usec = int(raw_usec)
    except ValueError:
        usec = 0
    if usec <= 0:
        raise ValueError(
            f"WATCHDOG_USEC must be a positive integer (microseconds), got {raw_usec!r}"
        )
    raw_pid = env.get("WATCHDOG_PID", "")
    if raw_pid:
        try:
            pid = int(raw_pid)
        except ValueError:
            raise ValueError(f"WATCHDOG_PID must be a process id, got {raw_pid!r}") from None
        if pid != os.getpid():
            return None
    return usec


def _status_line(text: str) -> str:
    return "STATUS=" + " ".join(text.splitlines())
