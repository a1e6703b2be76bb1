"""``gizmo-host fleet``'s engine: subscribe to ``gizmo/*/world`` and ``gizmo/*/link``, feed the
``FleetView`` on the asyncio loop, and print rows: at once on a change, every vehicle at least
every ``refresh_s``, and exactly when a row turns stale (or expired, or out of conflict) with
nothing arriving.

**From Zenoh's threads to the loop.** Each sample is stamped there (``rx_ns``, this machine's
monotonic clock, as early as can be), its publisher read from its timestamp, its size checked
(a line over ``max_line_bytes`` is never copied: counted ``oversized``), and it waits for the
loop in one slot per key and publisher: a newer line of the same publisher replaces one the
loop has not taken yet (counted ``skipped``). So a vehicle flooding, or a busy loop, costs each
publisher its own older lines and no one else's. What waits is bounded (``MAX_PENDING_KEYS``,
``MAX_PENDING_BYTES``; beyond, a sample is dropped, counted ``dropped``).

**To the output, at the pace it takes.** Rows are made when they can be printed: ``room()``
says whether the output takes more now (``gizmo-host fleet --json``: stdout's queue is below
``OUTPUT_BUDGET_BYTES``). Rows overdue for their refresh go first (printed longest ago
first), then changed rows, then rows due soon, each vehicle at most once a pass: every vehicle
is printed at least once per ``refresh_s`` as long as the output takes that many rows, changes
never starve a refresh, and a slow reader delays rows rather than dropping some vehicles'.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import zenoh

from gizmo_host.timing import LoopScheduler, Scheduler, Timer
from gizmo_host.zenoh.config import ROOT, vehicle_of
from gizmo_host.zenoh.fleet import FleetRow, FleetView

MAX_PENDING_KEYS = 16_384  # key and publisher pairs waiting for the loop
MAX_PENDING_BYTES = 32 * 1024 * 1024  # their lines' bytes (twice this at most: one batch taken)
MAX_VEHICLE_NAME = 128
DRAIN_SLOTS = 1024  # samples fed to the view per loop turn (about 30 ms of work)
TICKS_PER_REFRESH = 10  # the refresh pass runs this often per refresh_s
BATCH_ROWS = 64  # rows handed to the report at a time, room checked between batches
DEFAULT_MAX_LINE_BYTES = 64 * 1024
Report = Callable[[list[FleetRow]], None]


class _Slot:
    """What waits for the loop for one key and publisher: its newest line."""

    __slots__ = ("oversized", "payload", "rx_ns", "rx_wall_ns", "skipped")

    def __init__(self, payload: bytes | None, rx_ns: int, rx_wall_ns: int) -> None:
        self.payload = payload
        self.rx_ns = rx_ns
        self.rx_wall_ns = rx_wall_ns
        self.skipped = self.oversized = 0


def publisher_of(sample: zenoh.Sample) -> str:
    """The identity a sample claims: its timestamp's id (the publishing session's, as the
    host stamps every put; a router stamps its own on a sample that had none); "" without."""
    stamp = sample.timestamp
    return "" if stamp is None else str(stamp.get_id())


class FleetWatch:
    """``start(session)`` subscribes; ``stop()`` undeclares. ``report`` gets rows to show;
    ``room`` says whether it takes more now (default: always)."""

    def __init__(
        self,
        view: FleetView,
        report: Report,
        *,
        refresh_s: float = 1.0,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        room: Callable[[], bool] = lambda: True,
        scheduler: Scheduler | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.view = view
        self.report = report
        self.room = room
        self.scheduler = scheduler or LoopScheduler(clock)
        self._clock = clock
        self.max_line_bytes = max_line_bytes
        self._refresh_ns = round(refresh_s * 1e9)
        self._tick_ns = max(1, self._refresh_ns // TICKS_PER_REFRESH)
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], _Slot] = {}
        self._pending_bytes = 0
        self._taken: collections.deque[tuple[tuple[str, str], _Slot]] = collections.deque()
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscribers: list[zenoh.Subscriber[None]] = []
        self._deadline: Timer | None = None
        self._deadline_ns: int | None = None
        self._tick: Timer | None = None
        self._dirty: dict[str, None] = {}  # vehicles whose row may have changed, in order
        self._printed: collections.OrderedDict[str, int] = collections.OrderedDict()
        self.samples = self.dropped = self.invalid = self.rows = 0

    def start(self, session: zenoh.Session) -> None:
        self._loop = asyncio.get_running_loop()
        for kind in ("world", "link"):
            self._subscribers.append(
                session.declare_subscriber(f"{ROOT}/*/{kind}", self._on_sample)
            )
        self._arm_tick(self.scheduler.now_ns())

    def stop(self) -> None:
        for subscriber in self._subscribers:
            subscriber.undeclare()  # type: ignore[no-untyped-call]
        self._subscribers.clear()
        for timer in (self._deadline, self._tick):
            if timer is not None:
                timer.cancel()

    def stats(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "dropped": self.dropped,
            "invalid": self.invalid,
            "rows": self.rows,
            "vehicles": len(self.view.vehicles),
            "refused": self.view.refused,
            **self.view.drops(),
        }

    # -- Zenoh's threads -------------------------------------------------------------------

    def _on_sample(self, sample: zenoh.Sample) -> None:
        payload = sample.payload
        self.offer(
            str(sample.key_expr),
            publisher_of(sample),
            payload.to_bytes() if len(payload) <= self.max_line_bytes else None,
            self._clock(),
            time.time_ns(),
        )

    def offer(
        self, key_expr: str, publisher: str, payload: bytes | None, rx_ns: int, rx_wall_ns: int
    ) -> None:
        """A sample for the loop (from Zenoh's threads, or a test's): ``payload`` None when it
        was over the size limit."""
        key = (key_expr, publisher)
        size = 0 if payload is None else len(payload)
        with self._lock:
            self.samples += 1
            slot = self._pending.get(key)
            if slot is None:
                if len(self._pending) >= MAX_PENDING_KEYS or self._full(size):
                    self.dropped += 1
                    return
                self._pending[key] = _Slot(payload, rx_ns, rx_wall_ns)
                self._pending_bytes += size
            elif payload is None:
                slot.oversized += 1  # the line waiting stays: it is still the newest usable
            else:
                held = 0 if slot.payload is None else len(slot.payload)
                if self._full(size - held):
                    self.dropped += 1
                    return
                slot.skipped += slot.payload is not None
                slot.payload, slot.rx_ns, slot.rx_wall_ns = payload, rx_ns, rx_wall_ns
                self._pending_bytes += size - held
            if self._scheduled or self._loop is None:
                return
            self._scheduled = True
        with contextlib.suppress(RuntimeError):  # a closed loop: the command is ending
            self._loop.call_soon_threadsafe(self.drain)

    def _full(self, more: int) -> bool:
        return more > 0 and self._pending_bytes + more > MAX_PENDING_BYTES

    # -- the loop --------------------------------------------------------------------------

    def drain(self) -> None:
        """Feed the view what waits, at most ``DRAIN_SLOTS`` per loop turn (the timers and
        the output get their turns between), then print what changed."""
        with self._lock:
            if not self._taken:
                self._taken.extend(self._pending.items())
                self._pending, self._pending_bytes = {}, 0
            self._scheduled = False
        taken, view = self._taken, self.view
        for _ in range(DRAIN_SLOTS if self._loop is not None else len(taken)):
            if not taken:
                break
            (key_expr, publisher), slot = taken.popleft()
            vehicle = vehicle_of(key_expr)
            if vehicle is None or len(vehicle) > MAX_VEHICLE_NAME:
                self.invalid += 1
                continue
            if key_expr.endswith("/world"):
                touched = view.on_world(
                    vehicle, publisher, slot.payload, slot.rx_ns, slot.rx_wall_ns,
                    skipped=slot.skipped, oversized=slot.oversized,
                )  # fmt: skip
            else:
                touched = view.on_link(vehicle, publisher, slot.payload, slot.rx_ns)
            if touched:
                self._dirty[vehicle] = None
                if vehicle not in self._printed:  # new: the most overdue for its first row
                    self._printed[vehicle] = -(2**63)
                    self._printed.move_to_end(vehicle, last=False)
        self._flush()
        if taken and self._loop is not None:
            with self._lock:
                self._scheduled = True
            self._loop.call_soon(self.drain)

    def _flush(self) -> None:
        """Print, while there is room: the rows overdue for their refresh (printed longest
        ago first: a vehicle never printed is the most overdue), the changed rows, then the
        rows due for their refresh within the next two ticks (one tick early: a busy loop
        runs late). Then arm the timer for the next
        change that needs no input. Overdue rows go first so that changes (which can come
        faster than any output takes rows) never starve a vehicle of its refresh."""
        now = self.scheduler.now_ns()
        view, dirty, printed = self.view, self._dirty, self._printed
        soon = now + 2 * self._tick_ns - self._refresh_ns  # a tick's margin for a late loop
        due = [v for v, _ in itertools.takewhile(lambda item: item[1] <= soon, printed.items())]
        overdue = now - self._refresh_ns
        cut = next((i for i, v in enumerate(due) if printed[v] > overdue), len(due))
        self._refresh_rows(due[:cut], now, overdue)
        while dirty and self.room():
            batch: list[FleetRow] = []
            while dirty and len(batch) < BATCH_ROWS:
                vehicle = next(iter(dirty))
                del dirty[vehicle]
                row = view.changed(vehicle, now)
                if row is not None:
                    batch.append(row)
            self._emit(batch, now)
        self._refresh_rows(due[cut:], now, soon)
        self._arm_deadline()

    def _refresh_rows(self, vehicles: list[str], now_ns: int, printed_before: int) -> None:
        """Print ``vehicles``' rows, those not printed since ``printed_before``, while there
        is room."""
        view, printed = self.view, self._printed
        for start in range(0, len(vehicles), BATCH_ROWS):
            if not self.room():
                return
            batch = []
            for vehicle in vehicles[start : start + BATCH_ROWS]:
                at = printed.get(vehicle)
                if at is None or at > printed_before:
                    continue  # printed meanwhile (a change), or forgotten
                try:
                    batch.append(view.row(vehicle, now_ns))
                except KeyError:  # forgotten by the view
                    del printed[vehicle]
            self._emit(batch, now_ns)

    def _emit(self, batch: list[FleetRow], now_ns: int) -> None:
        printed = self._printed
        for row in batch:
            self.view.mark(row)
            printed[row.vehicle] = now_ns
            printed.move_to_end(row.vehicle)
        if batch:
            self.rows += len(batch)
            self.report(batch)

    def _arm_deadline(self) -> None:
        due = self.view.next_deadline_ns()
        if due == self._deadline_ns:
            return
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline_ns = due
        self._deadline = None if due is None else self.scheduler.call_at_ns(due, self._on_due)

    def _on_due(self) -> None:
        self._deadline = self._deadline_ns = None
        for vehicle in self.view.due(self.scheduler.now_ns()):
            self._dirty[vehicle] = None
        self._flush()

    def _arm_tick(self, now_ns: int) -> None:
        due = now_ns + self._tick_ns
        self._tick = self.scheduler.call_at_ns(due, lambda: self._on_tick(due))

    def _on_tick(self, due_ns: int) -> None:
        self._arm_tick(due_ns)
        self._flush()


async def watch_fleet(
    config: Any,
    view: FleetView,
    stop: asyncio.Event,
    report: Report,
    room: Callable[[], bool] = lambda: True,
) -> FleetWatch:
    """Open a session for ``config`` (a ``ZenohConfig``), report ``view``'s rows until
    ``stop`` is set, close; the watch, for its counters."""
    from gizmo_host.zenoh.session import open_session  # noqa: PLC0415 - keeps the import light

    loop = asyncio.get_running_loop()
    session = await loop.run_in_executor(None, open_session, config)
    watch = FleetWatch(view, report, max_line_bytes=config.max_line_bytes, room=room)
    try:
        watch.start(session)
        await stop.wait()
    finally:
        watch.stop()
        await loop.run_in_executor(None, session.close)
    return watch
