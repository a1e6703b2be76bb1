"""The tracker's filter and noise model are optimised for few numpy calls (closed forms for the
two modes' mixing, the measurement's 3×3 algebra on plain floats); they must give what the
plain textbook form gives (``tests.support.tracking_reference``, numpy on every matrix, one
mode at a time), to 1e-9, on random states, steps and measurements, and over whole runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import geometry as g
from fusion.targets import RayFrame
from fusion.tracking.motion import (
    _MAX_STEPS,
    Imm,
    ImmState,
    MotionParams,
    built_kernel,
    estimate,
    mahalanobis2,
)
from fusion.tracking.noise import NoiseParams, PixelScale, position_covariance
from tests.support import tracking_reference as ref

# not the gains' (0.03), nor 0; and the turn mode's change of speed
PARAMS = MotionParams(cv_true_accel_m_s2=0.012, ct_speed_accel_m_s2=1.3)
TOLERANCE = 1e-9
# Both forms of the filter's steps: numpy's, and the C one (imm_kernel.pyx) where it is built
# (tests/gizmo_core/test_native.py: a compiled build always has it).
NUMPY_IMM, NATIVE_IMM = Imm(PARAMS, native=False), Imm(PARAMS)
FORMS = pytest.mark.parametrize(
    "imm",
    [
        pytest.param(NUMPY_IMM, id="numpy"),
        pytest.param(
            NATIVE_IMM,
            id="native",
            marks=pytest.mark.skipif(NATIVE_IMM._kernel is None, reason="imm_kernel not built"),
        ),
    ],
)


def _close(new: np.ndarray, old: np.ndarray) -> bool:
    """Within 1e-9 of the reference, relative to its largest entry (a covariance's entries
    span orders of magnitude; their rounding is relative to the whole matrix's)."""
    scale = max(float(np.abs(old).max()), 1e-300)
    return bool(np.abs(new - old).max() <= TOLERANCE * scale)


def _spd(rng: np.random.Generator, n: int, scales: np.ndarray) -> np.ndarray:
    a = rng.normal(size=(n, n)) * 0.3 + np.eye(n)
    m = a @ a.T
    return m * np.outer(scales, scales)


def _state(seed: int) -> ImmState:
    rng = np.random.default_rng(seed)
    scales = np.array([0.05, 0.05, 0.02, 0.3, 0.3, 0.05, 0.2])
    x = np.stack([rng.normal(size=7) * (5, 5, 0.1, 4, 4, 0.1, 0.5) for _ in range(2)])
    x[1, :3] = x[0, :3] + rng.normal(size=3) * 0.05  # the modes agree roughly
    p = np.stack([_spd(rng, 7, scales * rng.uniform(0.5, 3)) for _ in range(2)])
    a = np.stack([_spd(rng, 7, scales * rng.uniform(0.3, 1)) for _ in range(2)])
    mu0 = float(rng.uniform(0.01, 0.99))
    return ImmState(x, p, np.array([mu0, 1.0 - mu0]), a)


def _measurement(seed: int, near: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + 1)
    r = _spd(rng, 3, np.array([0.04, 0.04, 0.02]) * rng.uniform(0.3, 3))
    return near[:3] + rng.normal(size=3) * 0.1, r


@FORMS
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(1e-4, 0.6), st.booleans())
def test_one_step_is_the_textbook_ones(imm: Imm, seed: int, dt_s: float, slow_turn: bool) -> None:
    state = _state(seed)
    if slow_turn:  # ω below _SMALL_TURN: the turn's series
        state.x[1, 6] = 3e-5
    new, old = imm.predict(state, dt_s), ref.predict(state, dt_s, PARAMS)
    assert _close(new.x, old.x) and _close(new.p, old.p) and _close(new.mu, old.mu)
    assert _close(new.a, old.a)
    z, r = _measurement(seed, old.x[0])
    d2 = mahalanobis2(new, z.tolist(), r.tolist())
    assert math.isclose(d2, ref.mahalanobis2(old, z, r), rel_tol=TOLERANCE)
    after, after_ref = imm.update(new, z.tolist(), r.tolist(), r), ref.update(old, z, r)
    assert _close(after.x, after_ref.x) and _close(after.p, after_ref.p)
    assert _close(after.mu, after_ref.mu) and _close(after.a, after_ref.a)
    mean, cov = estimate(after)
    mean_ref, cov_ref = ref.estimate(after_ref)
    assert _close(mean, mean_ref) and _close(cov, cov_ref)


