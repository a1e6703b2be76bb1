"""Ctrl-C and SIGTERM end every command within a second, whatever its outputs are doing.

Why: ``gizmo-host rfly`` with its stdout piped into a reader that had stopped reading ignored
SIGINT for 11 minutes. Its event loop's thread was blocked in ``write(2)`` on the full pipe. A
signal interrupts that write; Python then runs the Python-level handler and retries the write
(PEP 475). asyncio's handlers (``loop.add_signal_handler``, and ``asyncio.run``'s own for
SIGINT) only queue work for the loop, whose thread is the one blocked, so the stop never ran.

Here the Python-level handler itself arms a deadline before asking the command to stop: a
``SIGALRM`` ``GRACE_S`` later, whose handler ends the process with ``os._exit(128 + signal)``
(the status a shell reports for a death by that signal). That handler runs inside a blocked
write for the same reason, and during the interpreter's final flush of stdout. A command that
stops in time never sees it: at exit the deadline is disarmed once stdout and stderr are
flushed (a flush blocked on a stalled pipe is still ended by it).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

GRACE_S = 1.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

Handler = Callable[[int, FrameType | None], object] | int | None


def arm_deadline(signum: int, grace_s: float = GRACE_S) -> None:
    """End the process with status ``128 + signum`` unless it has ended ``grace_s`` from now.

    A second signal keeps the first deadline: pressing Ctrl-C again never postpones the end.
    """
    if signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        return

    def expire(_alarm: int, _frame: FrameType | None) -> None:
        os._exit(128 + signum)

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, grace_s)
    atexit.register(_flush_then_disarm)


def _flush_then_disarm() -> None:
    """At exit, while ``expire`` is still installed, flush what the command printed, then
    disarm the deadline. CPython restores ``SIGALRM``'s default action after the exit hooks
    (``_PySignal_Fini``), so a deadline expiring after that killed the process by SIGALRM
    (status -14, a failure to systemd) instead of ``128 + signal``: seen when a busy machine
    stretched a demo's stop close to the grace period. A flush that blocks on a stalled pipe is
    still ended by the deadline here; once it is done nothing is left to block."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or broken stream: nothing to flush
            stream.flush()
    signal.setitimer(signal.ITIMER_REAL, 0)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _restore(previous: dict[int, Handler]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def install_interrupt_deadline() -> Callable[[], None]:
    """Ctrl-C arms the deadline, then raises ``KeyboardInterrupt`` as Python's default does.

    For the commands that keep Python's default (``rfly``, ``sim``, ``replay``...); SIGTERM's
    default already ends the process at once. Returns the function that restores the handler.
    """
    if not _in_main_thread():
        return lambda: None

    def interrupt(signum: int, frame: FrameType | None) -> None:
        arm_deadline(signum)
        signal.default_int_handler(signum, frame)

    previous: dict[int, Handler] = {signal.SIGINT: signal.signal(signal.SIGINT, interrupt)}
    return lambda: _restore(previous)


def add_stop_handlers(
    loop: asyncio.AbstractEventLoop, stop: Callable[[], object]
) -> Callable[[], None]:
    """SIGINT and SIGTERM call ``stop`` on ``loop`` and arm the deadline.

    Used instead of ``loop.add_signal_handler``, whose handler cannot run while the loop's
    thread is blocked. Outside the main thread (tests driving a command in a thread) it does
    nothing, as ``add_signal_handler`` cannot either. Returns the function that restores the
    previous handlers.
    """
    if not _in_main_thread():
        return lambda: None

    def handler(signum: int, _frame: FrameType | None) -> None:
        arm_deadline(signum)
        with contextlib.suppress(RuntimeError):  # the loop has closed: the deadline ends it
            loop.call_soon_threadsafe(stop)

    previous: dict[int, Handler] = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    return lambda: _restore(previous)
