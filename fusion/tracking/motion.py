"""The target's motion: an interacting-multiple-model filter of two modes in local NED.

One constant-velocity model cannot serve both a straight run and a turn: tuned for a 0.3 g turn
it is noisy on the straight (about 0.5 m/s of velocity error at 3 m/s), tuned for the straight
it lags in the turn (about 1.6 m/s). The IMM runs two, and weighs them by how well each one
predicted the latest measurement:

- **CV**: constant velocity, little random acceleration (``cv_accel_m_s2``);
- **CT**: a coordinated turn in the horizontal plane at turn rate ω, with random acceleration
  (``ct_accel_m_s2``; along the velocity ``ct_speed_accel_m_s2`` more: a change of speed) and
  a random change of ω (``turn_accel_rad_s2``), an extended Kalman filter (the turn is
  non-linear in ω).

Both modes share one state, ``n, e, d, vn, ve, vd, ω`` (ω positive turning from north to east);
CV carries ω along without using it, so mixing the two is exact. Process noise is continuous
white noise: a σ of ``a`` m/s² is a spectral density of ``a²`` m²/s³, so one step of 2Δt equals
two of Δt. The modes switch as a continuous-time Markov chain with mean dwell times
``cv_dwell_s`` and ``ct_dwell_s``.

**Two covariances.** Each mode's ``p`` carries ``cv_accel_m_s2``: it makes the gains, the gate
and the likelihoods. On a target that really drives straight that noise is not there, and
``p`` claims about 1.3 times the actual error. So each mode also carries ``a``: the error
covariance the same gains leave when the straight mode's random acceleration is
``cv_true_accel_m_s2`` (default 0) and the turn's its own, through the same mixing,
prediction and (Joseph) update. ``a`` is what a line reports (``estimate``); the estimate
itself is ``p``'s filter's, bit for bit.

Pure: every method takes a state and returns a new one; arrays are never changed in place, so
a state can be kept as a checkpoint and replayed from.

**Cost.** At a tracker's sizes (two modes of 7) numpy's per-call overhead is most of the work,
so each step is written for few calls: the two modes go through one batched product; the
measurement's 3×3 algebra (the gate's distance, the innovation's inverse and determinant, the
mode likelihoods) is done on plain floats; the process noise is one product of precomputed
bases with (dt³/3, dt²/2, dt), kept per dt with the modes' switching probabilities (a fixed
frame rate repeats a few dt: the same values, not recomputed). The textbook form (numpy on
every matrix, one mode at a time) is the tests' oracle: this one agrees with it to 1e-9
(tests/fusion/test_tracking_exactness.py). Where it is built, ``imm_kernel.pyx`` does both
steps' array work in C, the same formulas in plain loops (about a sixth of the time; the
scalars around it stay here), and ``Imm`` uses it; it agrees with the oracle alike.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]

STATE: Final = 7  # n, e, d, vn, ve, vd, omega
MODES: Final = 2  # CV, CT
_OMEGA: Final = 6
_SMALL_TURN: Final = 1e-4  # rad/s: below it the turn's sin/cos ratios are taken by their series
_LOG_2PI: Final = math.log(2.0 * math.pi)
_MIN_PROBABILITY: Final = 1e-9  # a mode never dies out completely: it must be able to come back

# The entries of the two modes' transition matrices F that differ from the identity, in the
# order _entries() lists their values: CV's three dt, then the coordinated turn's Jacobian.
_F_INDEX: Final = (
    np.array([0, 0, 0] + [1] * 13),
    np.array([0, 1, 2, 0, 0, 1, 1, 2, 3, 3, 4, 4, 0, 1, 3, 4]),
    np.array([3, 4, 5, 3, 4, 3, 4, 5, 3, 4, 3, 4, 6, 6, 6, 6]),
)
_F_FLAT: Final = np.ravel_multi_index(_F_INDEX, (MODES, STATE, STATE))  # the same, into F's ravel
# F for both covariances of both modes (p's, then a's), filled by one ``put``
_F_FLAT2: Final = np.concatenate((_F_FLAT, _F_FLAT + MODES * STATE * STATE))
_EYES: Final = np.broadcast_to(np.eye(STATE), (MODES, STATE, STATE))
_EYES2: Final = np.broadcast_to(np.eye(STATE), (2 * MODES, STATE, STATE))
# The turn mode's change of speed: its noise fills the horizontal position and velocity block
# (n, e, vn, ve) of the turn mode's p and a (the second and fourth of the four), row-major.
_ALONG: Final = (0, 1, 3, 4)
_ALONG_FLAT: Final = np.array(
    [(m * STATE + i) * STATE + j for m in (1, 3) for i in _ALONG for j in _ALONG]
)
_SLOW_M_S: Final = 1.0  # below about this speed a change of speed has no known direction
_MAX_STEPS: Final = 64  # the per-dt constants kept: a fixed frame rate repeats a few dt
_new_tuple: Final = tuple.__new__  # builds a NamedTuple without its Python-level __new__


class MotionParams(NamedTuple):
    """The IMM's tuning (``[tracking]`` settings, in SI units)."""

    cv_accel_m_s2: float = 0.03
    ct_accel_m_s2: float = 0.15
    turn_accel_rad_s2: float = 0.3
    vertical_accel_m_s2: float = 0.01
    cv_dwell_s: float = 20.0
    ct_dwell_s: float = 4.0
    initial_speed_m_s: float = 10.0  # σ of a new track's velocity, each axis
    initial_turn_rate_rad_s: float = 0.5  # σ of a new track's ω
    cv_true_accel_m_s2: float = 0.0  # a straight run's own: the reported covariance's
    ct_speed_accel_m_s2: float = 1.0  # the turn mode's along its velocity: a change of speed


