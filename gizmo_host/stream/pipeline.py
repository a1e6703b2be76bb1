"""The pure per-frame pipeline: parsed frames -> host-stamped results -> verdicts.

Sans-I/O: every host time is an argument, nothing here reads a clock, sleeps or touches a port.
The live service feeds it from the serial link and keeps the timers; offline replay and the
fusion adapters feed it the same way with recorded times.

Per frame (``apply``): the ``SequenceTracker`` classifies the sequence, the
``DeviceClockEstimator`` maps the device time to the host clock, the ``ResultStore`` keeps the
latest per key. A link transition (``link_changed``) and the verdicts (``evaluate``) follow the
safety rules: nothing read before a break or a device reset justifies a PROCEED, and a verdict
is evaluated only once every result read so far has been applied (``evaluation_due``).
"""

from __future__ import annotations

from typing import Any, Final

from gizmo_core import Decision, LinkState, Selector
from gizmo_host.stream.clock import (
    DEFAULT_LOCK_AFTER_MS,
    DEFAULT_PHASE_ERROR_THRESHOLD_MS,
    ClockEvent,
    ClockStatus,
    DeviceClockEstimator,
)
from gizmo_host.stream.events import LinkEvent, ReceivedResult, ResultKey
from gizmo_host.stream.store import (
    DEFAULT_RESET_HOLD_MS,
    DEFAULT_TTL_MS,
    LinkVerdict,
    ResultStore,
    selects,
)
from gizmo_host.stream.tracker import DEFAULT_MAX_SKEW_PPM, SequenceEvent, SequenceTracker
from gizmo_host.wire.protocol import VisionResult

_IN_ORDER: Final = SequenceEvent.IN_ORDER
_GAP: Final = SequenceEvent.GAP
_LATE: Final = SequenceEvent.LATE
_DUPLICATE: Final = SequenceEvent.DUPLICATE
_RESET: Final = SequenceEvent.RESET
_LOCKED: Final = ClockStatus.LOCKED
_CLOCK_RESET: Final = ClockEvent.DEVICE_RESET
_CLOCK_EPOCH: Final = ClockEvent.NEW_EPOCH
_RECEIVED_RESULT: Final = ReceivedResult
_PROCEED: Final = Decision.PROCEED
_UP: Final = LinkState.UP
_DOWN: Final = LinkState.DOWN
_new_tuple: Final = tuple.__new__  # builds a NamedTuple without its Python-level __new__


