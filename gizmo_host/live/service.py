"""The live service: the serial link feeding the pure ``FramePipeline``, fanned out to
listeners and iterators, with the timers the pipeline cannot own.

Flow: ``SerialLink`` reads and parses -> ``FramePipeline.apply`` host-stamps and stores each
frame (sequence tracker, device clock, result store) -> listeners get ``ReceivedResult``,
``LinkEvent`` and ``LinkVerdict`` values synchronously, in the reader's call (like python-can
listeners: they must not block). A read is one chunk: its frames are applied in order, the
verdicts evaluated once all of them are, and the chunk's messages (its results, then any
verdicts) go to a batch listener (``add_batch_listener``: the JSON Lines publisher, one write
per sink) as one list, and to a listener one by one. ``results()``,
``verdicts()`` and ``link_events()`` are bounded async iterators built on the same fan-out: a
consumer that falls behind loses its oldest items (counted), never slows the reader.

Verdicts are re-evaluated after every read that could change one, every link transition, and
by a timer set for the moment the current target goes stale (so it turns to HOLD on time
without polling; results that refresh the target move the timer back, so a steady stream
never wakes it); they are published when they change, re-published every
``verdict_interval_s``, and a PROCEED again before its ``valid_until_ns`` runs out (once it is
due within half a TTL and a result has renewed its target), so a consumer that honours
``valid_until_ns`` sees a steady PROCEED as steady.

Settings come as two small values (``gizmo_host.live.link_config``): ``LinkConfig`` for the port
and ``PipelineConfig`` for the pipeline and the verdict period.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from gizmo_core import LinkState, Selector
from gizmo_host.live import lifecycle
from gizmo_host.live.link import BytesCallback, SerialLink
from gizmo_host.live.link_config import LinkConfig, PipelineConfig
from gizmo_host.live.serial_port import OpenFunction
from gizmo_host.live.subscription import FailureCounter, FailureLatch, Subscription
from gizmo_host.stream.clock import ClockStatus
from gizmo_host.stream.events import LinkEvent, ReceivedResult
from gizmo_host.stream.pipeline import FramePipeline
from gizmo_host.stream.store import LinkVerdict, ResultStore
from gizmo_host.timing import LoopScheduler, Scheduler, Timer
from gizmo_host.wire.protocol import VisionResult

LOGGER = logging.getLogger(__name__)
T = TypeVar("T")
Message = ReceivedResult | LinkEvent | LinkVerdict
Listener = Callable[[Message], None]
BatchListener = Callable[[list[Message]], None]  # a chunk's messages, in order
_CLOSED: Any = object()
_STALE_MARGIN_NS: Final = 1_000_000
_UP: Final = LinkState.UP


class GizmoService:
    """``async with GizmoService(path) as service:`` runs the link until the block exits."""

    def __init__(
        self,
        link: LinkConfig | str,
        pipeline: PipelineConfig | None = None,
        *,
        frame_pipeline: FramePipeline | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
        scheduler: Scheduler | None = None,
        open_connection: OpenFunction | None = None,
        explain_open_error: Callable[[str, OSError], str] | None = None,
        on_bytes: BytesCallback | None = None,
    ) -> None:
        """``link``: the serial path and its settings (a bare path takes the defaults);
        ``pipeline``: the pipeline's settings and the verdict period; ``frame_pipeline``
        replaces the pipeline built from them (its own TTLs then pace the stale timer);
        ``scheduler`` (default: the loop's timers on ``clock``) runs every timer and
        sleep; ``on_bytes`` is the link's raw-bytes tap (``SerialLink``)."""
        link = LinkConfig(link) if isinstance(link, str) else link
        settings = pipeline or PipelineConfig()
        self.config = link
        self._scheduler = scheduler or LoopScheduler(clock)
        self._clock = clock = self._scheduler.now_ns
        self.pipeline = frame_pipeline or settings.build(link.baudrate)
        link_kwargs: dict[str, Any] = {}
        if open_connection is not None:
            link_kwargs["open_connection"] = open_connection
        self.link = SerialLink(
            link,
            on_results=self._on_results,
            on_event=self._on_link_event,
            scheduler=self._scheduler,
            explain_open_error=explain_open_error,
            on_bytes=on_bytes,
            **link_kwargs,
        )
        self._verdict_interval_ns = round(settings.verdict_interval_s * 1e9)
        # (as added, as called): in the order added, one listener of either kind each.
        self._listeners: list[tuple[Listener | BatchListener, BatchListener]] = []
        self._result_subs: list[Subscription[ReceivedResult]] = []
        self._link_subs: list[Subscription[LinkEvent]] = []
        self._verdict_subs: dict[Selector, list[Subscription[LinkVerdict]]] = {}
        self._closed_drops = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._stale_timer: Timer | None = None
        self._stale_due_ns = 0  # host time the pending stale timer fires
        self._verdict_tick: Timer | None = None
        self._tick_due_ns: int | None = None  # the next steady re-publication: a HOLD's limit
        self._listener_errors = FailureCounter(LOGGER)
        self._failures = FailureLatch(LOGGER)

    # -- lifecycle -------------------------------------------------------------------------

    # No ``async def`` here (the module is compiled): the waits are ``lifecycle``'s.

    def __aenter__(self) -> Coroutine[Any, Any, GizmoService]:
        return lifecycle.entered(self, self.start)

    def __aexit__(self, *exc_info: object) -> Coroutine[Any, Any, None]:
        return self.stop()

    def start(self, *, run_link: bool = True) -> None:
        """Start the link's task and the verdict timer; ``run_link=False``: the timer only,
        the caller feeding the link (an offline replay: ``SerialLink.replay_input``)."""
        if self._tasks:
            raise RuntimeError("GizmoService is already running")
        if run_link:
            link_task = asyncio.create_task(self.link.run(), name=f"gizmo-link {self.link.path}")
            self._tasks = [link_task]
        for task in self._tasks:
            task.add_done_callback(self._failures.task_done)
        self._schedule_verdict_tick()

    @property
    def failure(self) -> BaseException | None:
        """The exception that broke the service's own work (a task or a timer), if any."""
        return self._failures.failure

    def wait_failed(self) -> Coroutine[Any, Any, BaseException]:
        """Return once the service's own work has failed (a task died, a timer raised): it is
        no longer trustworthy and its owner should exit non-zero (under systemd,
        ``Restart=on-failure`` then applies)."""
        return self._failures.wait()

    def stop(self) -> Coroutine[Any, Any, None]:
        """Stop the link (closing the port), end every iterator."""
        return lifecycle.stopped(self._cancel_tasks, end=self._stopped)

    def _cancel_tasks(self) -> list[asyncio.Task[None]]:
        tasks, self._tasks = self._tasks, []
        self._cancel_timers()
        for task in tasks:
            task.cancel()
        return tasks

    def _stopped(self) -> None:
        self._cancel_timers()  # a last read or link event while the link closed may arm one
        for sub in self._all_subs():
            sub.close()

    def _cancel_timers(self) -> None:
        for timer in (self._stale_timer, self._verdict_tick):
            if timer is not None:
                timer.cancel()
        self._stale_timer = self._verdict_tick = None

    # -- consumers -------------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` with every result, link event and changed verdict; never block."""
        self._listeners.append((listener, self._one_at_a_time(listener)))

    def add_batch_listener(self, listener: BatchListener) -> None:
        """Call ``listener`` with the same messages a list at a time: everything one read
        produced (its results in order, then the verdicts evaluated after them), or one link
        event or timer's messages; never block."""
        self._listeners.append((listener, listener))

    def remove_listener(self, listener: Listener | BatchListener) -> None:
        self._listeners = [entry for entry in self._listeners if entry[0] is not listener]

    def _one_at_a_time(self, listener: Listener) -> BatchListener:
        def each(batch: list[Message]) -> None:
            for item in batch:
                try:
                    listener(item)
                except Exception:
                    self._listener_errors.failed("listener %r", listener)

        return each

    def watch(self, selector: Selector) -> None:
        """Publish verdicts for ``selector`` to listeners (on change and at the steady rate)."""
        self.pipeline.watch(selector)

    def results(self, maxsize: int = 1024) -> Subscription[ReceivedResult]:
        sub: Subscription[ReceivedResult] = Subscription(
            maxsize, self._unsubscriber(self._result_subs)
        )
        self._result_subs.append(sub)
        return sub

    def link_events(self, maxsize: int = 256) -> Subscription[LinkEvent]:
        sub: Subscription[LinkEvent] = Subscription(maxsize, self._unsubscriber(self._link_subs))
        self._link_subs.append(sub)
        return sub

    def verdicts(
        self, selector: Selector | None = None, maxsize: int = 256
    ) -> Subscription[LinkVerdict]:
        """Verdicts for ``selector`` (default: any detection) when they change, and steadily."""
        selector = selector or Selector()
        self.watch(selector)
        subs = self._verdict_subs.setdefault(selector, [])
        sub: Subscription[LinkVerdict] = Subscription(maxsize, self._unsubscriber(subs))
        subs.append(sub)
        return sub

    def verdict(self, selector: Selector | None = None, now_ns: int | None = None) -> LinkVerdict:
        """The verdict right now."""
        return self.pipeline.verdict(
            selector or Selector(), self._clock() if now_ns is None else now_ns
        )

    @property
    def link_state(self) -> LinkState:
        return self.link.state

    @property
    def clock_status(self) -> ClockStatus:
        return self.pipeline.device_clock.status

    @property
    def store(self) -> ResultStore:
        return self.pipeline.store

    def stats(self, now_ns: int | None = None) -> dict[str, Any]:
        """Counters of every stage, as a JSON-ready ``stats`` message."""
        return {
            "type": "stats",
            "host_ns": self._clock() if now_ns is None else now_ns,
            "link": self.link.stats()._asdict(),
            **self.pipeline.stats(),
            "listener_errors": self._listener_errors.count,
            "subscriber_drops": self._closed_drops + sum(s.dropped for s in self._all_subs()),
        }

    # -- the reader path (synchronous: called from the link's data_received) ----------------

    def _on_results(self, results: list[VisionResult], rx_ns: int) -> None:
        """One read's frames: all applied, then the verdicts evaluated, then one dispatch."""
        pipeline = self.pipeline
        received = pipeline.apply(results, rx_ns)
        for sub in self._result_subs:
            for item in received:
                sub.put(item)
        batch: list[Message] = received  # type: ignore[assignment]  # the caller's own list
        if pipeline.evaluation_due:
            now_ns = self._clock()  # not rx_ns: keep host_ns monotonic
            batch += self._evaluate_verdicts(now_ns, force=pipeline.renewal_due(now_ns))
        elif pipeline.stale_refreshed and pipeline.take_renewal(rx_ns):
            # A renewed target is re-published once the published PROCEED is due to run out
            # within half a TTL (a steady stream costs a verdict line and a timer move every
            # half TTL or so, and no timer wake-ups), and at once when a result with an older
            # capture time moved its stale time earlier than the published valid_until_ns. So
            # the stale timer never fires after a target goes stale, and a published PROCEED
            # never promises more than the host knows.
            batch += self._evaluate_verdicts(self._clock(), force=True, renew=True)
        if batch:
            self._dispatch(batch)

    def _dispatch(self, batch: list[Message]) -> None:
        """Hand ``batch`` to every listener (a batch listener at once, any other one item at a
        time); one that raises is counted, never propagated, so a consumer's bug cannot stop
        the reader or the other consumers."""
        for listener, call in self._listeners:
            try:
                call(batch)
            except Exception:
                self._listener_errors.failed("listener %r", listener)

    def _on_link_event(self, event: LinkEvent) -> None:
        self.pipeline.link_changed(event)
        for sub in self._link_subs:
            sub.put(event)
        batch: list[Message] = [event]
        if event.state is not _UP:
            # UP comes with the read that holds the first valid frames: its verdict waits
            # until they are applied (``_on_results``), never before.
            batch += self._evaluate_verdicts(event.host_ns)
        self._dispatch(batch)

    def _evaluate_verdicts(
        self, now_ns: int, *, force: bool = False, renew: bool = False
    ) -> list[LinkVerdict]:
        """The verdicts to publish (to the verdict iterators already; the caller dispatches
        them), with the stale timer armed for the first current target."""
        pipeline = self.pipeline
        verdicts = pipeline.evaluate(now_ns, force=force, hold_until_ns=self._tick_due_ns)
        for verdict in verdicts:
            for sub in self._verdict_subs.get(verdict.selector, ()):
                sub.put(verdict)
        stale_at_ns = pipeline.stale_at_ns()
        if stale_at_ns is not None:
            self._arm_stale_timer(stale_at_ns, now_ns, later=renew)
        return verdicts

    def _publish_verdicts(self, now_ns: int, *, force: bool) -> None:
        verdicts: list[Message] = [*self._evaluate_verdicts(now_ns, force=force)]
        if verdicts:
            self._dispatch(verdicts)

    def _arm_stale_timer(self, stale_at_ns: int, now_ns: int, *, later: bool = False) -> None:
        """Re-evaluate when the first current target goes stale: a timer, not polling.

        A pending timer that fires earlier is kept unless ``later`` (a routine result moved
        the stale time back): a timer that fires early only re-evaluates and re-arms.
        """
        due_ns = stale_at_ns + _STALE_MARGIN_NS
        handle = self._stale_timer
        if handle is not None:
            if not later and self._stale_due_ns <= due_ns:
                return
            handle.cancel()
        self._stale_timer = self._scheduler.call_at_ns(due_ns, self._on_stale_timer)
        self._stale_due_ns = due_ns

    def _on_stale_timer(self) -> None:
        """A target's stale time: HOLD if it went stale; re-published if it was renewed
        meanwhile, so a published PROCEED never runs out while the host still holds it."""
        self._stale_timer = None
        try:
            now_ns = self._clock()
            self._publish_verdicts(now_ns, force=self.pipeline.renewal_due(now_ns))
        except Exception as exc:
            self._failures.fail(exc, "stale timer")

    def _schedule_verdict_tick(self) -> None:
        self._tick_due_ns = due_ns = self._clock() + self._verdict_interval_ns
        self._verdict_tick = self._scheduler.call_at_ns(due_ns, self._on_verdict_tick)

    def _on_verdict_tick(self) -> None:
        """Re-publish every watched verdict at the steady rate (a timer: no task to wake)."""
        self._schedule_verdict_tick()
        try:
            self._publish_verdicts(self._clock(), force=True)
        except Exception as exc:
            self._failures.fail(exc, "verdict tick")

    def _unsubscriber(self, subs: list[Any]) -> Callable[[Subscription[Any]], None]:
        """A closing iterator leaves ``subs``; its drop count stays in the statistics."""

        def unsubscribe(sub: Subscription[Any]) -> None:
            subs.remove(sub)
            self._closed_drops += sub.dropped

        return unsubscribe

    def _all_subs(self) -> list[Subscription[Any]]:
        return [
            *self._result_subs,
            *self._link_subs,
            *(s for subs in self._verdict_subs.values() for s in subs),
        ]
