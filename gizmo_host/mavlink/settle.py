"""What the session tells the world about its link: UP only once a new binding has settled.

The first HEARTBEAT that the target ids allow binds the autopilot (:mod:`.binding`). Without
signing, nothing tells the autopilot from a sender that spoke first with its ids: such a
sender, bound, would have its poses PROCEED until the real autopilot's first message made a
conflict. The real autopilot is heard within one heartbeat period (PX4 and ArduPilot send
HEARTBEAT at 1 Hz, and stream at tens of Hz once asked), so a new binding (``bound_ns``)
tells the world UP only ``settle_ns`` after it was made: a second voice in that time is a
conflict before anything PROCEEDs. A link that comes back on the same binding (a radio fade)
is UP at once; DOWN is told at once, and cancels an UP still waiting.
"""

from __future__ import annotations

from collections.abc import Callable

from gizmo_host.timing import Scheduler, Timer

LinkCallback = Callable[[bool, int, str], None]


class LinkTeller:
    """Tells ``on_link`` (the world's pose link) UP and DOWN, an UP held until settled."""

    def __init__(self, on_link: LinkCallback | None, scheduler: Scheduler, settle_ns: int):
        if settle_ns < 0:
            raise ValueError(f"bind_settle_s: expected >= 0, got {settle_ns / 1e9!r}")
        self._on_link = on_link
        self._scheduler = scheduler
        self._settle_ns = settle_ns
        self._timer: Timer | None = None
        self.told_up = False

    def up(self, host_ns: int, bound_ns: int) -> None:
        """The link is up (a HEARTBEAT at ``host_ns``) on a binding made at ``bound_ns``."""
        if self._on_link is None or self.told_up or self._timer is not None:
            return
        settled_ns = bound_ns + self._settle_ns
        if host_ns >= settled_ns:
            self._tell_up(host_ns, "heartbeat")
        else:
            self._timer = self._scheduler.call_at_ns(settled_ns, self._settled)

    def _settled(self) -> None:
        self._timer = None
        seconds = self._settle_ns / 1e9
        self._tell_up(self._scheduler.now_ns(), f"heartbeat; bound {seconds:g} s ago")

    def _tell_up(self, host_ns: int, reason: str) -> None:
        self.told_up = True
        assert self._on_link is not None
        self._on_link(True, host_ns, reason)

    def down(self, host_ns: int, reason: str) -> None:
        """The link is down: an UP still waiting is cancelled; DOWN is told if UP was."""
        self.cancel()
        if self.told_up and self._on_link is not None:
            self.told_up = False
            self._on_link(False, host_ns, reason)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def reset(self) -> None:
        """The session stopped: nothing pending, and the next UP is told again."""
        self.cancel()
        self.told_up = False