@FORMS
def test_a_whole_run_stays_with_the_textbook_one(imm: Imm) -> None:
    """Thirty seconds of a turning target at 30 frames/s: the differences of rounding do not
    grow through the filter."""
    rng = np.random.default_rng(7)
    r = np.diag([0.04**2, 0.04**2, 0.02**2])
    z0 = np.array([0.0, 0.0, 0.0])
    new = imm.initial_state(z0, r)
    old = ref.initial_state(z0, r, PARAMS)
    heading, speed, position = 0.3, 5.0, np.zeros(3)
    for k in range(1, 900):
        dt = 1 / 30 + rng.uniform(-0.002, 0.002)
        turn = 0.59 if 300 <= k < 540 else 0.0
        heading += turn * dt
        position = position + dt * speed * np.array([math.cos(heading), math.sin(heading), 0])
        z = position + rng.normal(size=3) * (0.04, 0.04, 0.02)
        new = imm.update(imm.predict(new, dt), z.tolist(), r.tolist(), r)
        old = ref.update(ref.predict(old, dt, PARAMS), z, r)
    assert _close(new.x, old.x) and _close(new.p, old.p) and _close(new.mu, old.mu)
    assert _close(new.a, old.a)


@FORMS
@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.floats(1e-4, 0.6), min_size=1, max_size=6))
def test_an_updated_state_predicts_as_the_same_state_with_its_covariances_apart(
    imm: Imm, seed: int, steps: list[float]
) -> None:
    """An update's state carries ``p`` and ``a`` as one array (``pa``), which the next
    prediction mixes without joining them: bit for bit what the two apart give (``pa``
    None, as a new track's or a test's state), step after step."""
    state = _state(seed)
    for k, dt_s in enumerate(steps):
        joined, apart = imm.predict(state, dt_s), imm.predict(state._replace(pa=None), dt_s)
        for a, b in zip(joined, apart, strict=True):
            assert type(a) is type(b)
            if isinstance(a, np.ndarray):
                assert a.tobytes() == b.tobytes()
            else:
                assert a == b
        z, r = _measurement(seed + k, joined.x[0])
        state = imm.update(joined, z.tolist(), r.tolist(), r)
        assert state.pa is not None
        assert state.pa[:2].tobytes() == state.p.tobytes()  # p, then a: the order matters
        assert state.pa[2:].tobytes() == state.a.tobytes()
        assert not np.array_equal(state.p, state.a)


