"""Offline replay: a capture's inputs through the live ``Host`` on a manual clock.

Deterministic and without an event loop: the ``Host`` that ``gizmo-host run`` builds runs on a
``ManualScheduler`` that moves only to each recorded time, and its link task is not started.
Instead the recorded port events and serial chunks go into the link's own replay entry points
(``SerialLink.replay_input`` / ``replay_chunk``), so the parser, the link state table and the
silence timer, the service's stale and verdict timers, the world model's timers, the stats
period and the JSON Lines publisher are the code that runs live. Every timer due before an
input runs, in time order, at its own due time; host time is the recorded time throughout, so
a result published while the chunk that held it was read has ``host_published_ns ==
host_rx_ns``.

What it prints is what ``gizmo-host run`` prints for the same input (results, link events,
verdicts, world snapshots, stats), except the ``version`` line, and with one more ``stats``
line at the end that also counts what replay saw (``replay``). Timer-driven lines may come at
other times and in another number than live: live timers fire a little late, replay's exactly
on time, and the periodic ones count from the first recorded input.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterable, Iterator
from typing import Any, Final

from gizmo_core import ConfigError, LinkState, Selector
from gizmo_host.app.capture_world import world_setup_from
from gizmo_host.app.host import Host
from gizmo_host.app.host_config import HostConfig, config_from_mapping
from gizmo_host.app.world_build import build_world
from gizmo_host.capture.carried_settings import HostSettings
from gizmo_host.capture.channels import MAX_GAP_NS
from gizmo_host.capture.reader import CaptureInfo, CaptureMessage, Datagram, HostLine, UartChunk
from gizmo_host.errors import CaptureError, IllegalTransition
from gizmo_host.live import lifecycle
from gizmo_host.stream.linkstate import REASON_OPENED, LinkInput
from gizmo_host.timing import (
    ManualScheduler,
    RecordedWallClock,
    WallClock,
    advance_together,
    no_wall_clock,
)

REASON_IMPLIED_OPEN: Final = "capture: bytes before any recorded open"


def host_config(settings: HostSettings) -> HostConfig:
    """The host settings a capture carries, as the ``HostConfig`` the live host had."""
    delay_ns = settings.transport_delay_ns
    return config_from_mapping(
        {
            "serial": {
                "path": settings.serial_path,
                "baudrate": settings.baudrate,
                "silent_after_s": settings.silent_after_s,
                **({} if delay_ns is None else {"transport_delay_ms": delay_ns / 1e6}),
            },
            "clock": {
                "max_skew_ppm": settings.max_skew_ppm,
                "phase_error_threshold_ms": settings.phase_error_threshold_ms,
                "lock_after_ms": settings.lock_after_ms,
            },
            "store": {
                "ttl_ms": settings.ttl_ms,
                "reset_hold_ms": settings.reset_hold_ms,
                "ttl_ms_by_type": {str(k): v for k, v in settings.ttl_ms_by_type},
            },
            "verdict": {
                "select": selector_text(settings.selector),
                "interval_s": settings.verdict_interval_s,
            },
            "publish": {"stdout": False, "stats_interval_s": settings.stats_interval_s},
        }
    )


def selector_text(selector: Selector) -> str:
    """``selector`` as ``verdict.select`` writes it."""
    parts = [
        f"{name}={value}"
        for name, value in (
            ("source", selector.source_id),
            ("type", selector.result_type),
            ("id", selector.id),
        )
        if value is not None
    ]
    return ",".join(parts) or "any"


def recorded_wall_clock(capture: dict[str, str]) -> WallClock:
    """The wall clock a capture recorded (its one offset), so a replay's ``wall_ns`` is the
    same every time; none (``wall_ns`` null) if it recorded none or an unreadable one."""
    try:
        return RecordedWallClock(
            int(capture["monotonic_ns_at_start"]), int(capture["wall_clock_ns_at_start"])
        )
    except (KeyError, ValueError):
        return no_wall_clock


class _Lines:
    """The replay's output: the lines the host's publisher wrote, taken in order."""

    name = ""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def send(self, line: bytes) -> None:
        self.lines.append(line)

    def send_lines(self, lines: list[bytes]) -> None:
        self.lines += lines

    def start(self) -> Coroutine[Any, Any, None]:  # compiled: no ``async def`` (lifecycle)
        return lifecycle.nothing()

    def close(self) -> Coroutine[Any, Any, None]:
        return lifecycle.nothing()

    def stats(self) -> dict[str, int]:
        return {}  # not reported: an offline replay has no outputs of its own


# And the time between inputs beyond this much each, added up: many gaps each under a day
# would run the timers as long (red team rt24: a 2.3 KB file of 23.9 h gaps printed 24 MB a
# gap, 30 bytes each; rt59: a 26 KB file of gaps of a second each, uncounted, replayed 1.4 h
# of timers at 100 lines a second). A board at 30 results/s leaves 33 ms between them.
QUIET_NS: Final = 50_000_000


class OfflineReplay:
    """A capture through the live host (and its world model, when it ran one):
    ``replay(messages)``, or ``feed`` each message then ``finish``."""

    def __init__(self, info: CaptureInfo, where: str = "capture") -> None:
        self._where = where
        self.scheduler = ManualScheduler(0)
        # The world's timers on a clock of their own, so that at equal times they run before
        # the host's (they were armed earlier, as on the live loop); both move together.
        self.world_scheduler = ManualScheduler(0)
        world = router = None
        if info.world is not None:
            setup = world_setup_from(info.world, f"{where}: gizmo-host.world")
            try:
                world, router = build_world(
                    setup,
                    self.world_scheduler,
                    receivers=False,
                    requests=False,
                    wall_clock=recorded_wall_clock(info.capture),
                )
            except ValueError as exc:  # a value the record's own checks let by (copter_id 0)
                raise CaptureError(f"{where}: gizmo-host.world: {exc}") from None
        try:
            config = host_config(info.settings)
        except ConfigError as exc:
            raise CaptureError(f"{where}: gizmo-host.settings: {exc}") from None
        self.host = Host.replaying(config, self.scheduler, world, router)
        self._out = _Lines()
        self.host.add_output(self._out)
        self.host.add_stats(self._stats)
        self.link = self.host.service.link
        self._started = self._port_open = False
        self._quiet_ns = 0  # the gaps' time beyond ``QUIET_NS`` each so far, added up
        # What replay saw besides the serial port, and inputs it could not apply (counted).
        self.datagrams = self.host_lines = 0
        self.port_events_ignored = self.implied_opens = self.time_reversals = 0

    def replay(self, messages: Iterable[CaptureMessage]) -> Iterator[bytes]:
        """Every line for ``messages``, then the final ``stats`` line.

        A serial chunk on an open port, not earlier than the last input nor a damaged time
        after it (nearly every input of a capture), takes ``feed``'s path written out here:
        the timers due by its time, the chunk, the lines. Anything else goes through ``feed``.
        """
        feed, out, host, world = self.feed, self._out, self.scheduler, self.world_scheduler
        replay_chunk = self.link.replay_chunk
        for message in messages:
            if type(message) is UartChunk and self._port_open:  # the port open: started too
                t_ns = message[0]
                now_ns = host._now_ns
                if now_ns <= t_ns and t_ns - now_ns <= QUIET_NS:
                    advance_together(world, host, t_ns)
                    replay_chunk(message[1])
                    lines = out.lines
                    if lines:
                        out.lines = []
                        yield from lines
                    continue
            yield from feed(message)
        yield from self.finish()

    def feed(self, message: CaptureMessage) -> list[bytes]:
        """Apply one captured message at its time, the timers due before it having run; the
        lines the host printed because of them."""
        if isinstance(message, HostLine):
            self.host_lines += 1  # the recorded output: replay recomputes it
            return []
        self._advance(message[0])
        if isinstance(message, UartChunk):
            if self._port_open:  # most inputs: ``_chunk``'s usual case
                self.link.replay_chunk(message.data)
            else:
                self._chunk(message.data)
        elif isinstance(message, Datagram):
            self.datagrams += 1
            self.host.datagram(message.port, message.sender, message.data, message.rx_ns)
        else:
            self._port_event(message.event, message.reason)
        return self._take()

    def finish(self) -> list[bytes]:
        """One last ``stats`` line, at the last input's time."""
        if not self._started:
            return []
        self._advance(self.scheduler.now_ns())  # what the last input armed for its own time
        self.host.publish(self.host.stats())
        return self._take()

    # -- inputs ----------------------------------------------------------------------------

    def _advance(self, t_ns: int) -> None:
        """Every timer due by ``t_ns``, in time order, each at its own time (the world's first
        at equal times)."""
        host, world = self.scheduler, self.world_scheduler
        if not self._started:  # the clocks start at the first input, as the host did
            host.advance(t_ns - host.now_ns())
            world.advance(t_ns - world.now_ns())
            _run_now(self.host.start())
            self._started = True
        now_ns = host.now_ns()
        if t_ns < now_ns:
            self.time_reversals += 1  # file order is time order: applied at the latest time
            return
        gap_ns = t_ns - now_ns
        if gap_ns > QUIET_NS:
            self._quiet_ns += gap_ns - QUIET_NS
        if gap_ns > MAX_GAP_NS or self._quiet_ns > MAX_GAP_NS:
            # Replay would run every periodic timer across the gap (a stats line a second,
            # the world's ticks): for a damaged time, years of them.
            if gap_ns <= MAX_GAP_NS:
                raise CaptureError(
                    f"{self._where}: damaged: the time between inputs, past 50 ms each, adds up to "
                    f"{self._quiet_ns / 3.6e12:.3g} h by {t_ns} ns (at most "
                    f"{MAX_GAP_NS // 3_600_000_000_000} h)"
                )
            raise CaptureError(
                f"{self._where}: damaged: an input at {t_ns} ns, "
                f"{(t_ns - now_ns) / 3.6e12:.3g} h after the one before it "
                f"(at most {MAX_GAP_NS // 3_600_000_000_000} h: the recorder's clock is the "
                "host's monotonic clock)"
            )
        advance_together(world, host, t_ns)  # the world's first: a host timer may feed it

    def _chunk(self, data: bytes) -> None:
        if not self._port_open:  # a capture without port events: the port was open
            self.implied_opens += 1
            if self.link.state is LinkState.DOWN:
                self._port_event(LinkInput.OPEN_STARTED, REASON_IMPLIED_OPEN)
            self._port_event(LinkInput.OPENED, REASON_OPENED)
        self.link.replay_chunk(data)

    def _port_event(self, event: LinkInput, reason: str) -> None:
        try:
            self.link.replay_input(event, reason)
        except IllegalTransition:
            self.port_events_ignored += 1
            return
        if event is LinkInput.OPENED:
            self._port_open = True
        elif event is LinkInput.LOST or event is LinkInput.STOPPED:
            self._port_open = False

    # -- output ----------------------------------------------------------------------------

    def _stats(self) -> dict[str, Any]:
        return {
            "replay": {
                "datagrams": self.datagrams,
                "host_lines": self.host_lines,
                "port_events_ignored": self.port_events_ignored,
                "implied_opens": self.implied_opens,
                "time_reversals": self.time_reversals,
            }
        }

    def _take(self) -> list[bytes]:
        out, self._out.lines = self._out.lines, []
        return out


def _run_now(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine that never waits (``Host.start`` with no sockets to open)."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise RuntimeError("expected a coroutine that completes without waiting")