class ImmState(NamedTuple):
    """Per mode: mean ``x[j]`` (7), the covariance ``p[j]`` (7×7) the gains are made from,
    and ``a[j]``, the error covariance those gains leave under the modes' own motion (what a
    line reports); mode probabilities ``mu``. ``pa``: ``p`` then ``a`` as one (4, 7, 7)
    array, when they are its views (an update's), so that the next prediction mixes both
    without joining them first; ``None``: join them."""

    x: Array  # (2, 7)
    p: Array  # (2, 7, 7)
    mu: Array  # (2,)
    a: Array  # (2, 7, 7)
    pa: Array | None = None  # (4, 7, 7): p, then a


class Prediction(NamedTuple):
    """The modes predicted to a measurement's time, before the update; with the position
    blocks as plain floats for the measurement's 3×3 algebra."""

    x: Array  # (2, 7)
    p: Array  # (2, 7, 7)
    mu: Array  # (2,) predicted mode probabilities
    a: Array  # (2, 7, 7)
    mu_f: tuple[float, float]
    positions: list[list[float]]  # x[j, :3]
    blocks: list[list[list[float]]]  # p[j, :3, :3]
    pa: Array  # (4, 7, 7): p then a, the array they are views of


def built_kernel() -> ModuleType | None:
    """The two steps' C forms (``imm_kernel.pyx``), when built; ``None``: numpy's."""
    try:
        from fusion.tracking import imm_kernel  # noqa: PLC0415 - built, or not
    except ImportError:  # not built (no compiler, or interpreted): numpy's forms
        return None
    return imm_kernel


def stationary_mu(params: MotionParams) -> Array:
    """The long-run share of each mode: a new track's prior."""
    to_ct, to_cv = 1.0 / params.cv_dwell_s, 1.0 / params.ct_dwell_s
    return np.array([to_cv, to_ct]) / (to_cv + to_ct)


def _noise_basis(params: MotionParams) -> Array:
    """Q(dt) of both modes is (dt³/3, dt²/2, dt) times these three (2·49 each): continuous
    white acceleration on each axis, and a random walk of ω; then the same for the reported
    covariance, whose straight mode has ``cv_true_accel_m_s2``."""
    basis = np.zeros((3, 2 * MODES, STATE, STATE))
    accels = (params.cv_accel_m_s2, params.ct_accel_m_s2)
    for mode, accel in enumerate((*accels, params.cv_true_accel_m_s2, params.ct_accel_m_s2)):
        for axis, sigma in ((0, accel), (1, accel), (2, params.vertical_accel_m_s2)):
            density = sigma * sigma
            basis[0, mode, axis, axis] = density
            basis[1, mode, axis, axis + 3] = basis[1, mode, axis + 3, axis] = density
            basis[2, mode, axis + 3, axis + 3] = density
        basis[2, mode, _OMEGA, _OMEGA] = params.turn_accel_rad_s2**2
    return basis.reshape(3, 2 * MODES * STATE * STATE)


