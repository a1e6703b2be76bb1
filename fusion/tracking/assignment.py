"""The minimum-cost assignment of rows to columns, exact, for the few detections of one frame.

The shortest-augmenting-path form of the Hungarian method (Kuhn–Munkres with potentials, as
Jonker and Volgenant arrange it): O(n²·m) for n rows and m ≥ n columns, on plain floats (at a
tracker's sizes, 1 to 20 a side, numpy's per-call cost would exceed the arithmetic). A cost
of ``math.inf`` forbids a pair. ``scipy.optimize.linear_sum_assignment`` solves the same
problem; the tests check this one against it (scipy is a test-only dependency, 113 MB).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

_INF: Final = math.inf


class Infeasible(ValueError):
    """No assignment gives every row a column it is allowed."""


def solve(cost: Sequence[Sequence[float]]) -> list[int]:
    """For each row, the column it is assigned, minimising the total cost.

    ``cost`` is n rows of m ≥ n numbers (``inf``: forbidden). Raises :class:`Infeasible`
    when some row cannot be given an allowed column, ``ValueError`` for a ragged or too wide
    matrix, or a NaN.
    """
    n = len(cost)
    if n == 0:
        return []
    m = len(cost[0])
    if m < n or any(len(row) != m for row in cost):
        raise ValueError(f"cost: expected {n} rows of the same length >= {n}")
    if any(math.isnan(c) for row in cost for c in row):
        raise ValueError("cost: expected numbers or inf, got NaN")
    # Potentials u (rows, 1-based) and v (columns, 0 is the virtual start); way: the path.
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    owner = [0] * (m + 1)  # owner[j]: the row (1-based) holding column j, 0 if free
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        owner[0] = i
        j0 = 0
        shortest = [_INF] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = owner[j0]
            row = cost[i0 - 1]
            delta = _INF
            j1 = -1
            ui0 = u[i0]
            for j in range(1, m + 1):
                if used[j]:
                    continue
                reduced = row[j - 1] - ui0 - v[j]
                if reduced < shortest[j]:
                    shortest[j] = reduced
                    way[j] = j0
                if shortest[j] < delta:
                    delta = shortest[j]
                    j1 = j
            if j1 < 0 or delta == _INF:
                raise Infeasible(f"cost: row {i - 1} has no allowed column left")
            for j in range(m + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    shortest[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:  # flip the augmenting path
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    assigned = [0] * n
    for j in range(1, m + 1):
        if owner[j]:
            assigned[owner[j] - 1] = j - 1
    return assigned


def nearest_within(costs: Sequence[float], gate: float) -> int | None:
    """The assignment of one row, without the solver: the first of the least ``costs`` that
    are within ``gate``, or ``None`` when none is (the row left unassigned at the gate's
    cost). :func:`solve` gives the same for the row ``costs`` (those beyond the gate
    forbidden) followed by ``gate``."""
    best, least = None, _INF
    for k, c in enumerate(costs):
        if c <= gate and c < least:
            best, least = k, c
    return best


def total(cost: Sequence[Sequence[float]], assigned: Sequence[int]) -> float:
    return sum(cost[i][j] for i, j in enumerate(assigned))
