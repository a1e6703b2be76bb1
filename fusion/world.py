"""The world model: inputs in with ``apply``, one trustworthy snapshot out with ``snapshot``.

Pure and single-threaded: inputs carry host ``time.monotonic_ns()`` stamps and ``snapshot``
takes ``now_ns``; nothing here reads a clock, sleeps or does I/O. The latest host time seen on
any input or snapshot is the model's clock, which expires waiting measurements.

:class:`WorldModel` is built in three layers, each a base of the next, so every call on the
per-frame path stays a plain method call: the state, the inputs and the placement
(:mod:`fusion.intake`), the verdict check with its memo and the deadlines
(:mod:`fusion.verdict_check`), and here the snapshot's assembly.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from gizmo_core import Decision, HoldReason, LinkState

from . import estimates
from .snapshot import SourceState, SourceStatus, TargetState, VehicleState, WorldSnapshot
from .verdict_check import Verdict, VerdictCheck
from .verdicts import Conditions, ordered

__all__ = ["Verdict", "WorldModel"]

_LINK_SOURCE_STATES: Final[Mapping[LinkState, SourceState]] = MappingProxyType(
    {LinkState.UP: SourceState.OK, LinkState.SILENT: SourceState.STALE}
)


class WorldModel(VerdictCheck):
    """Joins vision results, link state, poses, gimbal and ranges into per-target verdicts."""

    def snapshot(self, now_ns: int) -> WorldSnapshot:
        """The world at ``now_ns``: verdicts, targets, vehicle and sources.

        Also advances the model's clock (waiting measurements whose wait is over are placed)
        and forgets targets unseen for ``forget_after_ms``; and judges a device reset
        (``judged``): the snapshot that says ``device_reset`` first is its last past the hold.
        """
        context, judged, selected, tracks = self._judge(now_ns)
        self.judged()
        tracker = self._tracker
        states = [estimates.target_state(j, now_ns, tracker) for j in judged]
        chosen: TargetState | None = None
        if selected is None:
            verdict, reasons = Decision.HOLD, ordered({*context.common, HoldReason.NO_DATA})
            until = self._next_deadline(now_ns, tracks)
        else:
            chosen = states[selected]
            verdict, reasons = chosen.verdict, chosen.reasons
            until = self._valid_until_ns(judged[selected], now_ns, tracks)
        states.sort(key=lambda s: s.capture_ns, reverse=True)
        if tracker is not None and chosen is not None:  # a key may have several tracks:
            states.remove(chosen)  # the one the verdict is about comes first
            states.insert(0, chosen)
        self._seq += 1
        return WorldSnapshot(
            self._seq,
            now_ns,
            now_ns if until is None else until,
            verdict,
            reasons,
            None if chosen is None else chosen.key,
            self._vehicle(now_ns),
            self._source_states(now_ns, context.c),
            tuple(states),
        )

    def _vehicle(self, now_ns: int) -> VehicleState | None:
        newest = self._history.newest
        if newest is None:
            return None
        return VehicleState(
            newest.copter_id,
            newest.host_ns,
            (now_ns - newest.host_ns) / 1e6,
            newest.epoch,
            newest.position_ned_m,
            newest.quaternion_wxyz,
            newest.velocity_ned_m_s,
        )

    def _source_states(self, now_ns: int, c: Conditions) -> dict[str, SourceStatus]:
        book = self._sources
        out: dict[str, SourceStatus] = {}
        for name in book.names():
            if name == "link":
                if self._link_ns is None:
                    out[name] = SourceStatus(SourceState.DEAD, None)
                    continue
                state = _LINK_SOURCE_STATES.get(self._link_state, SourceState.DEAD)
                if c.reset_held and state is SourceState.OK:
                    state = SourceState.RESYNC
                out[name] = SourceStatus(state, (now_ns - self._link_ns) / 1e6)
            elif name == "vision":
                resync = not self._vision_locked or c.reset_held
                out[name] = book.status(name, now_ns, resync=resync)
            elif name == "pose":
                resync = c.clock_jump or c.pose_clock_locking
                out[name] = book.status(name, now_ns, resync=resync)
            else:
                out[name] = book.status(name, now_ns)
        return out
