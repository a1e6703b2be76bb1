"""``gizmo-host fleet``'s engine: subscribe to ``gizmo/*/world`` and ``gizmo/*/link``, feed the
``FleetView`` on the asyncio loop, and report rows: at once on a change, every row at least
every ``refresh_s``, and exactly when a vehicle turns stale with nothing arriving.

Samples arrive on Zenoh's threads: each is stamped there (``rx_ns``, this machine's monotonic
clock, as early as can be) and queued, bounded (the oldest dropped, counted), for the loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

import zenoh

from gizmo_host.timing import LoopScheduler, Scheduler, Timer
from gizmo_host.zenoh.config import ROOT, vehicle_of
from gizmo_host.zenoh.fleet import FleetRow, FleetView

MAX_PENDING = 8192  # samples waiting for the loop
Report = Callable[[list[FleetRow]], None]


class FleetWatch:
    """``start(session)`` subscribes; ``stop()`` undeclares. ``report`` gets rows to show."""

    def __init__(
        self,
        view: FleetView,
        report: Report,
        *,
        refresh_s: float = 1.0,
        scheduler: Scheduler | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.view = view
        self.report = report
        self.scheduler = scheduler or LoopScheduler(clock)
        self._clock = clock
        self._refresh_ns = round(refresh_s * 1e9)
        self._pending: collections.deque[tuple[str, bytes, int, int]] = collections.deque()
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscribers: list[zenoh.Subscriber[None]] = []
        self._deadline: Timer | None = None
        self._deadline_ns: int | None = None
        self._refresh: Timer | None = None
        self.samples = self.dropped = self.undecodable = 0

    def start(self, session: zenoh.Session) -> None:
        self._loop = asyncio.get_running_loop()
        for kind in ("world", "link"):
            self._subscribers.append(
                session.declare_subscriber(f"{ROOT}/*/{kind}", self._on_sample)
            )
        self._arm_refresh(self.scheduler.now_ns())

    def stop(self) -> None:
        for subscriber in self._subscribers:
            subscriber.undeclare()  # type: ignore[no-untyped-call]
        self._subscribers.clear()
        for timer in (self._deadline, self._refresh):
            if timer is not None:
                timer.cancel()

    def stats(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "dropped": self.dropped,
            "undecodable": self.undecodable + self.view.invalid,
            "vehicles": len(self.view.vehicles),
        }

    # -- Zenoh's threads -------------------------------------------------------------------

    def _on_sample(self, sample: zenoh.Sample) -> None:
        rx_ns, rx_wall_ns = self._clock(), time.time_ns()
        pending = self._pending
        if len(pending) >= MAX_PENDING:
            try:
                pending.popleft()
                self.dropped += 1
            except IndexError:
                pass
        pending.append((str(sample.key_expr), sample.payload.to_bytes(), rx_ns, rx_wall_ns))
        if not self._scheduled and self._loop is not None:
            self._scheduled = True
            with contextlib.suppress(RuntimeError):  # a closed loop: the command is ending
                self._loop.call_soon_threadsafe(self._drain)

    # -- the loop --------------------------------------------------------------------------

    def _drain(self) -> None:
        self._scheduled = False
        pending = self._pending
        touched: set[str] = set()
        while pending:
            key_expr, payload, rx_ns, rx_wall_ns = pending.popleft()
            vehicle = self.feed(key_expr, payload, rx_ns, rx_wall_ns)
            if vehicle is not None:
                touched.add(vehicle)
        self._report_changes(touched)

    def feed(
        self, key_expr: str, payload: bytes, rx_ns: int, rx_wall_ns: int | None = None
    ) -> str | None:
        """One sample into the view (``_drain``, or a test or bench without Zenoh); its
        vehicle, if it is one of ours."""
        vehicle = vehicle_of(key_expr)
        if vehicle is None:
            return None
        self.samples += 1
        try:
            message = json.loads(payload)
        except ValueError:
            self.undecodable += 1
            return None
        if key_expr.endswith("/world"):
            self.view.on_world(vehicle, message, rx_ns, rx_wall_ns)
        else:
            self.view.on_link(vehicle, message)
        return vehicle

    def _report_changes(self, vehicles: set[str] | None = None) -> None:
        """The rows that changed (of ``vehicles``: those a sample just came for; None: all)."""
        now = self.scheduler.now_ns()
        rows = self.view.changed(now, vehicles)
        if rows:
            self.report(rows)
        self._arm_deadline(now)

    def _arm_deadline(self, now_ns: int) -> None:
        due = self.view.next_deadline_ns(now_ns)
        if due == self._deadline_ns:
            return
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline_ns = due
        self._deadline = None if due is None else self.scheduler.call_at_ns(due, self._on_due)

    def _on_due(self) -> None:
        self._deadline = self._deadline_ns = None
        self._report_changes()

    def _arm_refresh(self, now_ns: int) -> None:
        due = now_ns + self._refresh_ns
        self._refresh = self.scheduler.call_at_ns(due, lambda: self._on_refresh(due))

    def _on_refresh(self, due_ns: int) -> None:
        self._arm_refresh(due_ns)
        rows = self.view.mark_all(self.scheduler.now_ns())
        if rows:
            self.report(rows)


async def watch_fleet(
    config: Any, ttl_ns: int, clock_error_ns: int | None, stop: asyncio.Event, report: Report
) -> None:
    """Open a session for ``config``, report the fleet's rows until ``stop`` is set, close."""
    from gizmo_host.zenoh.session import open_session  # noqa: PLC0415 - keeps the import light

    loop = asyncio.get_running_loop()
    session = await loop.run_in_executor(None, open_session, config)
    watch = FleetWatch(FleetView(ttl_ns, clock_error_ns), report)
    try:
        watch.start(session)
        await stop.wait()
    finally:
        watch.stop()
        await loop.run_in_executor(None, session.close)