class Imm:
    """The filter of one tuning, its constants computed once. ``native``: the steps' C forms
    when built (the default), else numpy's; the two agree to 1e-9."""

    __slots__ = ("_kernel", "_noise", "_per_dt", "_prior", "_speed_density", "_switch", "params")

    def __init__(self, params: MotionParams, *, native: bool = True) -> None:
        self.params = params
        self._kernel = built_kernel() if native else None
        a, b = 1.0 / params.cv_dwell_s, 1.0 / params.ct_dwell_s
        self._switch = (a + b, a / (a + b), b / (a + b))
        self._noise = _noise_basis(params)
        self._prior = stationary_mu(params)
        self._speed_density = params.ct_speed_accel_m_s2**2
        # dt -> (leave CV, leave CT, Q(dt) of both modes): bounded, cleared when full
        self._per_dt: dict[float, tuple[float, float, Array]] = {}

    def initial_state(self, z: Array, r: Array) -> ImmState:
        """A new track at measurement ``z`` (3, NED) with covariance ``r`` (3×3), still."""
        params = self.params
        x = np.zeros(STATE)
        x[:3] = z
        p = np.zeros((STATE, STATE))
        p[:3, :3] = r
        speed_var = params.initial_speed_m_s**2
        p[3, 3] = p[4, 4] = p[5, 5] = speed_var
        p[_OMEGA, _OMEGA] = params.initial_turn_rate_rad_s**2
        both = np.stack([p, p])
        return ImmState(np.stack([x, x]), both, self._prior.copy(), both)

    def transition(self, dt_s: float) -> tuple[float, float]:
        """The probabilities of leaving CV and leaving CT within ``dt_s``."""
        both, to_ct, to_cv = self._switch
        stay = 1.0 - math.exp(-both * dt_s)
        return to_ct * stay, to_cv * stay

    def _constants(self, dt_s: float) -> tuple[float, float, Array]:
        """What a step of ``dt_s`` needs that depends on nothing else: the modes' switching
        probabilities and the process noise, kept (the same values, computed once)."""
        kept = self._per_dt
        if len(kept) >= _MAX_STEPS:
            kept.clear()
        dt2 = dt_s * dt_s
        noise = np.array((dt2 * dt_s / 3.0, dt2 / 2.0, dt_s)) @ self._noise
        noise = noise.reshape(2 * MODES, STATE, STATE)
        noise.flags.writeable = False
        kept[dt_s] = constants = (*self.transition(dt_s), noise)
        return constants

    def predict(self, state: ImmState, dt_s: float) -> Prediction:
        """Mix the modes (the IMM's interaction step), then predict each ``dt_s`` ahead."""
        kernel = self._kernel
        if kernel is not None:  # the C form makes Q(dt) from its basis: nothing kept per dt
            leave_cv, leave_ct = self.transition(dt_s)
        else:
            constants = self._per_dt.get(dt_s)
            if constants is None:
                constants = self._constants(dt_s)
            leave_cv, leave_ct, noise = constants
        t00, t01, t10, t11 = 1.0 - leave_cv, leave_cv, leave_ct, 1.0 - leave_ct
        mu0, mu1 = state.mu.tolist()
        m0, m1 = t00 * mu0 + t10 * mu1, t01 * mu0 + t11 * mu1
        # w[i][j]: the share of mode j's mixed prior that comes from mode i
        w00, w10, w01, w11 = t00 * mu0 / m0, t10 * mu1 / m0, t01 * mu0 / m1, t11 * mu1 / m1
        x, p = state.x, state.p
        pa = state.pa
        if pa is None:
            pa = np.concatenate((p, state.a))
        if kernel is not None:
            x_next, both, positions, blocks = kernel.predict(
                x, pa, w00, w10, w01, w11, self._noise, dt_s, self._speed_density, _SMALL_TURN,
                _SLOW_M_S,
            )  # fmt: skip
            return _new_tuple(
                Prediction,
                (x_next, both[:MODES], np.array([m0, m1]), both[MODES:], (m0, m1), positions,
                 blocks, both),
            )  # fmt: skip
        # The mixed means (rows 0 and 1) and x_0 - x_1 (row 2) in one product.
        weights = np.array(((w00, w10), (w01, w11), (1.0, -1.0)))
        mixed = weights @ x
        # Σ_i w_ij (x_i - x0_j)(x_i - x0_j)ᵀ is w_0j·w_1j·(x_0 - x_1)(x_0 - x_1)ᵀ for two modes
        d = mixed[2]
        spread = np.array((w00 * w10, w01 * w11))[:, None, None] * (d[:, None] * d)
        # both covariances mixed alike, each mode's by one product: p's (0, j), then a's (1, j)
        square = STATE * STATE
        p0 = weights[:2] @ pa.reshape(2, MODES, square)
        p0 = (p0 + spread.reshape(MODES, square)).reshape(2 * MODES, STATE, STATE)
        cv, ct, _ = mixed.tolist()
        values, cv_next, ct_next = _steps(cv, ct, dt_s)
        f = _EYES2.copy()
        f.put(_F_FLAT2, values + values)
        both = f @ p0 @ f.transpose(0, 2, 1) + noise
        if self._speed_density:
            flat = both.ravel()  # a view: ``both`` is new, and contiguous
            flat[_ALONG_FLAT] += along(ct[3], ct[4], dt_s, self._speed_density)
        ps = both[:MODES]
        blocks = ps[:, :3, :3].tolist()
        positions = [cv_next[:3], ct_next[:3]]
        return _new_tuple(
            Prediction,
            (
                np.array([cv_next, ct_next]),
                ps,
                np.array([m0, m1]),
                both[MODES:],
                (m0, m1),
                positions,
                blocks,
                both,
            ),
        )

    def update(
        self, prediction: Prediction, z: list[float], r: list[list[float]], r_array: Array
    ) -> ImmState:
        """Each mode's Kalman update by a position measurement ``z`` with covariance ``r``
        (plain floats; ``r_array``: the same as an array), and the modes reweighed by their
        likelihoods (a mode no likelier than 1e-9 keeps that much)."""
        kernel = self._kernel
        if kernel is not None:
            x_new, new, like0, like1 = kernel.update(
                prediction.x, prediction.pa, z[0], z[1], z[2], r_array, _LOG_2PI
            )
            return _new_tuple(
                ImmState,
                (x_new, new[:MODES], _weighed(prediction.mu_f, like0, like1), new[MODES:], new),
            )
        inverses: list[list[list[float]]] = []
        steps: list[list[float]] = []  # S⁻¹·ν: the gain K = P·Hᵀ·S⁻¹ applied to ν is P·Hᵀ·this
        log_like: list[float] = []
        for position, block in zip(prediction.positions, prediction.blocks, strict=True):
            nu = [z[0] - position[0], z[1] - position[1], z[2] - position[2]]
            (b0, b1, b2), (r0, r1, r2) = block, r
            s = [
                [b0[0] + r0[0], b0[1] + r0[1], b0[2] + r0[2]],
                [b1[0] + r1[0], b1[1] + r1[1], b1[2] + r1[2]],
                [b2[0] + r2[0], b2[1] + r2[1], b2[2] + r2[2]],
            ]
            s_inv, det = _inverse3(s)
            (i0, i1, i2) = s_inv
            step = [
                i0[0] * nu[0] + i0[1] * nu[1] + i0[2] * nu[2],
                i1[0] * nu[0] + i1[1] * nu[1] + i1[2] * nu[2],
                i2[0] * nu[0] + i2[1] * nu[1] + i2[2] * nu[2],
            ]
            d2 = nu[0] * step[0] + nu[1] * step[1] + nu[2] * step[2]
            inverses.append(s_inv)
            steps.append(step)
            log_like.append(-0.5 * (d2 + math.log(det) + 3 * _LOG_2PI))
        x, p = prediction.x, prediction.p
        columns = p[:, :, :3]  # P·Hᵀ
        gain = columns @ np.array(inverses)  # (2, 7, 3)
        x_new = x + (columns @ np.array(steps).reshape(MODES, 3, 1)).reshape(MODES, STATE)
        # Joseph form: (I - KH) P (I - KH)' + K R K', symmetric and PSD in floating point.
        gain = np.concatenate((gain, gain))
        ikh = _EYES2.copy()
        ikh[:, :, :3] -= gain
        both = prediction.pa
        new = ikh @ both @ ikh.transpose(0, 2, 1) + gain @ r_array @ gain.transpose(0, 2, 1)
        new = 0.5 * (new + new.transpose(0, 2, 1))
        mu = _weighed(prediction.mu_f, log_like[0], log_like[1])
        return _new_tuple(ImmState, (x_new, new[:MODES], mu, new[MODES:], new))


