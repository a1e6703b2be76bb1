"""The tracker's filter and noise model written plainly (numpy on whole matrices, one mode at a
time, as the textbook has them): the test oracle the optimised ``fusion.tracking.motion`` and
``fusion.tracking.noise`` must agree with to 1e-9 (as scipy is the assignment solver's).

This is the code the tracker ran before it was made cheap (issue 27's first version); it is
kept here, not in the product, so the product keeps one implementation.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from fusion.geometry import Vec3, quat_to_matrix
from fusion.targets import RayFrame
from fusion.tracking.motion import Array, ImmState, MotionParams
from fusion.tracking.noise import NoiseParams, PixelScale

STATE = 7
_OMEGA = 6
_SMALL_TURN = 1e-4
_LOG_2PI = math.log(2.0 * math.pi)
_MIN_PROBABILITY = 1e-9
_DOWN = np.array([0.0, 0.0, 1.0])
_STILL = (0.0, 0.0, 0.0)


class Prediction(NamedTuple):
    x: Array  # (2, 7)
    p: Array  # (2, 7, 7)
    mu: Array  # (2,) predicted mode probabilities
    a: Array  # (2, 7, 7): the error covariance under the modes' own motion


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
    return ImmState(np.stack([x, x]), np.stack([p, p]), stationary_mu(params), np.stack([p, p]))


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


def _speed_noise(x: Array, dt: float, accel: float) -> Array:
    """The turn mode's change of speed: continuous white acceleration ``accel`` along the
    horizontal velocity, with (1 m/s)² of isotropy: ``accel²·(v·vᵀ + I)/(|v|² + 1)``."""
    v = x[3:5]
    h = accel * accel * (np.outer(v, v) + np.eye(2)) / (float(v @ v) + 1.0)
    q = np.zeros((STATE, STATE))
    block = np.array([[dt**3 / 3.0, dt**2 / 2.0], [dt**2 / 2.0, dt]])
    index = np.array([0, 1, 3, 4])
    q[np.ix_(index, index)] = np.kron(block, h)
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
    between = np.einsum("ij,jik,jil->jkl", weights, spread, spread)
    p0 = np.einsum("ij,ikl->jkl", weights, state.p) + between
    a0 = np.einsum("ij,ikl->jkl", weights, state.a) + between
    xs = np.empty_like(x0)
    ps = np.empty_like(p0)
    as_ = np.empty_like(a0)
    vertical, turn = params.vertical_accel_m_s2, params.turn_accel_rad_s2
    cv_noise = _process_noise(dt_s, params.cv_accel_m_s2, vertical, turn)
    ct_noise = _process_noise(dt_s, params.ct_accel_m_s2, vertical, turn)
    cv_true = _process_noise(dt_s, params.cv_true_accel_m_s2, vertical, turn)
    ct_noise = ct_noise + _speed_noise(x0[1], dt_s, params.ct_speed_accel_m_s2)
    for j, (step, noise, true) in enumerate(((_cv, cv_noise, cv_true), (_ct, ct_noise, ct_noise))):
        xs[j], f = step(x0[j], dt_s)
        ps[j] = f @ p0[j] @ f.T + noise
        as_[j] = f @ a0[j] @ f.T + true
    return Prediction(xs, ps, mu, as_)


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
    # the same gains applied to the error covariance under the modes' own motion
    a_new = ikh @ prediction.a @ np.swapaxes(ikh, 1, 2) + gain @ r @ np.swapaxes(gain, 1, 2)
    a_new = 0.5 * (a_new + np.swapaxes(a_new, 1, 2))
    d2 = np.einsum("jk,jkl,jl->j", nu, s_inv, nu)
    _sign, logdet = np.linalg.slogdet(s)
    log_like = -0.5 * (d2 + logdet + 3 * _LOG_2PI)
    weights = prediction.mu * np.exp(log_like - log_like.max())
    mu = weights / weights.sum()
    mu = np.maximum(mu, _MIN_PROBABILITY)
    return ImmState(x_new, p_new, mu / mu.sum(), a_new)


def estimate(state: ImmState) -> tuple[Array, Array]:
    """Position and velocity (6) and their covariance (6×6), n, e, d, vn, ve, vd."""
    mean, cov = combined(state.x, state.a, state.mu)
    return mean[:6], cov[:6, :6]


def _skew(v: Array) -> Array:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def position_covariance(
    bearing_camera: Vec3,
    frame: RayFrame,
    range_m: float,
    ground_plane: bool,
    scale: PixelScale,
    params: NoiseParams,
) -> Array:
    """The 3×3 NED covariance of a position placed along ``bearing_camera`` (unit, camera
    axes) at ``range_m`` from the camera, by the ground plane or by a ranging sensor."""
    rotation = np.array(quat_to_matrix(frame.camera_quaternion_wxyz))
    ray_cam = np.array(bearing_camera)
    ray = rotation @ ray_cam
    # Pixels to the ray in NED: the ray is (1, a, b)/|(1, a, b)| with a = (u - cx)/fx and
    # b = (v - cy)/fy, and |(1, a, b)| = 1/ray_cam[0].
    project = (np.eye(3) - np.outer(ray_cam, ray_cam)) * ray_cam[0]
    per_px = rotation @ project[:, 1:] @ np.diag((1.0 / frame.fx_px, 1.0 / frame.fy_px))
    box_var = params.box_sigma_px**2
    pixel_var = np.diag((box_var + scale.u_px**2 / 12.0, box_var + scale.v_px**2 / 12.0))
    attitude = _skew(ray) * math.radians(params.attitude_sigma_deg)  # δray = δθ × ray
    ray_cov = per_px @ pixel_var @ per_px.T + attitude @ attitude.T
    # The capture time off by δt: the origin moves by v·δt, the ray turns by (ω × ray)·δt.
    velocity = np.array(frame.velocity_ned_m_s or _STILL)
    turn = np.cross(np.array(frame.angular_rate_ned_rad_s or _STILL), ray)
    sigma_t = params.capture_time_sigma_ms * 1e-3
    if ground_plane:
        # p = o + ray·(g - o_d)/ray_d: a turn of the ray slides p along the plane, a step of
        # the origin moves it unless it is along the ray, and a target h above the plane is
        # h/ray_d nearer along the ray.
        along_plane = np.eye(3) - np.outer(ray, _DOWN) / ray[2]
        slide = range_m * along_plane
        cov = slide @ ray_cov @ slide.T
        cov += params.position_sigma_m**2 * (along_plane @ along_plane.T)
        height = ray / ray[2] * params.ground_height_sigma_m
        cov += np.outer(height, height)
        timing = sigma_t * (along_plane @ velocity + slide @ turn)
    else:
        cov = range_m**2 * ray_cov
        cov += params.position_sigma_m**2 * np.eye(3)
        range_var = (params.range_sigma_m * frame.range_noise_gain) ** 2
        range_var += frame.range_moved_sigma_m**2
        cov += range_var * np.outer(ray, ray)
        timing = sigma_t * (velocity + range_m * turn)
    cov += np.outer(timing, timing)
    symmetric: Array = 0.5 * (cov + cov.T)
    return symmetric
