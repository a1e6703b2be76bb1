"""One sender per stream: the rule that keeps a second source of a vehicle's data from
silently winning (docs/world-safety.md).

The first sender (address and port) of a stream is kept while it is heard. A message from
another sender meanwhile is a conflict: refused, and the stream stays *in conflict* until
no second sender has been heard for ``quiet_ns``. A stream whose sender has been unheard for
``quiet_ns`` may change sender: a restarted simulator sends from a new port. The new sender
then *settles* for ``settle_ns``: its messages count for nothing (the stream is in conflict),
and the old sender, back within it, is a conflict with it. A spoofer who speaks first while
the simulator restarts was believed at once; now it must speak alone for the silence and the
settle. Pure: host times are arguments.
"""

from __future__ import annotations

Sender = tuple[str, int]
SENDER_QUIET_NS = 1_000_000_000
# A restarted CopterSim takes seconds; the real one back within the silence and this settle
# makes a conflict of a spoofer that spoke first.
SENDER_SETTLE_NS = 4_000_000_000


class SenderLatch:
    """Which sender each stream listens to, and which streams are in conflict."""

    def __init__(
        self, *, quiet_ns: int = SENDER_QUIET_NS, settle_ns: int = SENDER_SETTLE_NS
    ) -> None:
        self._quiet_ns = quiet_ns
        self._settle_ns = settle_ns
        self._senders: dict[str, tuple[Sender, int]] = {}  # stream -> (sender, last heard)
        self._conflict_ns: dict[str, int] = {}  # stream -> its latest second-sender message
        self._settling: dict[str, tuple[int, str]] = {}  # stream -> (settles at, why)
        self.conflicts = self.rebinds = 0

    def refuse(self, stream: str, sender: Sender | None, rx_ns: int) -> str | None:
        """Why ``sender`` may not feed ``stream`` now (None: it may; ``None`` senders, as in
        a replay without addresses, always may)."""
        if sender is None:
            return None
        held = self._senders.get(stream)
        if held is None or held[0] == sender:
            self._senders[stream] = (sender, rx_ns)
            return None
        if rx_ns - held[1] > self._quiet_ns:
            self._senders[stream] = (sender, rx_ns)
            self.rebinds += 1
            self._settling[stream] = (
                rx_ns + self._settle_ns,
                f"{stream} from a new sender {sender[0]}:{sender[1]} "
                f"({held[0][0]}:{held[0][1]} silent): settling",
            )
            return None
        self.conflicts += 1
        self._conflict_ns[stream] = rx_ns
        return f"{stream} from {sender[0]}:{sender[1]} while {held[0][0]}:{held[0][1]} sends"

    def settling(self, stream: str, rx_ns: int) -> str | None:
        """Why ``stream``'s new sender does not count yet (``None``: it does, or it is the
        first)."""
        settling = self._settling.get(stream)
        if settling is None:
            return None
        if rx_ns >= settling[0]:
            del self._settling[stream]
            return None
        return settling[1]

    def in_conflict(self, stream: str, rx_ns: int) -> bool:
        """A second sender was heard on ``stream`` within the quiet period, or its new sender
        is settling."""
        last = self._conflict_ns.get(stream)
        recent = last is not None and rx_ns - last <= self._quiet_ns
        return recent or self.settling(stream, rx_ns) is not None

    def admits(self, stream: str, sender: Sender | None, rx_ns: int) -> bool:
        """For streams whose every message is dropped while in conflict (sensors)."""
        return self.refuse(stream, sender, rx_ns) is None and not self.in_conflict(stream, rx_ns)
