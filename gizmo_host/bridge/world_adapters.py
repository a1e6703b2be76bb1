"""The live link's values as :mod:`fusion` inputs.

Pure: values in, frozen fusion inputs out, no clock read and no I/O, so a replay or a test
feeds the world model exactly as ``gizmo-host run`` does. As :mod:`fusion.inputs` describes:

- ``ReceivedResult`` -> ``VisionObservation``: tracked/lost from flags bits 0/1, ``has_box``
  from ``is_target``, the capture time from ``reference_ns()``, ``clock_locked`` when the
  device clock is LOCKED (``clock_converging`` while it converges on its first epoch);
  preceded by ``LinkStatus(device_reset=True)`` when the sequence tracker saw the board
  restart;
- ``LinkEvent`` -> ``LinkStatus``.

A result the model cannot take (a field off the protocol's scale, or a ``result_sequence``
that is not the frame's: ``store.invalid``; the model's own checks too) is counted, never
raised, and so is one of a source whose sequence went back without a reset lately
(``tracker.SequenceConflicts``): either becomes a frame of its source that saw nothing, which
ends the source's earlier measurements as the link's store does.
"""

from __future__ import annotations

from typing import Final

from fusion import Input, InvalidInput, LinkStatus, VisionObservation, vision_observation
from gizmo_core import HoldReason, LinkState
from gizmo_host.stream.clock import ClockStatus
from gizmo_host.stream.events import LinkEvent, ReceivedResult
from gizmo_host.stream.store import invalid
from gizmo_host.stream.tracker import SequenceConflicts, SequenceEvent
from gizmo_host.wire.protocol import ResultFlags
from gizmo_host.wire.result_checks import is_target
from gizmo_host.wire.results import interpret

_LOCKED: Final = ClockStatus.LOCKED
_CONVERGING: Final = ClockStatus.CONVERGING
_SEQUENCE_CONFLICT: Final = HoldReason.SEQUENCE_CONFLICT
_INVALID_RESULT: Final = HoldReason.INVALID_RESULT
_RESET: Final = SequenceEvent.RESET
_TRACKED: Final = int(ResultFlags.TRACKED)
_LOST: Final = int(ResultFlags.LOST)
_TRACKED_OR_LOST: Final = _TRACKED | _LOST
_MAX_LABELS: Final = 1024  # label cache entries: (source_id, result_type, id) seen


def result_label(result_type: int, ident: int) -> str:
    """A result's class as a word: ``pedestrian``, ``red``, ``qr_code``, ``motion``..."""
    fields = _Fields(result_type, ident)
    interpretation = interpret(fields)
    named = getattr(interpretation, "label", None) or getattr(interpretation, "color", None)
    return named.name.lower() if named is not None else str(interpretation.kind)


class _Fields:
    """The payload fields ``interpret`` reads; only type and id decide the label."""

    __slots__ = ("id", "result_type")
    x = 0
    y = 0
    w = 0
    h = 0
    aux = 0

    def __init__(self, result_type: int, ident: int) -> None:
        self.result_type = result_type
        self.id = ident


class GizmoAdapter:
    """``ReceivedResult`` and ``LinkEvent`` from the live link as fusion inputs."""

    def __init__(self) -> None:
        self._state = LinkState.DOWN
        # (source_id, result_type, id) -> (label, has_box, key): what a result's class says,
        # and the observation's key, worked out once
        self._classes: dict[tuple[int, int, int], tuple[str, bool, str]] = {}
        self._conflicts = SequenceConflicts()
        self.counts: dict[str, int] = {
            "results": 0,
            "device_resets": 0,
            "dropped_invalid": 0,
            "unsettled": 0,
        }

    def link(self, event: LinkEvent) -> LinkStatus:
        self._state = event.state  # one LinkState for the link and the world
        return LinkStatus(event.host_ns, self._state)

    def result(self, received: ReceivedResult) -> tuple[Input, ...]:
        """The observation, after a device reset marker when the board restarted."""
        observation = self.observation(received)
        if received.sequence_event is _RESET:
            self.counts["device_resets"] += 1
            marker = LinkStatus(received.host_rx_ns, self._state, device_reset=True)
            return (marker,) if observation is None else (marker, observation)
        return () if observation is None else (observation,)

    def observation(self, received: ReceivedResult) -> VisionObservation | None:
        """The result as an observation; one held (a field off the protocol's scale, a source
        unsettled: counted) as its source's frame that saw nothing (``None``: the model's own
        checks refused even that); a device reset marker is ``result``'s to add."""
        r, rx_ns, capture_ns, _, epoch, status, event, _ = received
        source_id, result_type, ident, flags = r.source_id, r.result_type, r.id, r.flags
        named = self._classes.get((source_id, result_type, ident))
        if named is None:
            key = f"{source_id}:{result_type}:{ident}"
            named = (result_label(result_type, ident), is_target(result_type, ident), key)
            if len(self._classes) < _MAX_LABELS:
                self._classes[source_id, result_type, ident] = named
        confidence, x, y, w, h = r.confidence, r.x, r.y, r.w, r.h
        withheld = None
        if self._conflicts.observe(source_id, event, rx_ns):
            self.counts["unsettled"] += 1
            if not self._conflicts.active(source_id, rx_ns):
                return None  # one sign alone: that frame only, what it follows stands
            withheld = _SEQUENCE_CONFLICT
        elif invalid(r) is not None and flags & _TRACKED_OR_LOST == _TRACKED:
            self.counts["dropped_invalid"] += 1
            withheld = _INVALID_RESULT
        if withheld is not None:  # a frame of its source that saw nothing, and why
            flags, confidence, x, y, w, h = 0, 0, 0, 0, 0, 0
        try:
            observation = vision_observation(
                source_id,
                result_type,
                ident,
                named[0],
                confidence,
                flags & _TRACKED != 0,
                flags & _LOST != 0,
                named[1] and withheld is None,
                x,
                y,
                w,
                h,
                rx_ns if capture_ns is None else capture_ns,
                rx_ns,
                epoch,
                status is _LOCKED,
                status is _CONVERGING,
                named[2],
                withheld,
            )
        except InvalidInput:
            self.counts["dropped_invalid"] += 1  # the model's own checks
            return None
        self.counts["results"] += 1
        return observation
