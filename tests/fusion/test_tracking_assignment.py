"""The tracker's assignment solver against scipy's ``linear_sum_assignment`` (the test-only
oracle): the same minimum total on every matrix, forbidden pairs (``inf``) never used, and
an infeasible matrix refused as scipy refuses it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from fusion.tracking.assignment import Infeasible, nearest_within, solve, total

costs = st.floats(0.0, 1e3, allow_nan=False) | st.just(math.inf)


@st.composite
def matrices(draw: st.DrawFn) -> list[list[float]]:
    n = draw(st.integers(1, 8))
    m = draw(st.integers(n, 12))
    return draw(st.lists(st.lists(costs, min_size=m, max_size=m), min_size=n, max_size=n))


def _scipy_total(cost: list[list[float]]) -> float | None:
    array = np.array(cost)
    try:
        rows, cols = linear_sum_assignment(array)
    except ValueError:  # "cost matrix is infeasible"
        return None
    found = float(array[rows, cols].sum())
    return found if math.isfinite(found) else None


@given(matrices())
def test_the_minimum_is_scipys(cost: list[list[float]]) -> None:
    expected = _scipy_total(cost)
    if expected is None:
        with pytest.raises(Infeasible):
            solve(cost)
        return
    assigned = solve(cost)
    assert len(set(assigned)) == len(assigned) == len(cost)  # one column per row, each once
    assert all(math.isfinite(cost[i][j]) for i, j in enumerate(assigned))
    assert math.isclose(total(cost, assigned), expected, rel_tol=1e-12, abs_tol=1e-9)


@given(st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_the_tracker_shape_of_twenty_by_forty(n: int, seed: int) -> None:
    """n detections against n tracks, each with its own "new track" column at the gate."""
    rng = np.random.default_rng(seed)
    gate = 9.21
    pairs = rng.uniform(0.0, 12.0, (n, n))
    pairs[pairs > gate] = math.inf
    dummies = np.full((n, n), math.inf)
    np.fill_diagonal(dummies, gate)
    cost = np.hstack([pairs, dummies]).tolist()
    assigned = solve(cost)
    expected = _scipy_total(cost)
    assert expected is not None
    assert math.isclose(total(cost, assigned), expected, rel_tol=1e-12, abs_tol=1e-9)


@given(
    st.lists(st.sampled_from([0.0, 1.5, 4.0, 9.21, 9.3, math.inf]) | st.floats(0, 20), max_size=8),
    st.sampled_from([9.21, 11.34, 4.0]),
)
def test_one_detection_takes_what_the_solver_gives_it(costs: list[float], gate: float) -> None:
    """The tracker's shortcut for a frame of one detection (ties included: the first)."""
    row = [c if c <= gate else math.inf for c in costs] + [gate]
    column = solve([row])[0]
    assert nearest_within(costs, gate) == (column if column < len(costs) else None)


def test_empty_and_bad_shapes() -> None:
    assert solve([]) == []
    with pytest.raises(ValueError, match="rows of the same length"):
        solve([[1.0], [2.0]])  # more rows than columns
    with pytest.raises(ValueError, match="rows of the same length"):
        solve([[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match="NaN"):
        solve([[math.nan]])
    with pytest.raises(Infeasible):
        solve([[math.inf, math.inf]])
