"""``Backoff``: how long a retry loop waits after failures in a row.

One value for every reconnect loop (the serial link, the MAVLink transport, the Zenoh sink and
the UDP receiver's socket errors): ``first_s`` after the first failure, ``factor`` times longer
after each further one, never more than ``max_s``. It holds no state: the loop counts its own
failures and resets the count on success, so the same value can be shared and tested as a
table. It lives here, with no imports, because ``rfly_link`` may not import ``gizmo_host``
while ``gizmo_host`` may import ``rfly_link`` (``gizmo_host.timing`` re-exports it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Backoff"]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff: ``delay_s(n)`` after ``n`` failures in a row."""

    first_s: float
    max_s: float
    factor: float = 2.0

    def __post_init__(self) -> None:
        first_s, max_s, factor = self.first_s, self.max_s, self.factor
        if not (math.isfinite(first_s) and math.isfinite(max_s) and 0 < first_s <= max_s):
            raise ValueError(
                f"backoff: expected 0 < first_s <= max_s, both finite, got {first_s!r} and "
                f"{max_s!r}"
            )
        if not (math.isfinite(factor) and factor >= 1):
            raise ValueError(f"backoff: expected a finite factor >= 1, got {factor!r}")

    def delay_s(self, failures: int) -> float:
        """The wait after ``failures`` failures in a row: ``first_s`` for 0 or 1 (0: a
        connection that ended after it worked is retried as soon as a first failure)."""
        if failures <= 1 or self.factor == 1:
            return self.first_s
        # Beyond the step that reaches max_s the exponent no longer matters: cap it so a loop
        # that fails for a year computes no huge power.
        steps = min(failures - 1, self._steps_to_max())
        return min(self.max_s, self.first_s * self.factor**steps)

    def _steps_to_max(self) -> int:
        return math.ceil(math.log(self.max_s / self.first_s, self.factor)) + 1
