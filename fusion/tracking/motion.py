"""The target's motion: an interacting-multiple-model filter of two modes in local NED.

One constant-velocity model cannot serve both a straight run and a turn: tuned for a 0.3 g turn
it is noisy on the straight (about 0.5 m/s of velocity error at 3 m/s), tuned for the straight
it lags in the turn (about 1.6 m/s). The IMM runs two, and weighs them by how well each one
predicted the latest measurement:

- **CV**: constant velocity, little random acceleration (``cv_accel_m_s2``);
- **CT**: a coordinated turn in the horizontal plane at turn rate ω, with random acceleration
  (``ct_accel_m_s2``) and a random change of ω (``turn_accel_rad_s2``), an extended Kalman
  filter (the turn is non-linear in ω).

Both modes share one state, ``n, e, d, vn, ve, vd, ω`` (ω positive turning from north to east);
CV carries ω along without using it, so mixing the two is exact. Process noise is continuous
white noise: a σ of ``a`` m/s² is a spectral density of ``a²`` m²/s³, so one step of 2Δt equals
two of Δt. The modes switch as a continuous-time Markov chain with mean dwell times
``cv_dwell_s`` and ``ct_dwell_s``.

Pure and numpy-only: every function takes a state and returns a new one; arrays are never
changed in place, so a state can be kept as a checkpoint and replayed from.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]

STATE = 7  # n, e, d, vn, ve, vd, omega
MODES = 2  # CV, CT
_OMEGA = 6
_SMALL_TURN = 1e-4  # rad/s: below it the turn's sin/cos ratios are taken by their series
_LOG_2PI = math.log(2.0 * math.pi)
_MIN_PROBABILITY = 1e-9  # a mode never dies out completely: it must be able to come back


class MotionParams(NamedTuple):
    """The IMM's tuning (``[tracking]`` settings, in SI units)."""

    cv_accel_m_s2: float = 0.05
    ct_accel_m_s2: float = 0.15
    turn_accel_rad_s2: float = 0.2
    vertical_accel_m_s2: float = 0.01
    cv_dwell_s: float = 10.0
    ct_dwell_s: float = 1.0
    initial_speed_m_s: float = 10.0  # σ of a new track's velocity, each axis
    initial_turn_rate_rad_s: float = 0.5  # σ of a new track's ω


class ImmState(NamedTuple):
    """Per mode: mean ``x[j]`` (7) and covariance ``p[j]`` (7×7); mode probabilities ``mu``."""

    x: Array  # (2, 7)
    p: Array  # (2, 7, 7)
    mu: Array  # (2,)


class Prediction(NamedTuple):
    """The modes predicted to a measurement's time, before the update."""

    x: Array  # (2, 7)
    p: Array  # (2, 7, 7)
    mu: Array  # (2,) predicted mode probabilities


def stationary_mu(params: MotionParams) -> Array:
    """The long-run share of each mode: a new track's prior."""
    to_ct, to_cv = 1.0 / params.cv_dwell_s, 1.0 / params.ct_dwell_s
    return np.array([to_cv, to_ct]) / (to_cv + to_ct)


def initial_state(z: Array, r: Array, params: MotionParams) -> ImmState:
    """A new track at measurement ``z`` (3, NED) with covariance ``r`` (3×3), still."""
    x = np.zeros(STATE)
    x[:3] = z
    p = np.zeros((STATE, STATE))
    p[:3, :3] = r
    speed_var = params.initial_speed_m_s**2
    p[3, 3] = p[4, 4] = p[5, 5] = speed_var
    p[_OMEGA, _OMEGA] = params.initial_turn_rate_rad_s**2
    return ImmState(np.stack([x, x]), np.stack([p, p]), stationary_mu(params))


def transition(dt_s: float, params: MotionParams) -> Array:
    """``T[i, j]``: the probability of mode ``j`` after ``dt_s`` given mode ``i`` now."""
    a, b = 1.0 / params.cv_dwell_s, 1.0 / params.ct_dwell_s
    decay = math.exp(-(a + b) * dt_s)
    to_ct = a / (a + b) * (1.0 - decay)
    to_cv = b / (a + b) * (1.0 - decay)
    return np.array([[1.0 - to_ct, to_ct], [to_cv, 1.0 - to_cv]])


def _process_noise(dt: float, accel: float, vertical: float, turn: float) -> Array:
    """Continuous white acceleration on each axis, and a random walk of ω."""
    q = np.zeros((STATE, STATE))
    t2, t3 = dt * dt / 2.0, dt * dt * dt / 3.0
    for axis, sigma in ((0, accel), (1, accel), (2, vertical)):
        density = sigma * sigma
        q[axis, axis] = t3 * density
        q[axis, axis + 3] = q[axis + 3, axis] = t2 * density
        q[axis + 3, axis + 3] = dt * density
    q[_OMEGA, _OMEGA] = dt * turn * turn
    return q


def _cv(x: Array, dt: float) -> tuple[Array, Array]:
    f = np.eye(STATE)
    f[0, 3] = f[1, 4] = f[2, 5] = dt
    return f @ x, f