@pytest.mark.parametrize("native", [False, True], ids=["numpy", "native"])
def test_a_step_is_the_same_whatever_steps_came_before(native: bool) -> None:
    """The per-dt constants are kept: a step of a dt seen before (however many others came
    between, past the bound) is bit for bit a fresh filter's, and a dt 1 ps away is its own."""
    state, dt = _state(3), 1 / 30
    imm = Imm(PARAMS, native=native)
    first = imm.predict(state, dt)
    for k in range(300):
        imm.predict(state, 0.001 + k * 1e-4)
    assert len(imm._per_dt) <= _MAX_STEPS  # bounded
    again, fresh = imm.predict(state, dt), Imm(PARAMS, native=native).predict(state, dt)
    for a, b in ((first, fresh), (again, fresh)):
        assert np.array_equal(a.x, b.x) and np.array_equal(a.p, b.p)
        assert np.array_equal(a.mu, b.mu)
    near = imm.predict(state, dt + 1e-12)
    assert not np.array_equal(near.p, fresh.p)
    assert np.array_equal(near.p, Imm(PARAMS, native=native).predict(state, dt + 1e-12).p)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.booleans(),
    st.booleans(),
    st.floats(0.5, 80.0),
)
def test_the_noise_model_is_the_textbook_one(
    seed: int, ground_plane: bool, moving: bool, range_m: float
) -> None:
    rng = np.random.default_rng(seed)
    q = g.quat_normalize(tuple(float(c) for c in rng.normal(size=4)))
    bearing = g.normalize((1.0, float(rng.uniform(-1, 1)), float(rng.uniform(-0.8, 0.8))))
    if abs(g.quat_rotate(q, bearing)[2]) < 0.05:  # nearly level: no ground-plane fix
        q = (1.0, 0.0, 0.0, 0.0)
        bearing = g.normalize((1.0, 0.1, 0.9))
    velocity = tuple(float(c) for c in rng.uniform(-5, 5, 3)) if moving else None
    rate = tuple(float(c) for c in rng.uniform(-2, 2, 3)) if moving else None
    moved_m = float(rng.uniform(0.0, 2.0)) if moving else 0.0  # a lone range reading's age
    frame = RayFrame((1.0, 2.0, -10.0), q, 320.0, 300.0, velocity, rate, None, moved_m)
    params = NoiseParams(*(float(c) for c in rng.uniform(0.01, 1.0, 6)))
    scale = PixelScale(0.32, 0.24)
    new = position_covariance(bearing, frame, range_m, ground_plane, scale, params)
    old = ref.position_covariance(bearing, frame, range_m, ground_plane, scale, params)
    assert _close(new, old)
    assert np.array_equal(new, new.T)


@pytest.mark.parametrize("native", [False, True], ids=["numpy", "native"])
def test_the_reported_covariance_is_the_gains_own_when_the_straight_run_has_their_noise(
    native: bool,
) -> None:
    """The reported covariance (``a``) follows the gains' (``p``) through mixing, prediction
    and update; only the straight mode's noise tells them apart. With that noise the gains'
    own, the two are the same bit for bit; with less, the reported one is smaller."""
    rng = np.random.default_rng(11)
    r = np.diag([0.04**2, 0.04**2, 0.02**2])
    same = Imm(MotionParams(cv_true_accel_m_s2=PARAMS.cv_accel_m_s2), native=native)
    less = Imm(MotionParams(cv_true_accel_m_s2=0.0), native=native)
    states = [imm.initial_state(np.zeros(3), r) for imm in (same, less)]
    for k in range(1, 120):
        z = np.array([0.1 * k, 0.0, 0.0]) + rng.normal(size=3) * (0.04, 0.04, 0.02)
        states = [
            imm.update(imm.predict(state, 1 / 30), z.tolist(), r.tolist(), r)
            for imm, state in zip((same, less), states, strict=True)
        ]
    kept, smaller = states
    assert np.array_equal(kept.a, kept.p)
    assert np.array_equal(smaller.p, kept.p) and np.array_equal(smaller.x, kept.x)
    horizontal = estimate(kept)[1][:2, :2] - estimate(smaller)[1][:2, :2]
    assert np.all(np.linalg.eigvalsh(horizontal) > 0)  # strictly less: a real difference


@FORMS
@pytest.mark.parametrize(
    ("scale", "error"),
    [(-1.0, ZeroDivisionError), (-2.0, ValueError)],
    ids=["singular", "negative"],
)
def test_an_impossible_innovation_raises_as_the_textbook_arithmetic_does(
    imm: Imm, scale: float, error: type[Exception]
) -> None:
    """A position block of ``scale``·R: the innovation covariance is singular (its inverse
    divides by zero) or negative definite (the log of its determinant is undefined). Both
    forms raise what plain arithmetic raises, never a state made of it."""
    prediction = imm.predict(_state(5), 1 / 30)
    r = np.diag([0.04, 0.04, 0.02])
    pa = prediction.pa.copy()
    pa[0, :3, :3] = scale * r
    bad = prediction._replace(pa=pa, p=pa[:2], blocks=pa[:2, :3, :3].tolist())
    with pytest.raises(error):
        imm.update(bad, [1.0, 2.0, 3.0], r.tolist(), r)


