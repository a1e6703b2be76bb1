"""A run of samples in a row: how many, since when, and the lowest (oldest-looking) level."""

from __future__ import annotations


class Run:
    """Samples in a row: started by the first; ``add`` starts it again from a sample more than
    its tolerance below where it started (the earlier ones were late against it: the lock's
    rule; a jump's runs pass an infinite tolerance and keep counting)."""

    __slots__ = ("count", "low", "ref", "since_host", "since_x")

    def __init__(self, x: float, host_ns: int, phase: float) -> None:
        self.restart(x, host_ns, phase)

    def restart(self, x: float, host_ns: int, phase: float) -> None:
        self.count = 1
        self.since_x = x
        self.since_host = host_ns
        self.ref = self.low = phase

    def add(self, x: float, host_ns: int, phase: float, tolerance: float) -> bool:
        """Count one more; False when it started the run again."""
        if phase < self.ref - tolerance:
            self.restart(x, host_ns, phase)
            return False
        self.count += 1
        self.low = min(self.low, phase)
        return True

    def confirmed(self, samples: int, host_ns: int, span_ns: float) -> bool:
        return self.count >= samples and host_ns - self.since_host >= span_ns
