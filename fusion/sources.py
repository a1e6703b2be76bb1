"""Per-input health for the snapshot's ``sources``: OK, STALE, DEAD, RESYNC or FAULT.

A source is listed once it is expected (vision, link, and pose when configured) or once it has
sent anything. Its state comes from the age of its newest input against its stale threshold
(``[world] source_stale_ms``) and ``source_dead_ms``; RESYNC (its clock is re-acquiring) and
FAULT (inputs dropped as inconsistent, for its stale threshold or the hold the world model
gives the fault) override OK and STALE.
"""

from __future__ import annotations

from collections.abc import Iterable

from .config import SOURCE_STALE_MS, WorldConfig
from .snapshot import SourceState, SourceStatus


class SourceBook:
    def __init__(self, config: WorldConfig, *, expected: Iterable[str] = ()) -> None:
        self._stale_ns = {
            name: round(config.source_stale_ms.get(name, default) * 1e6)
            for name, default in SOURCE_STALE_MS.items()
        }
        self._dead_ns = round(config.source_dead_ms * 1e6)
        self._expected = list(expected)
        self._last_ns: dict[str, int] = {}
        self._fault_until_ns: dict[str, int] = {}
        self.faults: dict[str, int] = {}

    def expect(self, name: str) -> None:
        if name not in self._expected:
            self._expected.append(name)

    def seen(self, name: str, host_ns: int) -> None:
        if host_ns > self._last_ns.get(name, -(2**63)):
            self._last_ns[name] = host_ns

    def fault(self, name: str, host_ns: int, hold_ns: int | None = None) -> None:
        """Count an input of ``name`` dropped as inconsistent; FAULT for ``hold_ns`` (default:
        the source's stale period)."""
        self.faults[name] = self.faults.get(name, 0) + 1
        until = host_ns + (self._stale_ns.get(name, self._dead_ns) if hold_ns is None else hold_ns)
        self._fault_until_ns[name] = max(until, self._fault_until_ns.get(name, until))

    def names(self) -> list[str]:
        return self._expected + [n for n in self._last_ns if n not in self._expected]

    def status(self, name: str, now_ns: int, *, resync: bool = False) -> SourceStatus:
        last = self._last_ns.get(name)
        if last is None:
            return SourceStatus(SourceState.DEAD, None)
        age_ns = now_ns - last
        stale_ns = self._stale_ns.get(name, self._dead_ns)
        if age_ns > self._dead_ns:
            state = SourceState.DEAD
        elif now_ns <= self._fault_until_ns.get(name, -(2**63)):
            state = SourceState.FAULT
        elif resync:
            state = SourceState.RESYNC
        elif age_ns > stale_ns:
            state = SourceState.STALE
        else:
            state = SourceState.OK
        return SourceStatus(state, age_ns / 1e6)
