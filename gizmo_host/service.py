"""The live service: link + tracker + clock + store, fanned out to listeners and iterators.

Flow: ``SerialLink`` reads and parses -> for each frame the ``SequenceTracker`` classifies the
sequence, the ``DeviceClockEstimator`` maps the device time, the ``ResultStore`` keeps the
latest -> listeners get ``ReceivedResult``, ``LinkEvent`` and ``Verdict`` values synchronously,
in the reader's call (like python-can listeners: they must not block). ``results()``,
``verdicts()`` and ``link_events()`` are bounded async iterators built on the same fan-out: a
consumer that falls behind loses its oldest items (counted), never slows the reader.

Verdicts are re-evaluated after every read that could change one, every link transition, and
by a timer set for the moment the current target goes stale (so it turns to HOLD on time
without polling; results that refresh the target move the timer back, so a steady stream
never wakes it); they are published when they change and re-published every
``verdict_interval_s``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from .clock import ClockEvent, ClockStatus, DeviceClockEstimator, frame_transmit_ns
from .events import LinkEvent, LinkState, ReceivedResult, ResultKey
from .link import OpenFunction, SerialLink
from .protocol import VisionResult
from .store import Decision, ResultStore, TargetSelector, Verdict
from .tracker import SequenceEvent, SequenceTracker

LOGGER = logging.getLogger(__name__)
T = TypeVar("T")
Message = ReceivedResult | LinkEvent | Verdict
Listener = Callable[[Message], None]
_CLOSED: Any = object()
_STALE_MARGIN_S = 0.001
_IN_ORDER, _GAP, _LATE = SequenceEvent.IN_ORDER, SequenceEvent.GAP, SequenceEvent.LATE
_DUPLICATE, _RESET, _LOCKED = SequenceEvent.DUPLICATE, SequenceEvent.RESET, ClockStatus.LOCKED
_CLOCK_RESET = ClockEvent.DEVICE_RESET
_UP, _DOWN = LinkState.UP, LinkState.DOWN
_new_tuple = tuple.__new__  # builds a NamedTuple without its Python-level __new__


class Subscription(Generic[T]):
    """A bounded async iterator fed by the service; the oldest item goes when it is full."""

    def __init__(self, maxsize: int, on_close: Callable[[Subscription[T]], None]) -> None:
        if maxsize <= 0:
            raise ValueError(f"maxsize: expected > 0, got {maxsize!r}")
        self._queue: asyncio.Queue[T] = asyncio.Queue(maxsize + 1)  # +1 for the close marker
        self._maxsize = maxsize
        self._on_close = on_close
        self._closed = False
        self.dropped = 0

    def put(self, item: T) -> None:
        if self._closed:
            return
        if self._queue.qsize() >= self._maxsize:
            self._queue.get_nowait()
            self.dropped += 1
        self._queue.put_nowait(item)

    def close(self) -> None:
        """End the iteration (after the items already queued)."""
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(_CLOSED)
            self._on_close(self)

    def __aiter__(self) -> Subscription[T]:
        return self

    async def __anext__(self) -> T:
        item = await self._queue.get()
        if item is _CLOSED:
            raise StopAsyncIteration
        return item

    async def get(self, timeout: float | None = None) -> T:
        """The next item; raises ``StopAsyncIteration`` once closed, ``TimeoutError`` on timeout."""
        return await asyncio.wait_for(self.__anext__(), timeout)


class GizmoService:
    """``async with GizmoService(path) as service:`` runs the link until the block exits."""

    def __init__(
        self,
        path: str,
        *,
        baudrate: int = 115200,
        silent_after_s: float = 1.0,
        ttl_ms: float = 250.0,
        ttl_ms_by_type: dict[int, float] | None = None,
        reset_hold_ms: float = 2000.0,
        max_skew_ppm: float = 200.0,
        phase_error_threshold_ms: float = 5.0,
        transport_delay_ns: int | None = None,
        verdict_interval_s: float = 1.0,
        backoff_min_s: float = 0.1,
        backoff_max_s: float = 2.0,
        clock: Callable[[], int] = time.monotonic_ns,
        open_connection: OpenFunction | None = None,
    ) -> None:
        self._clock = clock
        self._tracker = SequenceTracker(max_skew_ppm=max_skew_ppm)
        self._device_clock = DeviceClockEstimator(
            max_skew_ppm=max_skew_ppm,
            phase_error_threshold_ms=phase_error_threshold_ms,
            transport_delay_ns=(
                frame_transmit_ns(baudrate) if transport_delay_ns is None else transport_delay_ns
            ),
        )
        self._store = ResultStore(
            ttl_ms=ttl_ms, ttl_ms_by_type=ttl_ms_by_type, reset_hold_ms=reset_hold_ms
        )
        link_kwargs: dict[str, Any] = {}
        if open_connection is not None:
            link_kwargs["open_connection"] = open_connection
        self.link = SerialLink(
            path,
            on_results=self._on_results,
            on_event=self._on_link_event,
            baudrate=baudrate,
            silent_after_s=silent_after_s,
            backoff_min_s=backoff_min_s,
            backoff_max_s=backoff_max_s,
            clock=clock,
            **link_kwargs,
        )
        self._verdict_interval_s = verdict_interval_s
        self._listeners: list[Listener] = []
        self._result_subs: list[Subscription[ReceivedResult]] = []
        self._link_subs: list[Subscription[LinkEvent]] = []
        self._verdict_subs: dict[TargetSelector, list[Subscription[Verdict]]] = {}
        self._watched: dict[TargetSelector, Verdict | None] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._stale_timer: asyncio.TimerHandle | None = None
        self._target_expiry_ns: dict[ResultKey, int] = {}  # current verdict targets' stale times
        self._stale_at_ns = 0  # host time the pending stale timer is for
        # The stale timer is moved later only once it is due within half the shortest TTL.
        self._stale_lead_ns = round(min([ttl_ms, *(ttl_ms_by_type or {}).values()]) * 1e6) // 2
        self._verdict_tick: asyncio.TimerHandle | None = None
        self._routine_keys: dict[tuple[int, int, int], bool] = {}
        self._results_total = self._duplicates_dropped = self._listener_errors = 0
        self._evaluation_due = False  # a link event waits for the results read with it
        self._failure: BaseException | None = None
        self._failed = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> GizmoService:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def start(self) -> None:
        if self._tasks:
            raise RuntimeError("GizmoService is already running")
        self._tasks = [asyncio.create_task(self.link.run(), name=f"gizmo-link {self.link.path}")]
        for task in self._tasks:
            task.add_done_callback(self._task_done)
        self._verdict_tick = asyncio.get_running_loop().call_later(
            self._verdict_interval_s, self._on_verdict_tick
        )

    @property
    def failure(self) -> BaseException | None:
        """The exception that broke the service's own work (a task or a timer), if any."""
        return self._failure

    async def wait_failed(self) -> BaseException:
        """Return once the service's own work has failed (a task died, a timer raised): it is
        no longer trustworthy and its owner should exit non-zero (under systemd,
        ``Restart=on-failure`` then applies)."""
        await self._failed.wait()
        assert self._failure is not None
        return self._failure

    def _task_done(self, task: asyncio.Task[None]) -> None:
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            self._fail(exc, task.get_name())

    async def stop(self) -> None:
        """Stop the link (closing the port), end every iterator."""
        tasks, self._tasks = self._tasks, []
        self._cancel_timers()
        for task in tasks:
            task.cancel()
        # A task that died has been reported through ``failure``; stopping must still finish.
        await asyncio.gather(*tasks, return_exceptions=True)
        self._cancel_timers()  # a last read or link event while the link closed may arm one
        for sub in self._all_subs():
            sub.close()

    def _cancel_timers(self) -> None:
        for timer in (self._stale_timer, self._verdict_tick):
            if timer is not None:
                timer.cancel()
        self._stale_timer = self._verdict_tick = None
        self._target_expiry_ns = {}

    def _fail(self, exc: BaseException, where: str) -> None:
        """A bug in the service's own work: from now on it is not trustworthy (``failure``)."""
        if self._failure is None:
            self._failure = exc
            LOGGER.error("%s failed", where, exc_info=exc)
            self._failed.set()

    # -- consumers -------------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` with every result, link event and changed verdict; never block."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    def watch(self, selector: TargetSelector) -> None:
        """Publish verdicts for ``selector`` to listeners (on change and at the steady rate)."""
        self._watched.setdefault(selector, None)
        self._store.watch(selector)
        self._routine_keys.clear()

    def results(self, maxsize: int = 1024) -> Subscription[ReceivedResult]:
        sub: Subscription[ReceivedResult] = Subscription(maxsize, self._result_subs.remove)
        self._result_subs.append(sub)
        return sub

    def link_events(self, maxsize: int = 256) -> Subscription[LinkEvent]:
        sub: Subscription[LinkEvent] = Subscription(maxsize, self._link_subs.remove)
        self._link_subs.append(sub)
        return sub

    def verdicts(
        self, selector: TargetSelector | None = None, maxsize: int = 256
    ) -> Subscription[Verdict]:
        """Verdicts for ``selector`` (default: any detection) when they change, and steadily."""
        selector = selector or TargetSelector()
        self.watch(selector)
        subs = self._verdict_subs.setdefault(selector, [])
        sub: Subscription[Verdict] = Subscription(maxsize, subs.remove)
        subs.append(sub)
        return sub

    def verdict(self, selector: TargetSelector | None = None, now_ns: int | None = None) -> Verdict:
        """The verdict right now."""
        return self._store.verdict(
            selector or TargetSelector(),
            self._clock() if now_ns is None else now_ns,
            link_state=self.link.state,
            clock_status=self._device_clock.status,
        )

    @property
    def link_state(self) -> LinkState:
        return self.link.state

    @property
    def clock_status(self) -> ClockStatus:
        return self._device_clock.status

    @property
    def store(self) -> ResultStore:
        return self._store

    def stats(self, now_ns: int | None = None) -> dict[str, Any]:
        """Counters of every stage, as a JSON-ready ``stats`` message."""
        clock = self._device_clock.stats()
        return {
            "type": "stats",
            "host_ns": self._clock() if now_ns is None else now_ns,
            "link": self.link.stats()._asdict(),
            "clock": {
                "status": clock.status.value,
                "epoch": clock.epoch,
                "skew_ppm": round(clock.skew_ppm, 3),
                "resets": clock.resets,
                "phase_errors": clock.phase_errors,
                "jumps": clock.jumps,
                "samples": clock.samples,
            },
            "sources": {str(k): v._asdict() for k, v in self._tracker.stats().items()},
            "store": self._store.stats(),
            "results": self._results_total,
            "duplicates_dropped": self._duplicates_dropped,
            "listener_errors": self._listener_errors,
            "subscriber_drops": sum(s.dropped for s in self._all_subs()),
        }

    # -- the reader path (synchronous: called from the link's data_received) ----------------

    def _on_results(self, results: list[VisionResult], rx_ns: int) -> None:
        # This runs for every frame: attribute lookups are hoisted, enum members compared by
        # identity, and tuples built without their Python-level constructors.
        observe_sequence, device_clock = self._tracker.observe, self._device_clock
        store, result_subs = self._store, self._result_subs
        verdicts_may_change = False
        for result in results:
            source_id, timestamp_ms = result.source_id, result.timestamp_ms
            event = observe_sequence(source_id, result.sequence, timestamp_ms, rx_ns)
            if event is _DUPLICATE:
                self._duplicates_dropped += 1
                continue
            sample = device_clock.observe(timestamp_ms, rx_ns, reset=event is _RESET)
            device_ms, epoch, clock_status, clock_event = sample
            if event is _RESET or clock_event is _CLOCK_RESET:
                store.device_reset(source_id, rx_ns)
            received = _new_tuple(
                ReceivedResult,
                (
                    result,
                    rx_ns,
                    device_clock.tick_to_host_ns(device_ms - result.age_ms),
                    device_ms,
                    epoch,
                    clock_status,
                    event,
                ),
            )
            if event is not _LATE:  # a late frame is older than the stored one
                store.update(received)
            self._results_total += 1
            if not verdicts_may_change and not self._is_routine(received, event, rx_ns):
                verdicts_may_change = True
            for sub in result_subs:
                sub.put(received)
            self._dispatch(received)
        if verdicts_may_change or self._evaluation_due:
            self._evaluation_due = False
            self._evaluate_verdicts(self._clock())  # not rx_ns: keep host_ns monotonic

    def _dispatch(self, item: ReceivedResult | LinkEvent | Verdict) -> None:
        """Hand ``item`` to every listener; one that raises is counted, never propagated, so a
        consumer's bug cannot stop the reader or the other consumers."""
        for listener in self._listeners:
            try:
                listener(item)
            except Exception:
                self._listener_errors += 1
                count = self._listener_errors
                if count & (count - 1) == 0:  # log the 1st, 2nd, 4th, 8th, ... failure
                    LOGGER.exception("listener %r failed (%d so far)", listener, count)

    def _is_routine(self, received: ReceivedResult, event: SequenceEvent, rx_ns: int) -> bool:
        """True when ``received`` cannot change any watched verdict, so none is re-evaluated.

        That is: an in-order, tracked, fresh result with the clock locked, whose key is either
        matched by no watched selector or only by selectors whose verdict is already PROCEED.
        A routine result that refreshes a verdict's target moves that target's stale time
        (``_move_stale_timer``).
        """
        result = received.result
        capture_ns = received.host_capture_ns
        if (
            (event is not _IN_ORDER and event is not _GAP)
            or received.clock_status is not _LOCKED
            or result.flags & 0x03 != 0x01  # tracked and not lost
            or capture_ns is None
        ):
            return False
        expiry_ns = capture_ns + self._store.ttl_ns(result.result_type)
        if rx_ns > expiry_ns:
            return False
        key = (result.source_id, result.result_type, result.id)
        routine = self._routine_keys.get(key)
        if routine is None:
            routine = self._routine_keys[key] = all(
                not selector.matches(key)
                or (last is not None and last.decision is Decision.PROCEED)
                for selector, last in self._watched.items()
            )
        if routine and key in self._target_expiry_ns:
            earlier = expiry_ns < self._target_expiry_ns[key]  # an older capture (larger age)
            self._target_expiry_ns[key] = expiry_ns
            if earlier or self._stale_at_ns - rx_ns < self._stale_lead_ns:
                self._move_stale_timer()
        return routine

    def _on_link_event(self, event: LinkEvent) -> None:
        state = event.state
        if event.previous is _UP or state is _DOWN:
            # Whatever was read before a break cannot justify a PROCEED after it; after a
            # disconnection the board may have rebooted, so its clock starts a new epoch.
            self._store.link_break()
            if state is _DOWN:
                self._device_clock.new_epoch()
        for sub in self._link_subs:
            sub.put(event)
        self._dispatch(event)
        if state is _UP:
            # UP comes with the read that holds the first valid frames: evaluate once they
            # are applied (in ``_on_results``), never before.
            self._evaluation_due = True
        else:
            self._evaluate_verdicts(event.host_ns)

    def _evaluate_verdicts(self, now_ns: int, *, force: bool = False) -> None:
        expiry_ns: dict[ResultKey, int] = {}
        for selector, last in self._watched.items():
            verdict = self.verdict(selector, now_ns)
            target = verdict.result
            if target is not None:
                expiry_ns[target.key] = target.reference_ns() + self._store.ttl_ns(
                    target.result.result_type
                )
            if not force and verdict.same_as(last):
                continue
            self._watched[selector] = verdict
            for sub in self._verdict_subs.get(selector, ()):
                sub.put(verdict)
            self._dispatch(verdict)
        self._routine_keys.clear()
        self._target_expiry_ns = expiry_ns
        if expiry_ns:
            self._arm_stale_timer(min(expiry_ns.values()), now_ns)

    def _arm_stale_timer(self, stale_at_ns: int, now_ns: int, *, later: bool = False) -> None:
        """Re-evaluate when the first current target goes stale: a timer, not polling.

        A pending timer that fires earlier is kept unless ``later`` (a routine result moved
        the stale time back): a timer that fires early only re-evaluates and re-arms.
        """
        loop = asyncio.get_running_loop()
        when = loop.time() + (stale_at_ns - now_ns) / 1e9 + _STALE_MARGIN_S
        handle = self._stale_timer
        if handle is not None:
            if not later and not handle.cancelled() and handle.when() <= when:
                return
            handle.cancel()
        self._stale_timer = loop.call_at(when, self._on_stale_timer)
        self._stale_at_ns = stale_at_ns

    def _move_stale_timer(self) -> None:
        """Move the stale timer to the targets' new first stale time.

        Moving it later waits until the pending timer is due within half a TTL (a steady
        stream costs a couple of timer moves per TTL and no timer wake-ups); moving it
        earlier (a result with an older capture time) is done at once. So it never fires
        after a target goes stale."""
        self._arm_stale_timer(min(self._target_expiry_ns.values()), self._clock(), later=True)

    def _on_stale_timer(self) -> None:
        self._stale_timer = None
        try:
            self._evaluate_verdicts(self._clock())
        except Exception as exc:
            self._fail(exc, "stale timer")

    def _on_verdict_tick(self) -> None:
        """Re-publish every watched verdict at the steady rate (a timer: no task to wake)."""
        self._verdict_tick = asyncio.get_running_loop().call_later(
            self._verdict_interval_s, self._on_verdict_tick
        )
        try:
            self._evaluate_verdicts(self._clock(), force=True)
        except Exception as exc:
            self._fail(exc, "verdict tick")

    def _all_subs(self) -> list[Subscription[Any]]:
        return [
            *self._result_subs,
            *self._link_subs,
            *(s for subs in self._verdict_subs.values() for s in subs),
        ]
