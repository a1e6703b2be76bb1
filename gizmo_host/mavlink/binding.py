"""One autopilot per session, bound by its ids and its address: who may speak for it.

The MAVLink form of the RflySim path's one-sender-per-stream rule
(:mod:`gizmo_host.bridge.senders`): the first sender is kept while it is heard, and a second
voice is a conflict, never a vote. Pure: host times are arguments.

- **bind**: a HEARTBEAT of an autopilot the target ids allow (``MAV_AUTOPILOT`` other than
  INVALID, unless both target ids are given) binds its ``(system, component)`` and the address
  it came from (``None`` on a stream link: TCP or serial has one peer);
- **accept**: the bound ids from the bound address; everything else is refused:
- **conflict**: the bound ids from another address, or a second autopilot the target ids also
  allow (``target_system = 0`` hearing two: not "first wins"). The binding is *in conflict*
  until no second voice has been heard for ``quiet_ns``; every message of a voice once in
  conflict (its ids and address) keeps it so;
- **rebind**: once the bound autopilot has sent no HEARTBEAT for ``rebind_ns`` (the link
  timeout: its link is DOWN), a HEARTBEAT that would bind binds anew: its ids from a new
  address (an autopilot that restarted sends from a new port), or, when the target ids allow
  it, another autopilot (the session then maps its clock from scratch: a new epoch). Only its
  own HEARTBEAT keeps a binding: a voice that only answers our requests (TIMESYNC) would
  otherwise hold the binding, and the world, for as long as it answers;
- **foreign**: other systems (a ground station, another vehicle the target ids exclude);
  **unbound**: anything before the first binding HEARTBEAT.
"""

from __future__ import annotations

from enum import Enum

Source = tuple[str, int]
Voice = tuple[int, int, "Source | None"]  # (system, component, address)
AUTOPILOT_INVALID = 8  # MAV_AUTOPILOT_INVALID: a ground station, a camera, a companion
_MAX_VOICES = 32  # second voices remembered; the oldest is forgotten first


class Heard(Enum):
    """What one message from one voice is to the session."""

    ACCEPTED = "accepted"
    BOUND = "bound"  # this HEARTBEAT bound the autopilot
    REBOUND = "rebound"  # this HEARTBEAT moved the binding to a new address
    CONFLICT = "conflict"
    FOREIGN = "foreign"
    UNBOUND = "unbound"


def describe(voice: Voice) -> str:
    system, component, source = voice
    where = "the link" if source is None else f"{source[0]}:{source[1]}"
    return f"system {system}/{component} from {where}"


class AutopilotBinding:
    """The bound autopilot and the second voices heard (see the module docstring)."""

    def __init__(
        self, target_system: int, target_component: int, *, quiet_ns: int, rebind_ns: int
    ) -> None:
        self._target = (target_system, target_component)
        self._quiet_ns = quiet_ns
        self._rebind_ns = rebind_ns
        self.bound: Voice | None = None
        self._bound_heard_ns = 0
        self._voices: dict[Voice, int] = {}  # second voice -> last heard
        self.last_conflict: str | None = None

    def hear(self, voice: Voice, autopilot: int | None, rx_ns: int) -> Heard:
        """Judge one message; ``autopilot`` is a HEARTBEAT's MAV_AUTOPILOT, else ``None``."""
        bound = self.bound
        if voice == bound:
            if autopilot is not None:  # its own HEARTBEAT: an answer to us proves nothing
                self._bound_heard_ns = rx_ns
            return Heard.ACCEPTED
        claims = autopilot is not None and self._allows(voice, autopilot)
        if bound is None:
            if not claims:
                return Heard.UNBOUND
            self.bound, self._bound_heard_ns = voice, rx_ns
            return Heard.BOUND
        if claims and rx_ns - self._bound_heard_ns > self._rebind_ns:
            self.bound, self._bound_heard_ns = voice, rx_ns
            self._voices.pop(voice, None)
            return Heard.REBOUND
        if voice[:2] == bound[:2] or claims or voice in self._voices:
            return self._conflict(voice, rx_ns)
        return Heard.FOREIGN

    def _allows(self, voice: Voice, autopilot: int) -> bool:
        system, component = self._target
        if (system and voice[0] != system) or (component and voice[1] != component):
            return False
        return bool(system and component) or autopilot != AUTOPILOT_INVALID

    def _conflict(self, voice: Voice, rx_ns: int) -> Heard:
        self._voices.pop(voice, None)
        self._voices[voice] = rx_ns
        if len(self._voices) > _MAX_VOICES:
            del self._voices[next(iter(self._voices))]
        assert self.bound is not None
        self.last_conflict = f"{describe(voice)} while bound to {describe(self.bound)}"
        return Heard.CONFLICT

    def in_conflict(self, now_ns: int) -> bool:
        """A second voice was heard within ``quiet_ns`` of ``now_ns``."""
        latest = max(self._voices.values(), default=None)
        return latest is not None and now_ns - latest <= self._quiet_ns
