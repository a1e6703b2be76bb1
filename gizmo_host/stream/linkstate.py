"""The serial link's state machine as data: (state, input) -> next state.

The link feeds it what happened (an open started or failed, a valid frame, silence, a lost
connection, a stop) and publishes the ``LinkEvent`` it returns. Sans-I/O: tests drive it with
inputs alone. An input the table does not list for a state is a bug in the caller: it raises.
"""

from __future__ import annotations

from enum import Enum
from types import MappingProxyType

from gizmo_core import LinkState
from gizmo_host.errors import IllegalTransition
from gizmo_host.stream.events import LinkEvent


class LinkInput(Enum):
    OPEN_STARTED = "open_started"
    OPEN_FAILED = "open_failed"
    OPENED = "opened"
    FRAME = "frame"  # a valid frame was read
    SILENCE = "silence"  # no valid frame for silent_after_s
    LOST = "lost"  # the connection ended (hang-up, EOF, read error)
    STOPPED = "stopped"  # the link was told to stop


# The reasons of the transitions that the bytes and the clock decide, and of a stop: the live
# link and offline replay say the same.
REASON_OPENED = "port open, waiting for a valid frame"
REASON_FRAME = "valid frame received"
REASON_STOPPED = "stopped"


def silence_reason(silent_after_s: float) -> str:
    return f"no valid frame for {silent_after_s:g} s"


_D, _C, _SY, _U, _SI = (
    LinkState.DOWN,
    LinkState.CONNECTING,
    LinkState.SYNCING,
    LinkState.UP,
    LinkState.SILENT,
)
_I = LinkInput

TRANSITIONS = MappingProxyType(
    {
        _D: {_I.OPEN_STARTED: _C, _I.STOPPED: _D},
        _C: {_I.OPEN_FAILED: _D, _I.OPENED: _SY, _I.STOPPED: _D},
        _SY: {_I.FRAME: _U, _I.SILENCE: _SI, _I.LOST: _D, _I.STOPPED: _D},
        _U: {_I.FRAME: _U, _I.SILENCE: _SI, _I.LOST: _D, _I.STOPPED: _D},
        _SI: {_I.FRAME: _U, _I.SILENCE: _SI, _I.LOST: _D, _I.STOPPED: _D},
    }
)


class LinkStateMachine:
    """The current state of one link and the count of transitions it made."""

    __slots__ = ("path", "state", "transitions")

    def __init__(self, path: str) -> None:
        self.path = path
        self.state = LinkState.DOWN
        self.transitions = 0

    def feed(self, link_input: LinkInput, reason: str, now_ns: int) -> LinkEvent | None:
        """Apply ``link_input``; the ``LinkEvent`` when the state changed, else None."""
        try:
            state = TRANSITIONS[self.state][link_input]
        except KeyError:
            raise IllegalTransition(self.state.value, link_input.value) from None
        previous = self.state
        if state is previous:
            return None
        self.state = state
        self.transitions += 1
        return LinkEvent(state, previous, now_ns, reason, self.path, self.transitions)
