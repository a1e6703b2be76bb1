"""Which TIMESYNC answers answer us: our requests outstanding, and the ones already answered.

An answer counts only if its ``ts1`` is a request of ours still outstanding (the last
``keep``), read within ``deadline_ns`` of sending it; otherwise it is refused by name:
``unmatched`` (no such request), ``replayed`` (that request was answered already) or
``late``. The round trip of an answer that counts is returned. Pure: host times are
arguments; the estimator behind keeps its own round-trip gate.
"""

from __future__ import annotations

from collections import OrderedDict

UNMATCHED, REPLAYED, LATE = "unmatched", "replayed", "late"


class TimesyncRequests:
    """Our outstanding TIMESYNC requests (see the module docstring)."""

    def __init__(self, *, deadline_ns: int, keep: int = 64) -> None:
        self._deadline_ns = deadline_ns
        self._keep = keep
        self._outstanding: OrderedDict[int, int] = OrderedDict()  # ts1 -> host send time
        self._answered: OrderedDict[int, None] = OrderedDict()

    def sent(self, ts1: int, host_ns: int) -> None:
        self._outstanding[ts1] = host_ns
        if len(self._outstanding) > self._keep:
            self._outstanding.popitem(last=False)  # never answered

    def answer(self, ts1: int, host_rx_ns: int) -> int | str:
        """The round trip (ns) of an answer that counts, else why it is refused."""
        sent = self._outstanding.pop(ts1, None)
        if sent is None:
            return REPLAYED if ts1 in self._answered else UNMATCHED
        self._answered[ts1] = None
        if len(self._answered) > self._keep:
            self._answered.popitem(last=False)
        rtt = host_rx_ns - sent
        return LATE if rtt > self._deadline_ns else rtt