def _weighed(mu_f: tuple[float, float], like0: float, like1: float) -> Array:
    """The mode probabilities ``mu_f`` reweighed by the modes' log-likelihoods, each kept at
    least ``_MIN_PROBABILITY``."""
    top = max(like0, like1)
    mu0, mu1 = mu_f
    w0, w1 = mu0 * math.exp(like0 - top), mu1 * math.exp(like1 - top)
    total = w0 + w1
    w0, w1 = max(w0 / total, _MIN_PROBABILITY), max(w1 / total, _MIN_PROBABILITY)
    total = w0 + w1
    return np.array([w0 / total, w1 / total])


def _steps(
    cv: list[float], ct: list[float], dt: float
) -> tuple[list[float], list[float], list[float]]:
    """The values of F's non-identity entries (in ``_F_INDEX``'s order), and each mode's mean
    a step ahead: constant velocity, and the coordinated turn with its Jacobian (the EKF's)."""
    next_cv = [cv[0] + dt * cv[3], cv[1] + dt * cv[4], cv[2] + dt * cv[5], *cv[3:]]
    vn, ve, w = ct[3], ct[4], ct[_OMEGA]
    wt = w * dt
    sin_wt, cos_wt = math.sin(wt), math.cos(wt)
    if abs(w) < _SMALL_TURN:  # sin(wt)/w and (1 - cos wt)/w by their series, and d/dw
        s = dt - w * w * dt**3 / 6.0
        c = w * dt * dt / 2.0 - w**3 * dt**4 / 24.0
        ds = -w * dt**3 / 3.0
        dc = dt * dt / 2.0 - w * w * dt**4 / 8.0
    else:
        s = sin_wt / w
        c = (1.0 - cos_wt) / w
        ds = (dt * cos_wt - s) / w
        dc = (dt * sin_wt - c) / w
    next_ct = [
        ct[0] + s * vn - c * ve,
        ct[1] + c * vn + s * ve,
        ct[2] + dt * ct[5],
        cos_wt * vn - sin_wt * ve,
        sin_wt * vn + cos_wt * ve,
        ct[5],
        w,
    ]
    values = [
        dt, dt, dt,
        s, -c, c, s, dt, cos_wt, -sin_wt, sin_wt, cos_wt,
        ds * vn - dc * ve,
        dc * vn + ds * ve,
        -dt * (sin_wt * vn + cos_wt * ve),
        dt * (cos_wt * vn - sin_wt * ve),
    ]  # fmt: skip
    return values, next_cv, next_ct


