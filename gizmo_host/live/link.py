"""The live serial link: serialx transport, reconnect loop and link state machine.

``SerialLink.run()`` owns one path (typically a udev symlink such as ``/dev/gizmo0``) for as long
as it runs: it opens it, feeds what it reads to a ``StreamParser``, and reopens it after a read
error, an EOF or a hang-up (a pty master closing, a USB adapter unplugged), or when the device is
missing at start. It waits by the ``Backoff`` from ``backoff_min_s`` to ``backoff_max_s`` (the
count of failures in a row resets once a connection reaches UP) and retries forever, never
spinning. Every state transition (DOWN -> CONNECTING -> SYNCING -> UP ->
SILENT and back) is counted, logged and handed to ``on_event`` with host time and reason.

The port itself (serialx's open and close, the protocol that reports a connection's end) is
:mod:`gizmo_host.live.serial_port`.

On a tty the link reads the descriptor itself (serialx's transport is paused once open): one
``os.read`` per wake-up and nothing else between the event loop and the parser, and a read that
holds several frames is one chunk: parsed in one pass, applied, published once. Wake-ups are
few. On ptys and on-board UARTs the tty's VMIN is the number of bytes the current frame still
lacks, so the loop wakes when a frame can be complete, not for every few bytes the UART driver
delivers, and a read takes that frame and leaves the next one's head in the kernel, where it
counts towards VMIN; when frames arrive faster than the loop wakes (a saturated fast line, a
backlog after a stall) each read takes every whole frame queued (``FrameReads``). USB adapters
batch bytes themselves and get plain reads of up to ``TTY_READ_SIZE``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from gizmo_core import LinkState
from gizmo_host.errors import IllegalTransition
from gizmo_host.live.link_config import LinkConfig
from gizmo_host.live.serial_port import (
    OpenFunction,
    ReaderProtocol,
    close_port,
    describe_loss,
    open_serial,
    serial_error,
)
from gizmo_host.live.subscription import FailureCounter
from gizmo_host.live.tty_reads import FrameReads, tty_descriptor
from gizmo_host.stream.events import LinkEvent
from gizmo_host.stream.linkstate import (
    REASON_FRAME,
    REASON_OPENED,
    REASON_STOPPED,
    TRANSITIONS,
    LinkInput,
    LinkStateMachine,
    silence_reason,
)
from gizmo_host.timing import Backoff, LoopScheduler, Scheduler, Timer
from gizmo_host.wire.parser import StreamParser
from gizmo_host.wire.protocol import FRAME_LEN, VisionResult

LOGGER = logging.getLogger(__name__)

ResultsCallback = Callable[[list[VisionResult], int], None]
BytesCallback = Callable[[bytes, int], None]
EventCallback = Callable[[LinkEvent], None]
TTY_READ_SIZE = 4096  # the most the tty layer (n_tty) returns from one read
_TIMER_SLACK_NS = 1_000_000  # a timer due within this is due now (loop and clock rounding)
_UP = LinkState.UP


class LinkStats(NamedTuple):
    state: str
    transitions: int
    open_attempts: int
    open_failures: int
    disconnects: int
    bytes_in: int
    frames_ok: int
    crc_errors: int
    header_errors: int
    bytes_discarded: int
    callback_errors: int  # consumer callbacks that raised; the link went on reading


class SerialLink:
    """One serial path, reopened forever. Constructing it starts nothing; ``run()`` does."""

    def __init__(
        self,
        config: LinkConfig | str,
        *,
        on_results: ResultsCallback,
        on_event: EventCallback | None = None,
        coalesce_reads: bool = True,
        clock: Callable[[], int] = time.monotonic_ns,
        scheduler: Scheduler | None = None,
        open_connection: OpenFunction | None = None,
        explain_open_error: Callable[[str, OSError], str] | None = None,
        on_bytes: BytesCallback | None = None,
    ) -> None:
        """``scheduler`` (default: the loop's timers on ``clock``) runs the backoff and the
        silence check; ``explain_open_error`` turns a failed open into one line (the CLI
        injects the deployment diagnostics); ``on_bytes`` gets every chunk read with the host
        time its results carry, before they are parsed (a recorder's tap). ``config``: the
        path and its settings (a bare path takes the defaults)."""
        config = LinkConfig(config) if isinstance(config, str) else config
        path, baudrate, silent_after_s = config.path, config.baudrate, config.silent_after_s
        if baudrate <= 0:
            raise ValueError(f"baudrate: expected a positive integer, got {baudrate!r}")
        self._backoff = Backoff(config.backoff_min_s, config.backoff_max_s)
        if silent_after_s <= 0:
            raise ValueError(f"silent_after_s: expected > 0, got {silent_after_s!r}")
        self.path = path
        self.baudrate = baudrate
        self._on_results = on_results
        self._on_event = on_event
        self._on_bytes = on_bytes
        self._silent_after_s = silent_after_s
        self._silent_ns = round(silent_after_s * 1e9)
        self._coalesce = coalesce_reads
        self._scheduler = scheduler or LoopScheduler(clock)
        self._clock = self._scheduler.now_ns
        self._open = open_connection or open_serial
        self._explain = explain_open_error
        self._parser = StreamParser()
        self._machine = LinkStateMachine(path)
        self._open_attempts = self._open_failures = self._disconnects = 0
        self._callback_errors = FailureCounter(LOGGER)
        self._last_frame_ns = 0
        self._reached_up = False
        self._wakeup: FrameReads | None = None
        # Frame-aligned reads: one frame a read, or every whole frame queued (``_batching``)
        # once reads come faster than half a frame's time on the wire.
        self._batching = False
        self._last_read_ns = 0
        self._batch_gap_ns = FRAME_LEN * 10 * 1_000_000_000 // baudrate // 2
        self._fd = -1  # the tty descriptor read directly, -1 when the transport reads
        self._lost: asyncio.Future[BaseException | None] | None = None
        self._silent_check: Timer | None = None

    @property
    def state(self) -> LinkState:
        return self._machine.state

    def stats(self) -> LinkStats:
        p = self._parser.stats
        return LinkStats(
            self._machine.state.value,
            self._machine.transitions,
            self._open_attempts,
            self._open_failures,
            self._disconnects,
            p.bytes_in,
            p.frames_ok,
            p.crc_errors,
            p.header_errors,
            p.bytes_discarded,
            self._callback_errors.count,
        )

    async def run(self) -> None:
        """Open, read and reopen until cancelled; the port is closed on the way out."""
        loop = asyncio.get_running_loop()
        failures = 0  # in a row: opens that failed, connections that never reached UP
        try:
            while True:
                self._open_attempts += 1
                attempt = f"opening at {self.baudrate} baud, attempt {self._open_attempts}"
                self._feed(LinkInput.OPEN_STARTED, attempt)
                lost: asyncio.Future[BaseException | None] = loop.create_future()
                protocol = ReaderProtocol(self._data_received, lost)
                try:
                    transport = await self._opened(loop, protocol)
                except (OSError, serial_error()) as exc:
                    self._open_failures += 1
                    # The explanation may scan /proc: keep it off the event loop.
                    reason = await loop.run_in_executor(None, self._explain_failure, exc)
                    self._feed(LinkInput.OPEN_FAILED, reason)
                    failures += 1
                else:
                    failures = 0 if await self._serve(transport, protocol) else failures + 1
                await self._scheduler.sleep(self._backoff.delay_s(failures))
        finally:
            self._feed(LinkInput.STOPPED, REASON_STOPPED)

    async def _opened(self, loop: asyncio.AbstractEventLoop, protocol: ReaderProtocol) -> Any:
        """The port opened for ``protocol``, unless a stop came (Python 3.11+): serialx's open,
        cancelled as its open(2) fails, may raise that failure instead, or open."""
        try:
            transport, _ = await self._open(
                loop, lambda: protocol, self.path, baudrate=self.baudrate, exclusive=True,
                low_latency=True,
            )  # fmt: skip
        except (OSError, serial_error()):
            if _stopping():
                raise asyncio.CancelledError from None
            raise
        if _stopping():
            transport.close()
            raise asyncio.CancelledError
        return transport

    async def _serve(self, transport: Any, protocol: ReaderProtocol) -> bool:
        """Read until the connection ends; returns whether it ever reached UP."""
        loop = asyncio.get_running_loop()
        self._parser.reset()  # a partial frame from the previous connection will never complete
        self._reached_up = False
        try:  # everything set up here is undone below, whatever fails or is cancelled
            self._read_directly(loop, transport, protocol.lost)
            self._last_frame_ns = now_ns = self._clock()
            self._feed(LinkInput.OPENED, REASON_OPENED)
            check_ns = now_ns + self._silent_ns
            self._silent_check = self._scheduler.call_at_ns(check_ns, self._check_silent)
            exc = await protocol.lost
            self._disconnects += 1
            self._feed(LinkInput.LOST, f"disconnected: {describe_loss(exc)}")
            return self._reached_up
        finally:
            if self._silent_check is not None:
                self._silent_check.cancel()
                self._silent_check = None
            if self._fd >= 0:
                loop.remove_reader(self._fd)  # before the transport closes the descriptor
                self._fd = -1
                self._lost = None
            if self._wakeup is not None:
                self._wakeup.restore()  # the next program to open the port gets its old VMIN
            self._wakeup = None
            await close_port(transport, self.path)

    def _read_directly(
        self, loop: asyncio.AbstractEventLoop, transport: Any, lost: asyncio.Future[Any]
    ) -> None:
        """Read a tty's descriptor here (``_read_ready``) rather than through the transport,
        with frame-aligned wake-ups where they apply; other transports read for themselves."""
        fd = tty_descriptor(transport)
        if fd < 0:
            return
        try:
            transport.pause_reading()
        except NotImplementedError:
            return
        self._fd, self._lost = fd, lost
        self._batching, self._last_read_ns = False, 0
        loop.add_reader(fd, self._read_ready)
        self._wakeup = FrameReads.for_descriptor(fd) if self._coalesce else None
        if self._wakeup is not None:
            self._wakeup.expect(FRAME_LEN)

    def _read_ready(self) -> None:
        """The tty is readable: read it (the per-wake-up path, with ``_data_received``).

        With frame-aligned wake-ups a read ends on a frame boundary: the frame VMIN waited
        for, or, while frames queue up faster than the loop wakes, every whole frame queued
        (one ``FIONREAD``; back to one frame a read once the queue holds no more than one).

        End of file (a hung-up tty: a pty whose master closed, an unplugged USB adapter) or a
        read error ends the connection, as it would through the transport."""
        wakeup = self._wakeup
        size = TTY_READ_SIZE
        if wakeup is not None:
            size = FRAME_LEN - self._parser.buffered
            if self._clock() - self._last_read_ns < self._batch_gap_ns:
                self._batching = True  # woken again at once: frames are waiting for us
            if self._batching:
                queued = wakeup.queued()
                if queued >= size + FRAME_LEN:
                    size = min(size + (queued - size) // FRAME_LEN * FRAME_LEN, TTY_READ_SIZE)
                else:
                    self._batching = False  # caught up
        try:
            data = os.read(self._fd, size)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._end_reads(exc)
            return
        if not data:
            self._end_reads(OSError(errno.EIO, "end of file: the tty hung up"))
            return
        self._last_read_ns = now_ns = self._clock()
        self._data_received(data, now_ns)

    def _end_reads(self, exc: OSError) -> None:
        asyncio.get_running_loop().remove_reader(self._fd)  # a hung-up tty stays readable
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(exc)

    def _check_silent(self) -> None:
        """A timer, re-armed for when the link would be silent: one wake-up per
        ``silent_after_s`` while frames flow, none per frame."""
        now_ns = self._clock()
        remaining_ns = self._last_frame_ns + self._silent_ns - now_ns
        if remaining_ns <= _TIMER_SLACK_NS:
            self._feed(LinkInput.SILENCE, silence_reason(self._silent_after_s))
            remaining_ns = self._silent_ns
        self._silent_check = self._scheduler.call_at_ns(now_ns + remaining_ns, self._check_silent)

    def _data_received(self, data: bytes, now_ns: int | None = None) -> None:
        """The per-read path (the transport calls it directly); ``now_ns``: when it was read
        (default: now)."""
        if now_ns is None:
            now_ns = self._clock()
        if self._on_bytes is not None:
            try:
                self._on_bytes(data, now_ns)
            except Exception:
                self._callback_failed("on_bytes")
        parser = self._parser
        results = parser.feed(data)
        wakeup = self._wakeup
        if wakeup is not None:
            # Before the results go out: publishing wakes consumers, which may take this CPU.
            missing = FRAME_LEN - parser.buffered
            if missing != wakeup.vmin:  # also retries a VMIN change that failed
                wakeup.expect(missing)
        if results:
            self._last_frame_ns = now_ns
            if self._machine.state is not _UP:
                self._reached_up = True
                self._feed(LinkInput.FRAME, REASON_FRAME)
            try:
                self._on_results(results, now_ns)
            except Exception:
                self._callback_failed("on_results")

    # -- offline replay: a recorded port drives the same state, parser and silence timer ----

    def replay_input(self, link_input: LinkInput, reason: str) -> None:
        """A recorded port event, at the scheduler's time, as ``run`` would feed it (an input
        the state table does not allow now raises ``IllegalTransition``, changing nothing)."""
        state = self._machine.state
        if link_input not in TRANSITIONS[state]:
            raise IllegalTransition(state.value, link_input.value)
        if link_input is LinkInput.OPEN_STARTED:
            self._open_attempts += 1
        elif link_input is LinkInput.OPEN_FAILED:
            self._open_failures += 1
        elif link_input is LinkInput.OPENED:
            self._parser.reset()
            self._reached_up = False
            self._last_frame_ns = now_ns = self._clock()
            self._feed(link_input, reason)
            check_ns = now_ns + self._silent_ns
            self._silent_check = self._scheduler.call_at_ns(check_ns, self._check_silent)
            return
        elif link_input is LinkInput.LOST or link_input is LinkInput.STOPPED:
            self._disconnects += link_input is LinkInput.LOST
            if self._silent_check is not None:
                self._silent_check.cancel()
                self._silent_check = None
        self._feed(link_input, reason)

    # A recorded read, at the scheduler's time: the per-read path itself.
    replay_chunk = _data_received

    def _explain_failure(self, exc: BaseException) -> str:
        """One line for a failed open: the injected explanation, or the error itself."""
        if self._explain is not None and isinstance(exc, OSError):
            try:
                return self._explain(self.path, exc)
            except Exception:  # an explanation must never break the reconnect loop
                LOGGER.debug("explaining %s failed", self.path, exc_info=True)
        return f"{self.path}: {exc}"

    def _feed(self, link_input: LinkInput, reason: str) -> None:
        event = self._machine.feed(link_input, reason, self._clock())
        if event is None:
            return
        LOGGER.info("%s: %s -> %s (%s)", self.path, event.previous.value, event.state.value, reason)
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception:
                self._callback_failed("on_event")

    def _callback_failed(self, name: str) -> None:
        """A consumer's bug must not stop the reader: counted and logged, never raised."""
        self._callback_errors.failed("%s: %s callback", self.path, name)


def _stopping() -> bool:
    cancelling = getattr(asyncio.current_task(), "cancelling", None)  # Python 3.11+
    return cancelling is not None and cancelling() > 0
