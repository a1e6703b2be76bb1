"""The world service: the live link and RflySim's streams feeding one :class:`fusion.WorldModel`,
published as snapshots.

Inputs: attach it to a :class:`~gizmo_host.live.service.GizmoService` as a listener (results
and link events, in the reader's call) and give it rfly_link receivers (one task each drains its
bounded queue). Adapters (:mod:`~gizmo_host.bridge.world_adapters`,
:mod:`~gizmo_host.bridge.rfly_adapter`) turn both into fusion inputs.

Snapshots are published, on the injected ``Scheduler``:

- every ``1 / rate_hz`` (``[world] rate_hz``, default 50), whatever changed;
- with ``publish_on_change``: at once (at the end of the current loop turn, so a burst of
  inputs costs one snapshot) when an input changed a verdict, and at the model's
  ``next_deadline_ns()``, the moment a TTL or hold runs out with no input at all, so a HOLD
  comes on time rather than at the next tick.

Only inputs that can change a verdict (results, link states, poses) trigger the check.
``seq`` counts published snapshots, so a gap means one was lost on the way. Consumers are
listeners (called synchronously; one that raises is counted) and bounded async iterators
(``snapshots()``), which lose their oldest snapshot (counted) rather than slow the loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Final

from fusion import (
    Input,
    LinkStatus,
    PoseLinkStatus,
    PoseSample,
    SourceConflict,
    VisionObservation,
    WorldModel,
    WorldSnapshot,
)
from fusion.snapshot import VerdictKey
from gizmo_host.bridge.rfly_adapter import RflyAdapter
from gizmo_host.bridge.rfly_sources import SensorRequester
from gizmo_host.bridge.world_adapters import GizmoAdapter
from gizmo_host.live import lifecycle
from gizmo_host.live.subscription import FailureCounter, FailureLatch, Subscription
from gizmo_host.stream.events import LinkEvent, ReceivedResult
from gizmo_host.stream.store import LinkVerdict
from gizmo_host.stream.tracker import SequenceEvent
from gizmo_host.timing import LoopScheduler, Scheduler, Timer, WallClock, realtime_of
from rfly_link.io import Event, ReceiverGroup, UdpReceiver

LOGGER = logging.getLogger(__name__)
SnapshotListener = Callable[[WorldSnapshot], None]
_RESET: Final = SequenceEvent.RESET
_VERDICT_INPUTS: Final = frozenset(
    {VisionObservation, LinkStatus, PoseSample, SourceConflict, PoseLinkStatus}
)


class WorldService:
    """``async with WorldService(model, ...) as world:`` runs receivers and publishing."""

    def __init__(
        self,
        model: WorldModel,
        *,
        scheduler: Scheduler | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
        rfly: RflyAdapter | None = None,
        receivers: Sequence[UdpReceiver] = (),
        requester: SensorRequester | None = None,
        wall_clock: WallClock = realtime_of,
    ) -> None:
        """``rate_hz`` and ``publish_on_change`` come from ``model.config``; ``rfly`` adapts
        what ``receivers`` deliver (required with receivers); ``requester`` keeps CopterSim
        streaming replies; ``wall_clock`` stamps each published snapshot's ``wall_ns``."""
        if receivers and rfly is None:
            raise ValueError("rfly: expected an RflyAdapter for the receivers' messages")
        self.model = model
        self._scheduler = scheduler or LoopScheduler(clock)
        self._period_ns = max(1, round(1e9 / model.config.rate_hz))
        self._on_change = model.config.publish_on_change
        self.gizmo = GizmoAdapter()
        self.rfly = rfly
        self.receivers = list(receivers)
        self.requester = requester
        self._listeners: list[SnapshotListener] = []
        self._input_listeners: list[Callable[[Input], None]] = []
        self._subs: list[Subscription[WorldSnapshot]] = []
        self._closed_drops = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._tick: Timer | None = None
        self._tick_due_ns = 0
        self._check: Timer | None = None
        self._deadline: Timer | None = None
        self._deadline_due_ns = 0
        self._last_key: VerdictKey | None = None
        # The published PROCEED's valid_until_ns, and when to renew it (half-way there).
        self._proceed_until_ns: int | None = None
        self._renew_at_ns = 0
        self._seq = 0
        self._wall_clock = wall_clock
        self.inputs = 0
        self.published = 0
        self._listener_errors = FailureCounter(LOGGER)
        self._input_errors = FailureCounter(LOGGER)
        self._failures = FailureLatch(LOGGER)
        self._group = ReceiverGroup(
            self.receivers,
            self.on_rfly,
            on_error=lambda r, _exc: self._input_errors.failed("world input from %s", r.name),
            task_done=self._failures.task_done,
        )

    # -- lifecycle -------------------------------------------------------------------------

    # No ``async def`` here (the module is compiled): the waits are ``lifecycle``'s.

    def __aenter__(self) -> Coroutine[Any, Any, WorldService]:
        return lifecycle.entered(self, self.start)

    def __aexit__(self, *exc_info: object) -> Coroutine[Any, Any, None]:
        return self.stop()

    def start(self) -> Coroutine[Any, Any, None]:
        """Bind every receiver (all or none: an ``OSError`` names the port), then start
        publishing."""
        return lifecycle.started(self._refuse_running, self._group.start, end=self._publishing)

    def _refuse_running(self) -> None:
        if self._tasks or self._tick is not None:
            raise RuntimeError("WorldService is already running")

    def _publishing(self) -> None:
        if self.requester is not None and self.rfly is not None:
            self._spawn(self.requester.run(self._scheduler, self.rfly), "world requests")
        self._arm_tick(self._scheduler.now_ns() + self._period_ns)

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        task.add_done_callback(self._failures.task_done)
        self._tasks.append(task)

    def stop(self) -> Coroutine[Any, Any, None]:
        """Stop receiving and publishing; end every iterator."""
        return lifecycle.stopped(self._cancel_tasks, self._group.close, end=self._stopped)

    def _cancel_tasks(self) -> list[asyncio.Task[None]]:
        tasks, self._tasks = self._tasks, []
        self._cancel_timers()
        for task in tasks:
            task.cancel()
        return tasks

    def _stopped(self) -> None:
        if self.requester is not None:
            self.requester.close()
        self._cancel_timers()
        for sub in list(self._subs):
            sub.close()

    def _cancel_timers(self) -> None:
        for timer in (self._tick, self._check, self._deadline):
            if timer is not None:
                timer.cancel()
        self._tick = self._check = self._deadline = None

    @property
    def failure(self) -> BaseException | None:
        """The exception that broke the service's own work (a task or a timer), if any."""
        return self._failures.failure

    def wait_failed(self) -> Coroutine[Any, Any, BaseException]:
        """Return once the service's own work has failed: its owner should exit non-zero."""
        return self._failures.wait()

    # -- inputs ----------------------------------------------------------------------------

    def on_gizmo(self, message: ReceivedResult | LinkEvent | LinkVerdict) -> None:
        """A :class:`GizmoService` listener: results and link events become inputs."""
        if type(message) is ReceivedResult and message.sequence_event is not _RESET:
            observation = self.gizmo.observation(message)  # ``result``'s one, without a reset
            if observation is not None:
                self.apply(observation)
        elif isinstance(message, ReceivedResult):
            for item in self.gizmo.result(message):
                self.apply(item)
        elif isinstance(message, LinkEvent):
            self.apply(self.gizmo.link(message))

    def apply(self, item: Input) -> None:
        """Feed one fusion input (the adapters' output, or a replay's). One the model raises
        on is counted (``input_errors``, logged) and faults the model (``WorldModel.fault``):
        what it held is dropped and its verdicts HOLD with ``model_fault`` until it takes a
        board result again, rather than go on from a half-applied input."""
        try:
            self.model.apply(item)
        except Exception:
            self._input_errors.failed("world model on %s", type(item).__name__)
            self.model.fault(self._scheduler.now_ns())
            self._check_soon()
            return
        self.inputs += 1
        for listener in self._input_listeners:
            try:
                listener(item)
            except Exception:
                self._listener_errors.failed("world input listener %r", listener)
        if type(item) in _VERDICT_INPUTS:
            self._check_soon()

    def _check_soon(self) -> None:
        """A verdict check at the end of this loop turn (publishing a change at once), unless
        one is armed already."""
        if (
            self._on_change
            and self._check is None
            and self._tick is not None  # running: no timers before start or after stop
        ):
            self._check = self._scheduler.call_at_ns(self._scheduler.now_ns(), self._on_check)

    def input_failed(self, what: str, *args: object) -> None:
        """Count an input that failed on its way in (call from an ``except`` block): the
        receivers' and a recorder's or replay's alike, in ``input_errors``."""
        self._input_errors.failed(what, *args)

    def on_rfly(self, event: Event) -> None:
        """One rfly_link event (a receiver's, or a replayed one) through the adapter."""
        rfly = self.rfly
        if rfly is None:
            raise ValueError("rfly: expected an RflyAdapter for RflySim events")
        frame = event.frame
        items = rfly.message(
            event.value,
            event.rx_ns,
            frame_time_s=None if frame is None else frame.timestamp_s,
            sensor=event.sensor,
            sender=event.sender,
        )
        for item in items:
            self.apply(item)

    # -- consumers -------------------------------------------------------------------------

    def add_listener(self, listener: SnapshotListener) -> None:
        """Call ``listener`` with every published snapshot; it must not block."""
        self._listeners.append(listener)

    def add_input_listener(self, listener: Callable[[Input], None]) -> None:
        """Call ``listener`` with every input applied (a viewer's LiDAR points, as the model
        took them: timed, in the frame the adapter named); it must not block."""
        self._input_listeners.append(listener)

    def remove_listener(self, listener: SnapshotListener) -> None:
        self._listeners.remove(listener)

    def snapshots(self, maxsize: int = 64) -> Subscription[WorldSnapshot]:
        """Every published snapshot; when ``maxsize`` are waiting the oldest goes (counted)."""
        sub: Subscription[WorldSnapshot] = Subscription(maxsize, self._unsubscribe)
        self._subs.append(sub)
        return sub

    def _unsubscribe(self, sub: Subscription[WorldSnapshot]) -> None:
        self._subs.remove(sub)
        self._closed_drops += sub.dropped  # the count outlives the iterator

    def snapshot(self, now_ns: int | None = None) -> WorldSnapshot:
        """The world right now, unpublished (its ``seq`` is the model's own count)."""
        return self.model.snapshot(self._scheduler.now_ns() if now_ns is None else now_ns)

    def stats(self) -> dict[str, Any]:
        """Counters of the model, the adapters, the receivers and the publishing."""
        out: dict[str, Any] = {
            "inputs": self.inputs,
            "published": self.published,
            "model": self.model.stats(),
            "gizmo": dict(self.gizmo.counts),
            "listener_errors": self._listener_errors.count,
            "input_errors": self._input_errors.count,
            "subscriber_drops": self._closed_drops + sum(s.dropped for s in self._subs),
        }
        if self.rfly is not None:
            out["rflysim"] = {
                **self.rfly.counts,
                "sim_clocks": self.rfly.clock_stats(),
                "receivers": {
                    r.name: {"datagrams": r.stats.datagrams, "drops": r.stats.drops}
                    for r in self.receivers
                },
            }
            if self.requester is not None:
                out["rflysim"]["requests"] = self.requester.stats()
        return out

    # -- publishing ------------------------------------------------------------------------

    def _evaluate(self, *, force: bool) -> None:
        """Publish a snapshot when ``force``d (the tick), when the verdict changed, or when a
        renewed PROCEED is due (``_renewal_due``); a check that publishes nothing builds no
        snapshot (``WorldModel.verdict``)."""
        now_ns, model = self._scheduler.now_ns(), self.model
        if force:
            snapshot = model.snapshot(now_ns)
            self._publish(snapshot, snapshot.verdict_key())
            deadline = model.next_deadline_ns()
        else:
            key, proceed_until_ns, deadline = model.verdict(now_ns)
            if key != self._last_key or (
                proceed_until_ns is not None
                and now_ns >= self._renew_at_ns  # ``_renewal_due``'s first test: most fail it
                and self._renewal_due(now_ns, proceed_until_ns)
            ):
                self._publish(model.snapshot(now_ns), key)
                deadline = model.next_deadline_ns()  # the listeners ran meanwhile
        model.judged()
        if deadline is not None and (self._deadline is None or deadline < self._deadline_due_ns):
            self._arm_deadline(deadline)  # else the armed timer, no later, stays (most checks)

    def _renewal_due(self, now_ns: int, proceed_until_ns: int | None) -> bool:
        """A renewed PROCEED (valid until ``proceed_until_ns``) whose published
        ``valid_until_ns`` is more than half gone and would run out before the next tick:
        publish it now, so a consumer that honours ``valid_until_ns`` sees a steady PROCEED
        as steady."""
        until = self._proceed_until_ns
        return (
            until is not None
            and proceed_until_ns is not None
            and now_ns >= self._renew_at_ns
            and proceed_until_ns > until
            and until < self._tick_due_ns
        )

    def _publish(self, snapshot: WorldSnapshot, key: VerdictKey) -> None:
        self._seq += 1
        valid_until_ns = snapshot.valid_until_ns
        if not snapshot.proceed and self._tick is not None:  # re-evaluated at the next tick
            valid_until_ns = min(valid_until_ns, self._tick_due_ns)
        snapshot = dataclasses.replace(
            snapshot,
            seq=self._seq,
            valid_until_ns=valid_until_ns,
            wall_ns=self._wall_clock(snapshot.host_ns),
        )
        self._last_key = key
        self._proceed_until_ns = valid_until_ns if snapshot.proceed else None
        self._renew_at_ns = (snapshot.host_ns + valid_until_ns) // 2
        self.published += 1
        for sub in self._subs:
            sub.put(snapshot)
        for listener in self._listeners:
            try:
                listener(snapshot)
            except Exception:
                self._listener_errors.failed("world listener %r", listener)

    def _arm_tick(self, due_ns: int) -> None:
        self._tick_due_ns = due_ns
        self._tick = self._scheduler.call_at_ns(due_ns, self._on_tick)

    def _on_tick(self) -> None:
        now = self._scheduler.now_ns()
        due = self._tick_due_ns + self._period_ns
        self._arm_tick(due if due > now else now + self._period_ns)  # late: skip, no burst
        self._evaluate_or_fault(force=True, what="tick")

    def _on_check(self) -> None:
        self._check = None
        self._evaluate_or_fault(force=False, what="check")

    def _evaluate_or_fault(self, *, force: bool, what: str) -> None:
        """``_evaluate``; the model raising there (a measurement whose wait ended is placed
        by the check) faults it as an input it raises on does, and the HOLD is evaluated at
        once. Raising again right after is the service's failure: its owner exits."""
        try:
            self._evaluate(force=force)
            return
        except Exception:
            self._input_errors.failed("world model in a %s", what)
        try:
            self.model.fault(self._scheduler.now_ns())
            self._evaluate(force=force)
        except Exception as exc:
            self._failures.fail(exc, f"world {what}")

    def _arm_deadline(self, due: int | None) -> None:
        """A timer at the model's next deadline ``due``; an earlier armed one stays (it
        re-arms)."""
        if not self._on_change or self._tick is None or due is None:
            return
        if self._deadline is not None:
            if self._deadline_due_ns <= due:
                return
            self._deadline.cancel()
        self._deadline = self._scheduler.call_at_ns(due, self._on_deadline)
        self._deadline_due_ns = due

    def _on_deadline(self) -> None:
        self._deadline = None
        self._evaluate_or_fault(force=False, what="deadline")