def along(vn: float, ve: float, dt: float, density: float) -> list[float]:
    """The turn mode's change of speed over ``dt``: continuous white acceleration of spectral
    density ``density`` along the velocity (vn, ve), fading to the same on every horizontal
    axis below ``_SLOW_M_S`` (a target at rest may start off any way). Its 4×4 block over
    (n, e, vn, ve), row-major, as ``_ALONG_FLAT`` lists it (twice: ``p``'s, then ``a``'s)."""
    slow2 = _SLOW_M_S * _SLOW_M_S
    k = density / (vn * vn + ve * ve + slow2)
    m00, m01, m11 = k * (vn * vn + slow2), k * vn * ve, k * (ve * ve + slow2)
    t3, t2 = dt * dt * dt / 3.0, dt * dt / 2.0
    a, b, c = t3 * m00, t3 * m01, t3 * m11
    d, e, f = t2 * m00, t2 * m01, t2 * m11
    g, h, i = dt * m00, dt * m01, dt * m11
    block = [a, b, d, e, b, c, e, f, d, e, g, h, e, f, h, i]
    return block + block


def _inverse3(s: list[list[float]]) -> tuple[list[list[float]], float]:
    """The inverse of a 3×3 matrix by its adjugate, and its determinant."""
    (a, b, c), (d, e, f), (g, h, i) = s
    c00, c01, c02 = e * i - f * h, f * g - d * i, d * h - e * g
    det = a * c00 + b * c01 + c * c02
    k = 1.0 / det
    return [
        [c00 * k, (c * h - b * i) * k, (b * f - c * e) * k],
        [c01 * k, (a * i - c * g) * k, (c * d - a * f) * k],
        [c02 * k, (b * g - a * h) * k, (a * e - b * d) * k],
    ], det


