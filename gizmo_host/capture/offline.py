"""Offline replay: a capture's inputs through the host's own logic, on the recorded times.

Sans-I/O and deterministic: ``OfflineHost`` is the live service without its event loop. The
serial chunks go through the same ``StreamParser``, link state table (``stream.linkstate``) and
``FramePipeline``; the service's timers (the silence check, the stale-target timer, the verdict
re-publication, the stats period) become due times that run, in time order, before the input
that follows them. Host time is the recorded time throughout, so a result published while the
chunk that held it was read has ``host_published_ns == host_rx_ns``.

What it prints is what ``gizmo-host run`` prints for the same input (results, link events,
verdicts, stats), except the ``version`` line, and with one more ``stats`` line at the end that
also counts what replay saw (``replay``). Timer-driven lines (the periodic verdict and stats,
a verdict at a target's stale time) may come at other times and in another number: live timers
fire a little late, replay's exactly on time, and the periodic ones count from the first
recorded input rather than from the service's start. The UP transition carries the receive
time of the chunk that held the first frame; the live link stamps it microseconds later.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from gizmo_host.capture.lines import HostMessage, encode_line
from gizmo_host.capture.reader import CaptureMessage, HostLine, PortEvent, UartChunk
from gizmo_host.capture.settings import HostSettings
from gizmo_host.errors import IllegalTransition
from gizmo_host.stream.events import LinkEvent, LinkState
from gizmo_host.stream.linkstate import (
    REASON_FRAME,
    REASON_OPENED,
    LinkInput,
    LinkStateMachine,
    silence_reason,
)
from gizmo_host.wire.parser import StreamParser

STALE_MARGIN_NS = 1_000_000  # the service re-evaluates this long after a target goes stale
REASON_IMPLIED_OPEN = "capture: bytes before any recorded open"
_UP, _SYNCING = LinkState.UP, LinkState.SYNCING


class OfflineHost:
    """Feed it a capture's messages in order (``feed``), then ``finish``; both return lines.

    ``listener`` gets every result, link event and verdict as the live service's listeners
    do (a world model, in ``gizmo_host.cli.capture_world``); ``extra_stats`` adds to each
    ``stats`` line. A composition that has timers of its own interleaves them with these
    through ``next_due_ns``, ``run_due`` and ``apply``, and prints through ``emit_line``.
    """

    def __init__(
        self,
        settings: HostSettings,
        *,
        listener: Callable[[HostMessage], None] | None = None,
        extra_stats: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.settings = settings
        self.pipeline = settings.pipeline()
        self._listener = listener
        self._extra_stats = extra_stats
        self._parser = StreamParser()
        self._machine = LinkStateMachine(settings.serial_path)
        self._silent_ns = round(settings.silent_after_s * 1e9)
        self._tick_ns = round(settings.verdict_interval_s * 1e9)
        self._stats_ns = round(settings.stats_interval_s * 1e9)
        self._now_ns: int | None = None  # None until the first input
        self._last_frame_ns = 0
        self._port_open = False
        self._stale_due_ns: int | None = None
        self._tick_due_ns: int | None = None
        self._stats_due_ns: int | None = None
        self._out: list[bytes] = []
        self.open_attempts = self.open_failures = self.disconnects = 0
        # What replay saw besides the serial port, and inputs it could not apply (counted).
        self.datagrams = self.host_lines = 0
        self.port_events_ignored = self.implied_opens = self.time_reversals = 0

    # -- inputs ----------------------------------------------------------------------------

    def feed(self, message: CaptureMessage) -> list[bytes]:
        """Apply one captured message; the JSON lines the host printed because of it (and of
        every timer due up to its time)."""
        if not isinstance(message, HostLine):
            self.advance(message[0])
        self.apply(message)
        return self.take()

    def apply(self, message: CaptureMessage) -> None:
        """Apply one message at its own time, the timers due before it having run."""
        if isinstance(message, HostLine):
            self.host_lines += 1  # the recorded output: replay recomputes it
        elif isinstance(message, UartChunk):
            self._chunk(message.data, message.rx_ns)
        elif isinstance(message, PortEvent):
            self._port_event(message.event, message.reason, message.host_ns)
        else:
            self.datagrams += 1  # a world model, if any, takes it (``cli.capture_world``)

    def finish(self, end_ns: int | None = None) -> list[bytes]:
        """Run the timers up to ``end_ns`` (default: the last input), then one ``stats`` line."""
        if self._now_ns is None:
            return []
        end_ns = self._now_ns if end_ns is None else max(end_ns, self._now_ns)
        self.advance(end_ns)
        self.emit(self.stats(end_ns))
        return self.take()

    def replay(self, messages: Iterable[CaptureMessage]) -> Iterator[bytes]:
        """Every line for ``messages``, then ``finish``'s."""
        for message in messages:
            yield from self.feed(message)
        yield from self.finish()

    @property
    def now_ns(self) -> int | None:
        """The latest time applied (None before the first input)."""
        return self._now_ns

    # -- the link --------------------------------------------------------------------------

    def _chunk(self, data: bytes, t: int) -> None:
        if not self._port_open:  # a capture without port events: the port was open
            self.implied_opens += 1
            if self._machine.state is LinkState.DOWN:
                self._port_event(LinkInput.OPEN_STARTED, REASON_IMPLIED_OPEN, t)
            self._port_event(LinkInput.OPENED, REASON_OPENED, t)
        results = self._parser.feed(data)
        if not results:
            return
        self._last_frame_ns = t
        if self._machine.state is not _UP:
            self._link_input(LinkInput.FRAME, REASON_FRAME, t)
        pipeline = self.pipeline
        for received in pipeline.apply(results, t):
            self._out.append(received.to_json_line(t))
            self._dispatch(received)
        if pipeline.evaluation_due:
            self._evaluate(t, force=pipeline.renewal_due(t))
            return
        refreshed, earlier = pipeline.take_stale_move()
        if refreshed and (earlier or pipeline.renewal_due(t)):
            self._evaluate(t, force=True)  # the live service renews a published PROCEED
        elif refreshed:
            self._arm_stale()

    def _port_event(self, event: LinkInput, reason: str, t: int) -> None:
        if not self._link_input(event, reason, t, ignore_illegal=True):
            return
        if event is LinkInput.OPEN_STARTED:
            self.open_attempts += 1
        elif event is LinkInput.OPEN_FAILED:
            self.open_failures += 1
        elif event is LinkInput.OPENED:
            self._parser.reset()  # a partial frame from the previous connection never completes
            self._last_frame_ns = t
            self._port_open = True
        elif event is LinkInput.LOST or event is LinkInput.STOPPED:
            self.disconnects += event is LinkInput.LOST
            self._port_open = False

    def _link_input(
        self, link_input: LinkInput, reason: str, t: int, *, ignore_illegal: bool = False
    ) -> bool:
        """Feed the state table; False for an input it does not allow now (counted)."""
        try:
            event = self._machine.feed(link_input, reason, t)
        except IllegalTransition:
            if not ignore_illegal:
                raise
            self.port_events_ignored += 1
            return False
        if event is not None:
            self._link_changed(event)
        return True

    def _link_changed(self, event: LinkEvent) -> None:
        self.pipeline.link_changed(event)
        self.emit(event.to_dict())
        self._dispatch(event)
        if event.state is not _UP:  # UP waits for the results of its read (``_chunk``)
            self._evaluate(event.host_ns)

    # -- timers ----------------------------------------------------------------------------

    def advance(self, t: int) -> None:
        """Run every timer due by ``t``, earliest first, each at its own due time."""
        self.start(t)
        if t < self._now_ns_or(t):
            self.time_reversals += 1  # file order is time order; apply it at its own time
            return
        while True:
            due = self.next_due_ns()
            if due is None or due > t:
                break
            self.run_due(due)
        self._now_ns = t

    def start(self, t: int) -> None:
        """The clock starts at the first input: the periodic timers count from there."""
        if self._now_ns is None:
            self._now_ns = t
            self._tick_due_ns = t + self._tick_ns
            self._stats_due_ns = t + self._stats_ns if self._stats_ns > 0 else None

    def _now_ns_or(self, t: int) -> int:
        return t if self._now_ns is None else self._now_ns

    def _timers(self) -> tuple[int | None, ...]:
        return (self._silence_due(), self._stale_due_ns, self._tick_due_ns, self._stats_due_ns)

    def next_due_ns(self) -> int | None:
        """When the earliest timer is due (None: none armed)."""
        return min((when for when in self._timers() if when is not None), default=None)

    def run_due(self, when: int) -> None:
        """Run the first timer due at ``when`` (``next_due_ns``), at that time."""
        which = next(i for i, due in enumerate(self._timers()) if due == when)
        self._now_ns = max(when, self._now_ns_or(when))
        self._run_timer(which, when)

    def _silence_due(self) -> int | None:
        state = self._machine.state
        if self._port_open and (state is _UP or state is _SYNCING):
            return self._last_frame_ns + self._silent_ns
        return None

    def _run_timer(self, which: int, when: int) -> None:
        if which == 0:
            self._link_input(LinkInput.SILENCE, silence_reason(self.settings.silent_after_s), when)
        elif which == 1:
            self._stale_due_ns = None
            self._evaluate(when, force=self.pipeline.renewal_due(when))
        elif which == 2:
            self._tick_due_ns = when + self._tick_ns
            self._evaluate(when, force=True)
        else:
            self._stats_due_ns = when + self._stats_ns
            self.emit(self.stats(when))

    def _evaluate(self, now_ns: int, *, force: bool = False) -> None:
        for verdict in self.pipeline.evaluate(now_ns, force=force, hold_until_ns=self._tick_due_ns):
            self.emit(verdict.to_dict())
            self._dispatch(verdict)
        self._arm_stale()

    def _arm_stale(self) -> None:
        stale_at_ns = self.pipeline.stale_at_ns()
        self._stale_due_ns = None if stale_at_ns is None else stale_at_ns + STALE_MARGIN_NS

    # -- output ----------------------------------------------------------------------------

    def stats(self, now_ns: int) -> dict[str, Any]:
        """The live service's ``stats`` message, plus what replay counted (``replay``)."""
        p = self._parser.stats
        extra = {} if self._extra_stats is None else self._extra_stats()
        return {
            "type": "stats",
            "host_ns": now_ns,
            "link": {
                "state": self._machine.state.value,
                "transitions": self._machine.transitions,
                "open_attempts": self.open_attempts,
                "open_failures": self.open_failures,
                "disconnects": self.disconnects,
                "bytes_in": p.bytes_in,
                "frames_ok": p.frames_ok,
                "crc_errors": p.crc_errors,
                "header_errors": p.header_errors,
                "bytes_discarded": p.bytes_discarded,
                "callback_errors": 0,
            },
            **self.pipeline.stats(),
            "listener_errors": 0,
            "subscriber_drops": 0,
            **extra,
            "replay": {
                "datagrams": self.datagrams,
                "host_lines": self.host_lines,
                "port_events_ignored": self.port_events_ignored,
                "implied_opens": self.implied_opens,
                "time_reversals": self.time_reversals,
            },
        }

    def _dispatch(self, message: HostMessage) -> None:
        if self._listener is not None:
            self._listener(message)

    def emit(self, obj: dict[str, Any]) -> None:
        self._out.append(encode_line(obj))

    def emit_line(self, line: bytes) -> None:
        """A line of the composition's own (a ``world`` snapshot), in time order."""
        self._out.append(line)

    def take(self) -> list[bytes]:
        """The lines emitted since the last call."""
        out, self._out = self._out, []
        return out