@FORMS
def test_a_measurement_that_is_not_a_number_gives_nan_in_both_forms(imm: Imm) -> None:
    """NaN spreads through either form alike (the tracker's inputs are checked before this:
    here the forms must merely agree, and not raise)."""
    prediction = imm.predict(_state(9), 1 / 30)
    r = np.diag([0.04, 0.04, 0.02])
    state = imm.update(prediction, [math.nan, 0.0, 0.0], r.tolist(), r)
    assert np.isnan(state.x).all() and np.isnan(state.mu).all()
    reference = NUMPY_IMM.update(prediction, [math.nan, 0.0, 0.0], r.tolist(), r)
    assert np.array_equal(np.isnan(state.p), np.isnan(reference.p))


KERNEL = built_kernel()
needs_kernel = pytest.mark.skipif(KERNEL is None, reason="imm_kernel not built")


@needs_kernel
def test_the_c_form_reads_a_state_in_any_layout() -> None:
    """A state's arrays in Fortran order or as strided views (numpy makes either from an
    innocent slice or transpose) give exactly what C-ordered ones give."""
    state = _state(21)
    joined = np.concatenate((state.p, state.a))
    plain = NATIVE_IMM.predict(state._replace(pa=joined), 1 / 30)
    wide = np.zeros((4, 7, 14))
    wide[:, :, ::2] = joined  # every other column: a view with strides of its own
    odd = state._replace(x=np.asfortranarray(state.x), pa=wide[:, :, ::2])
    for a, b in zip(plain, NATIVE_IMM.predict(odd, 1 / 30), strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    r = np.diag([0.04, 0.04, 0.02])
    z = plain.x[0, :3].tolist()
    after = NATIVE_IMM.update(plain, z, r.tolist(), r)
    odd_prediction = plain._replace(x=np.asfortranarray(plain.x), pa=np.asfortranarray(plain.pa))
    again = NATIVE_IMM.update(odd_prediction, z, r.tolist(), np.asfortranarray(r))
    assert np.array_equal(after.pa, again.pa) and np.array_equal(after.x, again.x)


@needs_kernel
@pytest.mark.parametrize(
    ("name", "x", "pa"),
    [
        ("x", np.zeros((2, 3)), np.zeros((4, 7, 7))),
        ("x", np.zeros((1, 7)), np.zeros((4, 7, 7))),
        ("pa", np.zeros((2, 7)), np.zeros((2, 7, 7))),
        ("pa", np.zeros((2, 7)), np.zeros((4, 7, 3))),
    ],
)
def test_the_c_form_refuses_arrays_of_another_shape(
    name: str, x: np.ndarray, pa: np.ndarray
) -> None:
    """Its loops do not check their indices: a wrong shape is refused at the door, by name,
    rather than read past its end."""
    assert KERNEL is not None
    basis = NATIVE_IMM._noise
    with pytest.raises(ValueError, match=rf"^{name}: expected shape"):
        KERNEL.predict(x, pa, 0.5, 0.5, 0.5, 0.5, basis, 0.03, 1.0, 1e-4, 1.0)
    with pytest.raises(ValueError, match=rf"^{name}: expected shape"):
        KERNEL.update(x, pa, 0.0, 0.0, 0.0, np.eye(3), 1.8)
    good_x, good_pa = np.zeros((2, 7)), np.zeros((4, 7, 7))
    with pytest.raises(ValueError, match=r"^basis: expected shape"):
        KERNEL.predict(
            good_x, good_pa, 0.5, 0.5, 0.5, 0.5, np.zeros((3, 100)), 0.03, 1.0, 1e-4, 1.0
        )
    with pytest.raises(ValueError, match=r"^r: expected shape"):
        KERNEL.update(good_x, good_pa, 0.0, 0.0, 0.0, np.eye(2), 1.8)
