"""The fleet view's logic, pure: whose lines speak for a vehicle, which vehicle is fresh, and
what may be shown.

**One publisher per vehicle.** Each sample carries the Zenoh identity of its publisher (the
session id in its timestamp: ``publisher``). A vehicle is bound to the first publisher whose
line it accepts. While that publisher is *present* (a line accepted in the last
``conflict_ns``), a line for the vehicle from any other identity is a second voice: dropped
(counted ``foreign``), and the row is CONFLICT, never PROCEED. A bound publisher's line whose
``seq`` or ``host_ns`` does not go forward, or whose ``host_ns`` ran ahead of our clock by more
than ``conflict_ns``, is a replay (or a second voice using the same identity): dropped
(``replayed``), and the row is CONFLICT too. A conflict ends ``conflict_ns`` after the second
voice's last line. Once the bound publisher has been silent for ``conflict_ns``, another may
take the vehicle over (a host restarted is a new session), but only with a line newer than
every line the view ever took for the vehicle (its ``wall_ns`` later than theirs, each
remembered no further ahead of this view's wall clock than ``max_clock_error_ns``, else
``WALL_AHEAD_NS``; without wall clocks, its ``host_ns``): a stopped host's old lines replayed
by anyone, however long after, are refused (``replayed``), and a line dated far ahead locks
nobody out for longer than that bound. That memory, the newest times per vehicle, outlives the
vehicle's row: a vehicle forgotten to make room keeps them (as many as ``max_vehicles``).

**Fresh or stale.** A host's ``host_ns`` and ``valid_until_ns`` are its own monotonic clock;
they mean nothing here. So the view judges every vehicle by its OWN receive time (``rx_ns``,
the viewer's monotonic clock): fresh while its newest accepted line arrived at most ``ttl_ns``
ago, stale after, whatever else arrives. What the view shows as a vehicle's verdict is PROCEED
only while there is no conflict, it is fresh, its newest line says PROCEED, and that line's
own validity has not run out when counted from its arrival (``rx_ns + valid_until_ns -
host_ns``). The transport delay is not in ``age_ms`` (the view cannot know it without a shared
clock) unless the operator vouches for the clocks (``max_clock_error_ns``): then what the wall
clocks say a line spent in transit, beyond that bound, counts against its age.

Lines that are not valid (``fleet_line``) or too large are counted on their vehicle's row and
change nothing else. Memory is bounded: at most ``max_vehicles`` vehicles, each holding its
newest line's compact form and at most ``MAX_VOICES`` other identities, and the newest times
of at most ``max_vehicles`` vehicles forgotten. Everything takes
``now_ns``; ``due`` and ``next_deadline_ns`` say which rows change with no new input, and when
(a heap with at most about one live entry per vehicle). See docs/zenoh.md.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from gizmo_host.zenoh.fleet_line import PROCEED, BadLine, WorldLine, parse_link, parse_world
from gizmo_host.zenoh.fleet_row import DROPS, FleetRow, LineJson

__all__ = ["CONFLICT", "FRESH", "HOLD", "STALE", "FleetRow", "FleetView", "LineJson"]

FRESH, STALE = "fresh", "stale"
HOLD, CONFLICT = "HOLD", "CONFLICT"
CONFLICT_NS = 1_000_000_000  # a conflict ends this long after the second voice's last line
MAX_VEHICLES = 10_000
MAX_VOICES = 8  # other identities remembered per vehicle (more: the oldest forgotten)


WALL_AHEAD_NS = 2_000_000_000  # without max_clock_error_ns: how far ahead a wall clock counts


@dataclass(slots=True)
class _Newest:
    """The latest clocks of every line the view took for a vehicle: a new publisher's line
    must be later (a replay of old lines never is). Updated in place, once per line.

    A wall clock is remembered no further ahead of this view's than ``ahead_ns`` (when the
    view knows its own): one line dated a day or a century ahead, a forger's or a host's
    whose clock was wrong once, would otherwise refuse every honest publisher after it for
    as long as the view runs (issue 28, red team round 3). A line with a wall clock is judged
    by the wall clocks only; ``host_ns``, one host's monotonic clock, only between lines
    without one.
    """

    host_ns: int
    wall_ns: int | None

    def take(self, line: WorldLine, rx_wall_ns: int | None, ahead_ns: int) -> None:
        wall = line.wall_ns
        if wall is None:  # only lines without a wall clock are judged by host_ns
            self.host_ns = max(self.host_ns, line.host_ns)
        else:
            if rx_wall_ns is not None and wall > rx_wall_ns + ahead_ns:
                wall = rx_wall_ns + ahead_ns
            if self.wall_ns is None or wall > self.wall_ns:
                self.wall_ns = wall

    def older_than(self, line: WorldLine) -> bool:
        """``line`` is later than all of them: by the wall clock when it has one (a host that
        rebooted starts its monotonic clock again; no wall clock remembered: nothing to be
        later than), else by ``host_ns``."""
        if line.wall_ns is not None:
            return self.wall_ns is None or line.wall_ns > self.wall_ns
        return line.host_ns > self.host_ns


@dataclass(slots=True)
class _Vehicle:
    line: WorldLine | None = None  # the newest accepted line
    newest: _Newest | None = None  # the latest clocks of every line ever accepted
    rx_ns: int = 0  # its arrival, less its charged transport delay
    heard_ns: int = 0  # its arrival: the bound publisher's presence
    publisher: str | None = None
    others: dict[str, int] = field(default_factory=dict)  # other identities -> last heard
    replay_until_ns: int = 0  # CONFLICT ("replay") until then
    link: str | None = None
    early_link: tuple[str, str] | None = None  # (publisher, state) of one not bound
    delay_ns: int | None = None
    lost: int = 0
    handovers: int = 0
    drops: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROPS, 0))
    shown: tuple[Any, ...] | None = None  # what the last printed row said (change detection)
    scheduled_ns: int | None = None  # its entry in the deadline heap
    cache: LineJson = field(default_factory=LineJson)


class FleetView:
    """``max_clock_error_ns``: None, age by receive time only; else the bound the operator
    vouches for between the hosts' wall clocks and this one (NTP, PTP): a line's transport
    delay as the wall clocks see it (``rx_wall_ns - wall_ns``), less that bound, is charged
    to its age, so a publisher whose lines arrive regularly but late turns stale too."""

    def __init__(
        self,
        ttl_ns: int,
        max_clock_error_ns: int | None = None,
        *,
        conflict_ns: int = CONFLICT_NS,
        max_vehicles: int = MAX_VEHICLES,
    ) -> None:
        if ttl_ns <= 0 or conflict_ns < ttl_ns or max_vehicles <= 0:
            raise ValueError(
                f"expected ttl_ns > 0, conflict_ns >= ttl_ns and max_vehicles > 0, got "
                f"{ttl_ns}, {conflict_ns}, {max_vehicles}"
            )
        self.ttl_ns = ttl_ns
        self.max_clock_error_ns = max_clock_error_ns
        self.conflict_ns = conflict_ns
        self.max_vehicles = max_vehicles
        self._vehicles: dict[str, _Vehicle] = {}
        self._forgotten: dict[str, _Newest] = {}  # the newest clocks of forgotten vehicles
        self._heap: list[tuple[int, str]] = []
        self._swept_ns = -(2**63)
        self.refused = 0  # samples of vehicles beyond max_vehicles
        self.forgotten = 0  # vehicles forgotten to make room (silent, at the limit)

    @property
    def vehicles(self) -> list[str]:
        """The vehicles with a row: an accepted line."""
        return sorted(v for v, e in self._vehicles.items() if e.line is not None)

    def drops(self) -> dict[str, int]:
        """Every vehicle's drops, summed."""
        total = dict.fromkeys(DROPS, 0)
        for entry in self._vehicles.values():
            for name, n in entry.drops.items():
                total[name] += n
        return total

    # -- input ------------------------------------------------------------------------------

    def _entry(self, vehicle: str, now_ns: int) -> _Vehicle | None:
        entry = self._vehicles.get(vehicle)
        if entry is not None:
            return entry
        if len(self._vehicles) >= self.max_vehicles and not self._sweep(now_ns):
            self.refused += 1
            return None
        entry = self._vehicles[vehicle] = _Vehicle(newest=self._forgotten.pop(vehicle, None))
        return entry

    def _sweep(self, now_ns: int) -> bool:
        """At the vehicle limit, at most once per conflict window: forget the vehicles no one
        has spoken for in that window and the TTL (stale, no conflict to end); whether any
        room was made."""
        if now_ns - self._swept_ns < self.conflict_ns:
            return False
        self._swept_ns = now_ns
        quiet = now_ns - max(self.ttl_ns, self.conflict_ns)
        silent = [v for v, e in self._vehicles.items() if _last_heard(e) < quiet]
        remembered = self._forgotten
        for vehicle in silent:
            newest = self._vehicles.pop(vehicle).newest
            if newest is not None:  # its old lines stay refused
                remembered.pop(vehicle, None)
                remembered[vehicle] = newest
                if len(remembered) > self.max_vehicles:
                    del remembered[next(iter(remembered))]  # the longest forgotten
        self.forgotten += len(silent)
        return bool(silent)

    def on_world(
        self,
        vehicle: str,
        publisher: str,
        payload: bytes | None,
        rx_ns: int,
        rx_wall_ns: int | None = None,
        *,
        skipped: int = 0,
        oversized: int = 0,
    ) -> bool:
        """A world line's bytes (None: it was over the size limit) from ``publisher`` that
        arrived at ``rx_ns`` (this machine's monotonic clock) and, if known, ``rx_wall_ns``
        (its wall clock); ``skipped``: older lines of the same publisher it superseded before
        the view got to them; ``oversized``: lines of it over the size limit. Whether the
        vehicle's row may have changed."""
        entry = self._entry(vehicle, rx_ns)
        if entry is None:
            return False
        drops = entry.drops
        drops["skipped"] += skipped
        drops["oversized"] += oversized + (payload is None)
        conflicted = self._conflict(entry, rx_ns) is not None
        if publisher != entry.publisher:
            self._voice(entry, publisher, rx_ns)
        if payload is None:
            return self._settle(vehicle, entry, rx_ns, conflicted)
        try:
            line = parse_world(payload)
        except BadLine:
            drops["invalid"] += 1
            return self._settle(vehicle, entry, rx_ns, conflicted)
        last = entry.line
        present = entry.publisher is not None and rx_ns - entry.heard_ns <= self.conflict_ns
        if present and publisher == entry.publisher:
            assert last is not None
            # its host's clock cannot have run ahead of ours by more than a window's jitter
            ahead_ns = (line.host_ns - last.host_ns) - (rx_ns - entry.heard_ns)
            back = line.seq <= last.seq or line.host_ns <= last.host_ns
            if back or ahead_ns > self.conflict_ns:
                drops["replayed"] += 1
                entry.replay_until_ns = rx_ns + self.conflict_ns
                return self._settle(vehicle, entry, rx_ns, conflicted)
            entry.lost += line.seq - last.seq - 1
        elif present:
            drops["foreign"] += 1
            return self._settle(vehicle, entry, rx_ns, conflicted)
        else:  # nobody speaks for it: a first publisher, or a new one (a restarted host)
            if entry.newest is not None and not entry.newest.older_than(line):
                drops["replayed"] += 1
                if publisher == entry.publisher:
                    entry.replay_until_ns = rx_ns + self.conflict_ns
                return self._settle(vehicle, entry, rx_ns, conflicted)
            if entry.publisher is not None and publisher != entry.publisher:
                entry.handovers += 1
            elif last is not None and line.seq > last.seq:  # back after a silence
                entry.lost += line.seq - last.seq - 1
            if publisher != entry.publisher:  # its link state, if its link line came first
                early = entry.early_link
                entry.link = early[1] if early is not None and early[0] == publisher else None
            entry.early_link = None
            entry.others.pop(publisher, None)
            entry.publisher = publisher
        self._accept(entry, line, rx_ns, rx_wall_ns)
        self._schedule(vehicle, entry, rx_ns)
        return True

    def _accept(self, entry: _Vehicle, line: WorldLine, rx_ns: int, rx_wall_ns: int | None) -> None:
        delay_ns = None
        if line.wall_ns is not None and rx_wall_ns is not None:
            delay_ns = rx_wall_ns - line.wall_ns
        since_ns = rx_ns
        if delay_ns is not None and self.max_clock_error_ns is not None:
            since_ns -= max(0, delay_ns - self.max_clock_error_ns)
        entry.line, entry.rx_ns, entry.heard_ns, entry.delay_ns = line, since_ns, rx_ns, delay_ns
        if entry.newest is None:
            entry.newest = _Newest(-1, None)
        ahead_ns = WALL_AHEAD_NS if self.max_clock_error_ns is None else self.max_clock_error_ns
        entry.newest.take(line, rx_wall_ns, ahead_ns)

    def _voice(self, entry: _Vehicle, publisher: str, rx_ns: int) -> None:
        others = entry.others
        if publisher not in others and len(others) >= MAX_VOICES:
            del others[min(others, key=others.__getitem__)]
        others[publisher] = rx_ns

    def _settle(self, vehicle: str, entry: _Vehicle, now_ns: int, conflicted: bool) -> bool:
        """After a dropped line: the row changed if the conflict began."""
        self._schedule(vehicle, entry, now_ns)
        began = not conflicted and self._conflict(entry, now_ns) is not None
        return entry.line is not None and began

    def on_link(self, vehicle: str, publisher: str, payload: bytes | None, rx_ns: int) -> bool:
        """A link line: its state is taken from the bound publisher only; another's is a
        second voice, counted like its world lines. Before any publisher is bound (a host's
        link line can come before its first world line) or while the bound one is silent,
        the newest is kept for the publisher that takes the vehicle over."""
        entry = self._entry(vehicle, rx_ns)
        if entry is None:
            return False
        conflicted = self._conflict(entry, rx_ns) is not None
        if payload is None:
            entry.drops["oversized"] += 1
            if publisher != entry.publisher:
                self._voice(entry, publisher, rx_ns)
            return self._settle(vehicle, entry, rx_ns, conflicted)
        try:
            state = parse_link(payload)
        except BadLine:
            entry.drops["invalid"] += 1
            state = None
        if publisher == entry.publisher:
            if state is None:
                return False
            entry.link = state
            return entry.line is not None
        self._voice(entry, publisher, rx_ns)
        if state is not None:  # kept in case this publisher takes the vehicle over
            entry.early_link = (publisher, state)
        if entry.publisher is None or rx_ns - entry.heard_ns > self.conflict_ns:
            return False  # nobody speaks for the vehicle: not a second voice yet
        entry.drops["foreign"] += state is not None
        return self._settle(vehicle, entry, rx_ns, conflicted)

    # -- what is shown ----------------------------------------------------------------------

    def _conflict(self, entry: _Vehicle, now_ns: int) -> str | None:
        if now_ns < entry.replay_until_ns:
            return "replay"
        since = now_ns - self.conflict_ns
        voices = sum(1 for heard in entry.others.values() if heard >= since)
        if entry.publisher is not None and entry.line is not None and entry.heard_ns >= since:
            voices += 1
        return "publishers" if voices >= 2 else None

    def row(self, vehicle: str, now_ns: int) -> FleetRow:
        entry = self._vehicles[vehicle]
        line = entry.line
        if line is None or entry.publisher is None:
            raise KeyError(vehicle)
        age_ns = max(0, now_ns - entry.rx_ns)
        fresh = age_ns <= self.ttl_ns
        conflict = self._conflict(entry, now_ns)
        verdict, reason, valid_ns = HOLD, conflict, None
        if conflict is not None:
            verdict = CONFLICT
        elif line.verdict == PROCEED:
            if not fresh:
                reason = "stale"
            elif age_ns > line.validity_ns:
                reason = "expired"
            else:
                verdict = PROCEED
                valid_ns = min(line.validity_ns, self.ttl_ns) - age_ns
        since = now_ns - self.conflict_ns
        publishers = sum(1 for heard in entry.others.values() if heard >= since)
        publishers += entry.heard_ns >= since
        return FleetRow(
            vehicle, FRESH if fresh else STALE, verdict, reason, age_ns / 1e6,
            None if valid_ns is None else valid_ns / 1e6, now_ns,
            None if valid_ns is None else now_ns + valid_ns, line,
            entry.link, entry.lost, None if entry.delay_ns is None else entry.delay_ns / 1e6,
            entry.publisher, publishers, entry.handovers, dict(entry.drops), entry.cache,
        )  # fmt: skip

    def rows(self, now_ns: int) -> list[FleetRow]:
        return [self.row(v, now_ns) for v in self.vehicles]

    def changed(self, vehicle: str, now_ns: int) -> FleetRow | None:
        """The vehicle's row if it differs from the last one ``mark``ed (state, verdict,
        reason, the line's verdict, reasons and target, link), else None."""
        entry = self._vehicles.get(vehicle)
        if entry is None or entry.line is None:
            return None
        row = self.row(vehicle, now_ns)
        return None if _shown(row) == entry.shown else row

    def mark(self, row: FleetRow) -> None:
        """``row`` was shown: ``changed`` compares with it."""
        entry = self._vehicles.get(row.vehicle)
        if entry is not None:
            entry.shown = _shown(row)

    # -- deadlines --------------------------------------------------------------------------

    def _next_change_ns(self, entry: _Vehicle, now_ns: int) -> int | None:
        """When the row changes with no new input: stale, expired, the conflict's end."""
        line = entry.line
        candidates = [entry.replay_until_ns]
        heard = sorted((*entry.others.values(), entry.heard_ns), reverse=True)
        if len(heard) >= 2:
            candidates.append(heard[1] + self.conflict_ns + 1)
        if line is not None:
            candidates.append(entry.rx_ns + self.ttl_ns + 1)
            if line.verdict == PROCEED:
                candidates.append(entry.rx_ns + line.validity_ns + 1)
        future = [when for when in candidates if when > now_ns]
        return min(future) if future else None

    def _schedule(self, vehicle: str, entry: _Vehicle, now_ns: int) -> None:
        due = self._next_change_ns(entry, now_ns)
        if due is not None and (entry.scheduled_ns is None or due < entry.scheduled_ns):
            entry.scheduled_ns = due
            heapq.heappush(self._heap, (due, vehicle))

    def due(self, now_ns: int) -> list[str]:
        """The vehicles whose rows may have changed by ``now_ns`` with no new input (each
        then scheduled for its next change)."""
        out = []
        heap = self._heap
        while heap and heap[0][0] <= now_ns:
            when, vehicle = heapq.heappop(heap)
            entry = self._vehicles.get(vehicle)
            if entry is None or entry.scheduled_ns != when:
                continue  # superseded by an earlier entry, or forgotten
            entry.scheduled_ns = None
            self._schedule(vehicle, entry, now_ns)
            out.append(vehicle)
        return out

    def next_deadline_ns(self) -> int | None:
        """The earliest time a row changes with no new input (``due`` then names it)."""
        heap = self._heap
        while heap:
            when, vehicle = heap[0]
            entry = self._vehicles.get(vehicle)
            if entry is not None and entry.scheduled_ns == when:
                return when
            heapq.heappop(heap)
        return None


def _last_heard(entry: _Vehicle) -> int:
    return max(entry.heard_ns, max(entry.others.values(), default=0))


def _shown(row: FleetRow) -> tuple[Any, ...]:
    line = row.line
    target = line.target
    return (
        row.state, row.verdict, row.reason, row.link, line.verdict, line.reasons,
        line.selected, None if target is None else target.get("position_ned_m"),
    )  # fmt: skip