def _ct(x: Array, dt: float) -> tuple[Array, Array]:
    """The coordinated turn's step and its Jacobian (the EKF's ``F``)."""
    vn, ve, w = float(x[3]), float(x[4]), float(x[_OMEGA])
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
    out = x.copy()
    out[0] = x[0] + s * vn - c * ve
    out[1] = x[1] + c * vn + s * ve
    out[2] = x[2] + dt * x[5]
    out[3] = cos_wt * vn - sin_wt * ve
    out[4] = sin_wt * vn + cos_wt * ve
    f = np.eye(STATE)
    f[0, 3], f[0, 4], f[1, 3], f[1, 4] = s, -c, c, s
    f[2, 5] = dt
    f[3, 3], f[3, 4], f[4, 3], f[4, 4] = cos_wt, -sin_wt, sin_wt, cos_wt
    f[0, _OMEGA] = ds * vn - dc * ve
    f[1, _OMEGA] = dc * vn + ds * ve
    f[3, _OMEGA] = -dt * (sin_wt * vn + cos_wt * ve)
    f[4, _OMEGA] = dt * (cos_wt * vn - sin_wt * ve)
    return out, f


def predict(state: ImmState, dt_s: float, params: MotionParams) -> Prediction:
    """Mix the modes (the IMM's interaction step), then predict each ``dt_s`` ahead."""
    t = transition(dt_s, params)
    mu = t.T @ state.mu
    weights = t * state.mu[:, None] / mu[None, :]  # weights[i, j]: from mode i into mode j
    x0 = weights.T @ state.x
    spread = state.x[None, :, :] - x0[:, None, :]  # [j, i, :]
    p0 = np.einsum("ij,ikl->jkl", weights, state.p) + np.einsum(
        "ij,jik,jil->jkl", weights, spread, spread
    )
    xs = np.empty_like(x0)
    ps = np.empty_like(p0)
    cv_noise = _process_noise(
        dt_s, params.cv_accel_m_s2, params.vertical_accel_m_s2, params.turn_accel_rad_s2
    )
    ct_noise = _process_noise(
        dt_s, params.ct_accel_m_s2, params.vertical_accel_m_s2, params.turn_accel_rad_s2
    )
    for j, (step, noise) in enumerate(((_cv, cv_noise), (_ct, ct_noise))):
        xs[j], f = step(x0[j], dt_s)
        ps[j] = f @ p0[j] @ f.T + noise
    return Prediction(xs, ps, mu)


def combined(x: Array, p: Array, mu: Array) -> tuple[Array, Array]:
    """The modes' mixture as one Gaussian (moment matched): mean (7) and covariance (7×7)."""
    mean = mu @ x
    spread = x - mean
    cov = np.einsum("j,jkl->kl", mu, p) + np.einsum("j,jk,jl->kl", mu, spread, spread)
    return mean, 0.5 * (cov + cov.T)


def mahalanobis2(prediction: Prediction, z: Array, r: Array) -> float:
    """The squared Mahalanobis distance of measurement ``z`` from the predicted position."""
    mean, cov = combined(prediction.x, prediction.p, prediction.mu)
    nu = z - mean[:3]
    s = cov[:3, :3] + r
    return float(nu @ np.linalg.solve(s, nu))


def update(prediction: Prediction, z: Array, r: Array) -> ImmState:
    """Each mode's Kalman update by a position measurement, and the modes reweighed by their
    likelihoods (a mode no likelier than 1e-9 keeps that much)."""
    x, p = prediction.x, prediction.p
    nu = z[None, :] - x[:, :3]  # (2, 3)
    s = p[:, :3, :3] + r[None, :, :]
    s_inv = np.linalg.inv(s)
    gain = p[:, :, :3] @ s_inv  # (2, 7, 3)
    x_new = x + np.einsum("jkl,jl->jk", gain, nu)
    # Joseph form: (I - KH) P (I - KH)' + K R K', symmetric and PSD in floating point.
    ikh = np.broadcast_to(np.eye(STATE), p.shape).copy()
    ikh[:, :, :3] -= gain
    p_new = ikh @ p @ np.swapaxes(ikh, 1, 2) + gain @ r @ np.swapaxes(gain, 1, 2)
    p_new = 0.5 * (p_new + np.swapaxes(p_new, 1, 2))
    d2 = np.einsum("jk,jkl,jl->j", nu, s_inv, nu)
    _sign, logdet = np.linalg.slogdet(s)
    log_like = -0.5 * (d2 + logdet + 3 * _LOG_2PI)
    weights = prediction.mu * np.exp(log_like - log_like.max())
    mu = weights / weights.sum()
    mu = np.maximum(mu, _MIN_PROBABILITY)
    return ImmState(x_new, p_new, mu / mu.sum())


def estimate(state: ImmState) -> tuple[Array, Array]:
    """Position and velocity (6) and their covariance (6×6), n, e, d, vn, ve, vd."""
    mean, cov = combined(state.x, state.p, state.mu)
    return mean[:6], cov[:6, :6]
