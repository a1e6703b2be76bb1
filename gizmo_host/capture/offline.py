"""Offline replay: a capture's inputs through the host's own logic, on the recorded times.

Sans-I/O and deterministic: ``OfflineHost`` is the live service without its event loop. The
serial chunks go through the same ``StreamParser``, link state table (``stream.linkstate``) and
``FramePipeline``; the service's timers (the silence check, the stale-target timer, the verdict
re-publication, the stats period) become due times that run, in time order, before the input
that follows them. Host time is the recorded time throughout, so a result published while the
chunk that held it was read has ``host_published_ns == host_rx_ns``.

What it prints is what ``gizmo-host run`` prints for the same input (results, link events,
verdicts, stats), except the ``version`` line, and with one more ``stats`` line at the end that
also counts what replay saw (``replay``). Timer-driven lines may come earlier than live ones did:
live timers fire a little late, replay's exactly on time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from gizmo_host.capture.lines import encode_line
from gizmo_host.capture.reader import CaptureMessage, Datagram, HostLine, PortEvent, UartChunk
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
    """Feed it a capture's messages in order (``feed``), then ``finish``; both return lines."""

    def __init__(self, settings: HostSettings) -> None:
        self.settings = settings
        self.pipeline = settings.pipeline()
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
        if isinstance(message, HostLine):
            self.host_lines += 1  # the recorded output: replay recomputes it
            return []
        t = message[0]
        self._advance(t)
        if isinstance(message, UartChunk):
            self._chunk(message.data, t)
        elif isinstance(message, PortEvent):
            self._port_event(message.event, message.reason, t)
        elif isinstance(message, Datagram):
            self.datagrams += 1
        return self._take()

    def finish(self, end_ns: int | None = None) -> list[bytes]:
        """Run the timers up to ``end_ns`` (default: the last input), then one ``stats`` line."""
        if self._now_ns is None:
            return []
        end_ns = self._now_ns if end_ns is None else max(end_ns, self._now_ns)
        self._advance(end_ns)
        self._emit(self.stats(end_ns))
        return self._take()

    def replay(self, messages: Iterable[CaptureMessage]) -> Iterator[bytes]:
        """Every line for ``messages``, then ``finish``'s."""
        for message in messages:
            yield from self.feed(message)
        yield from self.finish()

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
        if pipeline.evaluation_due:
            self._evaluate(t)
            return
        refreshed, _ = pipeline.take_stale_move()
        if refreshed:
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
        self._emit(event.to_dict())
        if event.state is not _UP:  # UP waits for the results of its read (``_chunk``)
            self._evaluate(event.host_ns)

    # -- timers ----------------------------------------------------------------------------

    def _advance(self, t: int) -> None:
        """Run every timer due by ``t``, earliest first, each at its own due time."""
        if self._now_ns is None:
            self._now_ns = t
            self._tick_due_ns = t + self._tick_ns
            self._stats_due_ns = t + self._stats_ns if self._stats_ns > 0 else None
        if t < self._now_ns:
            self.time_reversals += 1  # file order is time order; apply it at its own time
            return
        while True:
            due = [
                (when, order)
                for order, when in enumerate(
                    (self._silence_due(), self._stale_due_ns, self._tick_due_ns, self._stats_due_ns)
                )
                if when is not None and when <= t
            ]
            if not due:
                break
            when, which = min(due)
            self._now_ns = when
            self._run_timer(which, when)
        self._now_ns = t

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
            self._evaluate(when)
        elif which == 2:
            self._tick_due_ns = when + self._tick_ns
            self._evaluate(when, force=True)
        else:
            self._stats_due_ns = when + self._stats_ns
            self._emit(self.stats(when))

    def _evaluate(self, now_ns: int, *, force: bool = False) -> None:
        for verdict in self.pipeline.evaluate(now_ns, force=force):
            self._emit(verdict.to_dict())
        self._arm_stale()

    def _arm_stale(self) -> None:
        stale_at_ns = self.pipeline.stale_at_ns()
        self._stale_due_ns = None if stale_at_ns is None else stale_at_ns + STALE_MARGIN_NS

    # -- output ----------------------------------------------------------------------------

    def stats(self, now_ns: int) -> dict[str, Any]:
        """The live service's ``stats`` message, plus what replay counted (``replay``)."""
        p = self._parser.stats
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
            "replay": {
                "datagrams": self.datagrams,
                "host_lines": self.host_lines,
                "port_events_ignored": self.port_events_ignored,
                "implied_opens": self.implied_opens,
                "time_reversals": self.time_reversals,
            },
        }

    def _emit(self, obj: dict[str, Any]) -> None:
        self._out.append(encode_line(obj))

    def _take(self) -> list[bytes]:
        out, self._out = self._out, []
        return out