def _quadratic(v: list[float], m: list[list[float]]) -> float:
    """vᵀ m v for 3-vectors."""
    v0, v1, v2 = v
    r0, r1, r2 = m
    return (
        v0 * (r0[0] * v0 + r0[1] * v1 + r0[2] * v2)
        + v1 * (r1[0] * v0 + r1[1] * v1 + r1[2] * v2)
        + v2 * (r2[0] * v0 + r2[1] * v1 + r2[2] * v2)
    )


def mahalanobis2(prediction: Prediction, z: list[float], r: list[list[float]]) -> float:
    """The squared Mahalanobis distance of measurement ``z`` from the predicted position (the
    modes' mixture, moment matched), on plain floats, written out: it runs for every pair of
    a detection and a track."""
    mu0, mu1 = prediction.mu_f
    (a0, a1, a2), (b0, b1, b2) = prediction.positions
    m0, m1, m2 = mu0 * a0 + mu1 * b0, mu0 * a1 + mu1 * b1, mu0 * a2 + mu1 * b2
    sa0, sa1, sa2 = a0 - m0, a1 - m1, a2 - m2
    sb0, sb1, sb2 = b0 - m0, b1 - m1, b2 - m2
    (pa0, pa1, pa2), (pb0, pb1, pb2) = prediction.blocks
    # cov[k][m] = mu0·pa[k][m] + mu1·pb[k][m] + (mu0·sa[k]·sa[m] + mu1·sb[k]·sb[m])
    c00 = mu0 * pa0[0] + mu1 * pb0[0] + (mu0 * sa0 * sa0 + mu1 * sb0 * sb0)
    c01 = mu0 * pa0[1] + mu1 * pb0[1] + (mu0 * sa0 * sa1 + mu1 * sb0 * sb1)
    c02 = mu0 * pa0[2] + mu1 * pb0[2] + (mu0 * sa0 * sa2 + mu1 * sb0 * sb2)
    c10 = mu0 * pa1[0] + mu1 * pb1[0] + (mu0 * sa1 * sa0 + mu1 * sb1 * sb0)
    c11 = mu0 * pa1[1] + mu1 * pb1[1] + (mu0 * sa1 * sa1 + mu1 * sb1 * sb1)
    c12 = mu0 * pa1[2] + mu1 * pb1[2] + (mu0 * sa1 * sa2 + mu1 * sb1 * sb2)
    c20 = mu0 * pa2[0] + mu1 * pb2[0] + (mu0 * sa2 * sa0 + mu1 * sb2 * sb0)
    c21 = mu0 * pa2[1] + mu1 * pb2[1] + (mu0 * sa2 * sa1 + mu1 * sb2 * sb1)
    c22 = mu0 * pa2[2] + mu1 * pb2[2] + (mu0 * sa2 * sa2 + mu1 * sb2 * sb2)
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = r
    s_inv, _ = _inverse3(
        [
            [0.5 * (c00 + c00) + r00, 0.5 * (c01 + c10) + r01, 0.5 * (c02 + c20) + r02],
            [0.5 * (c10 + c01) + r10, 0.5 * (c11 + c11) + r11, 0.5 * (c12 + c21) + r12],
            [0.5 * (c20 + c02) + r20, 0.5 * (c21 + c12) + r21, 0.5 * (c22 + c22) + r22],
        ]
    )
    return _quadratic([z[0] - m0, z[1] - m1, z[2] - m2], s_inv)


def combined(x: Array, p: Array, mu: Array) -> tuple[Array, Array]:
    """The modes' mixture as one Gaussian (moment matched): mean (7) and covariance (7×7)."""
    mean = mu @ x
    spread = x - mean
    flat = mu @ p.reshape(MODES, STATE * STATE)
    cov = flat.reshape(STATE, STATE) + (spread.T * mu) @ spread
    return mean, 0.5 * (cov + cov.T)


def estimate(state: ImmState) -> tuple[Array, Array]:
    """Position and velocity (6) and their covariance (6×6), n, e, d, vn, ve, vd."""
    mean, cov = combined(state.x, state.a, state.mu)
    return mean[:6], cov[:6, :6]