class FramePipeline:
    """One link's tracker, device clock, store and watched verdicts."""

    def __init__(
        self,
        *,
        ttl_ms: float = DEFAULT_TTL_MS,
        ttl_ms_by_type: dict[int, float] | None = None,
        reset_hold_ms: float = DEFAULT_RESET_HOLD_MS,
        max_skew_ppm: float = DEFAULT_MAX_SKEW_PPM,
        phase_error_threshold_ms: float = DEFAULT_PHASE_ERROR_THRESHOLD_MS,
        transport_delay_ns: int = 0,
        lock_after_ms: float = DEFAULT_LOCK_AFTER_MS,
    ) -> None:
        self.tracker = SequenceTracker(max_skew_ppm=max_skew_ppm)
        self.device_clock = DeviceClockEstimator(
            max_skew_ppm=max_skew_ppm,
            phase_error_threshold_ms=phase_error_threshold_ms,
            transport_delay_ns=transport_delay_ns,
            lock_after_ms=lock_after_ms,
        )
        self.store = ResultStore(
            ttl_ms=ttl_ms, ttl_ms_by_type=ttl_ms_by_type, reset_hold_ms=reset_hold_ms
        )
        self._ttl_default_ns, self._ttl_by_type = self.store.ttls_ns()
        self.link_state = LinkState.DOWN
        self.evaluation_due = False  # a result or link event may have changed a verdict
        # A routine result refreshed a verdict's target: its stale time moved (``earlier``:
        # an older capture, so the stale time must move at once).
        self.stale_refreshed = self.stale_earlier = False
        self.results_total = self.duplicates_dropped = 0
        self._watched: dict[Selector, LinkVerdict | None] = {}
        # A published PROCEED is renewed (re-published) once its valid_until_ns is this close.
        self.renew_lead_ns = round(min([ttl_ms, *(ttl_ms_by_type or {}).values()]) * 1e6) // 2
        self._published_until: dict[Selector, int] = {}  # published PROCEEDs' limits
        self._renew_at_ns: int | None = None
        self._routine_keys: dict[ResultKey, bool] = {}
        self._target_expiry_ns: dict[ResultKey, int] = {}  # current verdict targets' stale times

    # -- inputs ----------------------------------------------------------------------------

    def apply(self, results: list[VisionResult], rx_ns: int) -> list[ReceivedResult]:
        """Host-stamp and store ``results`` read at ``rx_ns``; duplicates are dropped (counted).

        This runs for every frame: its calls are direct (compiled, a method held in a local
        would be called through Python, its arguments boxed), enum members compared by
        identity, tuples built without their Python-level constructors, and the routine check
        (``_routine``) inlined.
        """
        tracker, device_clock, store = self.tracker, self.device_clock, self.store
        ttl_by_type, ttl_default_ns = self._ttl_by_type, self._ttl_default_ns
        # Neither changes identity within a read (only ``evaluate`` and ``watch`` touch them).
        routine_keys, target_expiry_ns = self._routine_keys, self._target_expiry_ns
        out: list[ReceivedResult] = []
        for result in results:
            source_id, timestamp_ms = result.source_id, result.timestamp_ms
            event = tracker.observe(source_id, result.sequence, timestamp_ms, rx_ns, result)
            if event is _DUPLICATE:
                self.duplicates_dropped += 1
                continue
            forward = event is _IN_ORDER or event is _GAP
            device_ms, epoch, clock_status, clock_event, capture_ns = device_clock.observe_frame(
                timestamp_ms, result.age_ms, rx_ns, event is _RESET, forward
            )
            if event is _RESET or clock_event is _CLOCK_RESET:
                store.device_reset(source_id, rx_ns)
            elif clock_event is _CLOCK_EPOCH:
                # A confirmed step or latency change: nothing mapped before it counts again.
                store.link_break()
            result_type = result.result_type
            valid_until_ns = (rx_ns if capture_ns is None else capture_ns) + ttl_by_type.get(
                result_type, ttl_default_ns
            )
            received = _new_tuple(
                _RECEIVED_RESULT,
                (result, rx_ns, capture_ns, device_ms, epoch, clock_status, event, valid_until_ns),
            )
            key = (source_id, result_type, result.id)
            # A result that acts: not a late one (older than the stored), not "nothing
            # tracked", not held (``ResultStore.update``: a sequence conflict, a bad field).
            held = store.sequence(source_id, event, rx_ns)
            acts = event is not _LATE and store.update(received, key, held)
            out.append(received)
            if self.evaluation_due:
                continue
            # Routine (no verdict can change): an in-order, tracked, fresh result with the
            # clock locked, whose key ``_routine`` says no verdict but a PROCEED watches. Never
            # a result that does not act (a "nothing tracked" frame, one held): it ends every
            # earlier result of its source, a PROCEED's target too.
            if (
                not forward
                or clock_status is not _LOCKED
                or not acts
                or capture_ns is None
                or rx_ns > valid_until_ns
            ):
                self.evaluation_due = True
                continue
            routine = routine_keys.get(key)
            if routine is None:
                routine = routine_keys[key] = self._routine(key)
            if not routine:
                self.evaluation_due = True
            elif key in target_expiry_ns:
                # It refreshes a verdict's target: that target's stale time moves.
                if valid_until_ns < target_expiry_ns[key]:  # an older capture (larger age)
                    self.stale_earlier = True
                target_expiry_ns[key] = valid_until_ns
                self.stale_refreshed = True
        self.results_total += len(out)
        return out

    def link_changed(self, event: LinkEvent) -> None:
        """Apply a link transition. Whatever was read before a break cannot justify a PROCEED
        after it; after a disconnection the board may have rebooted, so its clock starts a new
        epoch. Every transition may change a verdict (``evaluation_due``); the switch to UP
        comes with the read that holds the first valid frames, so evaluate it after ``apply``.
        """
        state = event.state
        if event.previous is _UP or state is _DOWN:
            self.store.link_break()
            if state is _DOWN:
                self.device_clock.new_epoch()
        self.link_state = state
        self.evaluation_due = True

    # -- verdicts --------------------------------------------------------------------------

    def watch(self, selector: Selector) -> None:
        """Keep ``selector``'s verdict: ``evaluate`` reports it when it changes."""
        self._watched.setdefault(selector, None)
        self.store.watch(selector)
        self._routine_keys.clear()

    def verdict(
        self, selector: Selector, now_ns: int, hold_until_ns: int | None = None
    ) -> LinkVerdict:
        """The verdict for ``selector`` at ``now_ns`` (``hold_until_ns``: see
        ``ResultStore.verdict``)."""
        return self.store.verdict(
            selector,
            now_ns,
            link_state=self.link_state,
            clock_status=self.device_clock.status,
            hold_until_ns=hold_until_ns,
        )

    def evaluate(
        self, now_ns: int, *, force: bool = False, hold_until_ns: int | None = None
    ) -> list[LinkVerdict]:
        """Re-evaluate every watched verdict; returns those that changed (all with ``force``).
        ``hold_until_ns``: when the caller re-evaluates at the latest (a HOLD's
        ``valid_until_ns``)."""
        self.evaluation_due = self.stale_refreshed = self.stale_earlier = False
        changed = []
        expiry_ns: dict[ResultKey, int] = {}
        proceeds_changed = False  # which keys are routine depends on which verdicts PROCEED
        for selector, last in self._watched.items():
            verdict = self.verdict(selector, now_ns, hold_until_ns)
            target = verdict.result
            if target is not None:
                expiry_ns[target.key] = verdict.valid_until_ns
            if force or not verdict.same_as(last):
                self._watched[selector] = verdict
                changed.append(verdict)
                if (last is not None and last.decision is _PROCEED) != (
                    verdict.decision is _PROCEED
                ):
                    proceeds_changed = True
                if target is None:
                    self._published_until.pop(selector, None)
                else:
                    self._published_until[selector] = verdict.valid_until_ns
        self.store.judged()
        if proceeds_changed:
            self._routine_keys.clear()
        self._target_expiry_ns = expiry_ns
        until = min(self._published_until.values(), default=None)
        self._renew_at_ns = None if until is None else until - self.renew_lead_ns
        return changed

    def renewal_due(self, now_ns: int) -> bool:
        """Whether a published PROCEED runs out (its ``valid_until_ns``) within
        ``renew_lead_ns`` of ``now_ns``: the owner re-publishes (``evaluate(force=True)``) when
        a result has renewed its target, so a consumer that honours ``valid_until_ns`` sees a
        steady PROCEED as steady, and a stalled host as HOLD."""
        return self._renew_at_ns is not None and now_ns >= self._renew_at_ns

    def take_renewal(self, now_ns: int) -> bool:
        """After routine results moved a target's stale time (``stale_refreshed``, cleared
        here with ``stale_earlier``): whether to re-publish now (``evaluate(force=True)``),
        because one moved it earlier than the published ``valid_until_ns``, or a published
        PROCEED is due for renewal (``renewal_due``). One call for both, per read."""
        earlier = self.stale_earlier
        self.stale_refreshed = self.stale_earlier = False
        return earlier or (self._renew_at_ns is not None and now_ns >= self._renew_at_ns)

    def stale_at_ns(self) -> int | None:
        """When the first current target goes stale (a verdict may change then), if any."""
        return min(self._target_expiry_ns.values(), default=None)

    def _routine(self, key: ResultKey) -> bool:
        """Whether a routine result (see ``apply``) with ``key`` cannot change any watched
        verdict, so none is re-evaluated: no watched selector matches it, or only selectors
        whose verdict is already PROCEED (``_routine_keys`` caches it until that changes)."""
        return all(
            not selects(selector, key) or (last is not None and last.decision is _PROCEED)
            for selector, last in self._watched.items()
        )

    def stats(self) -> dict[str, Any]:
        """Counters of the tracker, clock and store (JSON-ready)."""
        clock = self.device_clock.stats()
        return {
            "clock": {
                "status": clock.status.value,
                "epoch": clock.epoch,
                "skew_ppm": round(clock.skew_ppm, 3),
                "resets": clock.resets,
                "phase_errors": clock.phase_errors,
                "jumps": clock.jumps,
                "steps": clock.steps,
                "recoveries": clock.recoveries,
                "samples": clock.samples,
            },
            "sources": {str(k): v._asdict() for k, v in self.tracker.stats().items()},
            "store": self.store.stats(),
            "results": self.results_total,
            "duplicates_dropped": self.duplicates_dropped,
        }
