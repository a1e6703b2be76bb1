"""The fleet view's logic, pure: which vehicle is fresh, which is stale, and what may be shown.

A host's ``host_ns`` and ``valid_until_ns`` are its own monotonic clock; they mean nothing here.
So the view judges every vehicle by its OWN receive time (``rx_ns``, the viewer's monotonic
clock): a vehicle is ``fresh`` while its newest world line arrived at most ``ttl_ns`` ago, and
``stale`` after, whether or not anything else arrives. What the view shows as a vehicle's
verdict is PROCEED only while it is fresh, its newest line says PROCEED, and that line's own
validity has not run out when counted from its arrival (``rx_ns + valid_until_ns - host_ns``):
a stale vehicle's last PROCEED is never shown as current. The transport delay is not in
``age_ms`` (the view cannot know it without a shared clock) unless the operator vouches for
the clocks (``max_clock_error_ns``): then what the wall clocks say a line spent in transit,
beyond that bound, counts against its age. See docs/zenoh.md on freshness.

Everything takes ``now_ns``; ``next_deadline_ns`` says when the view must look again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

FRESH, STALE = "fresh", "stale"
PROCEED, HOLD = "PROCEED", "HOLD"


class FleetRow(NamedTuple):
    """One vehicle as the view shows it at ``now_ns``."""

    vehicle: str
    state: str  # fresh | stale
    verdict: str  # PROCEED only when fresh and the line's own verdict is PROCEED and valid
    reason: str | None  # why HOLD when the line said PROCEED: "stale", "expired"
    age_ms: float  # since the newest world line arrived here
    world: dict[str, Any]
    link: str | None  # the newest link line's state, if any came
    lost: int  # world lines missing from the seq numbers seen (a host restart starts over)
    delay_ms: float | None  # the newest line's transport delay by the wall clocks (offset in)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "fleet_vehicle",
            "vehicle": self.vehicle,
            "state": self.state,
            "verdict": self.verdict,
            "reason": self.reason,
            "age_ms": round(self.age_ms, 3),
            "link": self.link,
            "lost": self.lost,
            "delay_ms": None if self.delay_ms is None else round(self.delay_ms, 3),
            "world": self.world,
        }


@dataclass(slots=True)
class _Vehicle:
    world: dict[str, Any]
    rx_ns: int  # the newest line's arrival, less its charged transport delay
    link: str | None = None
    delay_ns: int | None = None  # the newest line's rx wall time - its wall_ns
    worlds: int = 0
    lost: int = 0
    shown: tuple[Any, ...] | None = None  # what the last emitted row said (change detection)


def _validity_ns(world: dict[str, Any]) -> int | None:
    try:
        return int(world["valid_until_ns"]) - int(world["host_ns"])
    except (KeyError, TypeError, ValueError):
        return None


class FleetView:
    """``max_clock_error_ns``: None, age by receive time only; else the bound the operator
    vouches for between the hosts' wall clocks and this one (NTP, PTP): a line's transport
    delay as the wall clocks see it (``rx_wall_ns - wall_ns``), less that bound, is charged
    to its age, so a publisher whose lines arrive regularly but late turns stale too."""

    def __init__(self, ttl_ns: int, max_clock_error_ns: int | None = None) -> None:
        if ttl_ns <= 0:
            raise ValueError(f"ttl_ns: expected > 0, got {ttl_ns}")
        self.ttl_ns = ttl_ns
        self.max_clock_error_ns = max_clock_error_ns
        self._vehicles: dict[str, _Vehicle] = {}
        self.invalid = 0  # world lines that were not JSON objects

    @property
    def vehicles(self) -> list[str]:
        return sorted(self._vehicles)

    def on_world(
        self, vehicle: str, world: object, rx_ns: int, rx_wall_ns: int | None = None
    ) -> None:
        """A world line that arrived at ``rx_ns`` (this machine's monotonic clock) and, if
        known, ``rx_wall_ns`` (its wall clock, for the transport delay)."""
        if not isinstance(world, dict):
            self.invalid += 1
            return
        wall_ns = world.get("wall_ns")
        delay_ns = None
        if isinstance(wall_ns, int) and rx_wall_ns is not None:
            delay_ns = rx_wall_ns - wall_ns
        since_ns = rx_ns
        if delay_ns is not None and self.max_clock_error_ns is not None:
            since_ns -= max(0, delay_ns - self.max_clock_error_ns)
        entry = self._vehicles.get(vehicle)
        if entry is None:
            self._vehicles[vehicle] = _Vehicle(world, since_ns, delay_ns=delay_ns, worlds=1)
            return
        seq, last = world.get("seq"), entry.world.get("seq")
        if isinstance(seq, int) and isinstance(last, int) and seq > last + 1:
            entry.lost += seq - last - 1
        entry.world, entry.rx_ns, entry.delay_ns = world, since_ns, delay_ns
        entry.worlds += 1

    def on_link(self, vehicle: str, link: object) -> None:
        entry = self._vehicles.get(vehicle)
        if entry is not None and isinstance(link, dict):
            state = link.get("state")
            entry.link = state if isinstance(state, str) else None

    def row(self, vehicle: str, now_ns: int) -> FleetRow:
        entry = self._vehicles[vehicle]
        age_ns = max(0, now_ns - entry.rx_ns)
        fresh = age_ns <= self.ttl_ns
        said = entry.world.get("verdict")
        reason = None
        verdict = HOLD
        if said == PROCEED:
            validity = _validity_ns(entry.world)
            if not fresh:
                reason = "stale"
            elif validity is None or age_ns > validity:
                reason = "expired"
            else:
                verdict = PROCEED
        return FleetRow(
            vehicle, FRESH if fresh else STALE, verdict, reason, age_ns / 1e6, entry.world,
            entry.link, entry.lost, None if entry.delay_ns is None else entry.delay_ns / 1e6,
        )  # fmt: skip

    def rows(self, now_ns: int) -> list[FleetRow]:
        return [self.row(v, now_ns) for v in sorted(self._vehicles)]

    def changed(self, now_ns: int, vehicles: Iterable[str] | None = None) -> list[FleetRow]:
        """The rows (of ``vehicles``, default all) that differ from the last ones returned by
        ``changed`` or ``mark_all`` (state, verdict, the line's verdict, reasons, selected
        target, link), marked as shown. A new line can change only its own vehicle's row;
        time passing, any row (``next_deadline_ns``)."""
        out = []
        for vehicle in sorted(self._vehicles if vehicles is None else vehicles):
            entry = self._vehicles.get(vehicle)
            if entry is None:
                continue
            row = self.row(vehicle, now_ns)
            shown = _shown(row)
            if shown != entry.shown:
                entry.shown = shown
                out.append(row)
        return out

    def mark_all(self, now_ns: int) -> list[FleetRow]:
        """Every row (the periodic refresh), marked as shown."""
        rows = self.rows(now_ns)
        for row in rows:
            self._vehicles[row.vehicle].shown = _shown(row)
        return rows

    def next_deadline_ns(self, now_ns: int) -> int | None:
        """The earliest time after ``now_ns`` at which a row changes with no new input: a
        fresh vehicle turning stale, or a PROCEED running out of validity."""
        due: int | None = None
        for entry in self._vehicles.values():
            candidates = [entry.rx_ns + self.ttl_ns + 1]
            validity = _validity_ns(entry.world)
            if entry.world.get("verdict") == PROCEED and validity is not None:
                candidates.append(entry.rx_ns + validity + 1)
            for when in candidates:
                if when > now_ns and (due is None or when < due):
                    due = when
        return due


def _shown(row: FleetRow) -> tuple[Any, ...]:
    world = row.world
    reasons = world.get("reasons")
    return (
        row.state,
        row.verdict,
        row.reason,
        row.link,
        world.get("verdict"),
        tuple(reasons) if isinstance(reasons, list) else reasons,
        world.get("selected"),
    )
