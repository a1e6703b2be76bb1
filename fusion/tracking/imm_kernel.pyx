# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The IMM's two array steps in C (Cython): what ``fusion.tracking.motion`` does with numpy,
the same formulas on the same arrays, without numpy's per-call cost (about 1 µs a call, and a
step is some twenty calls on 7×7 matrices; here a step is about 2 µs, measured by
bench/imm_kernel.py).

``motion.Imm`` uses these when they are built (``python3 dev.py``, beside mypyc's modules) and
its numpy forms otherwise; the scalars around them (mode weights, likelihoods, probabilities)
stay in ``motion``, so their errors and edge cases are the same either way. Both forms agree
with the textbook oracle to 1e-9 (tests/fusion/test_tracking_exactness.py runs both).

Arrays: ``x`` (2, 7) the modes' means; ``pa`` (4, 7, 7) the covariances ``p`` of both modes,
then ``a`` of both (the mode of matrix ``k`` is ``k % 2``), read in any layout (a state's
arrays are numpy's to make: a view, a transposed copy); every output array is new and C
ordered. An array of another shape is a ``ValueError`` naming it, never a read outside it
(the loops do not check their indices).
"""

from libc.math cimport cos, fabs, log, sin

import numpy as np

cdef enum:
    STATE = 7
    OMEGA = 6


cdef int _check_shapes(const double[:, :] x, const double[:, :, :] pa) except -1:
    if x.shape[0] != 2 or x.shape[1] != STATE:
        raise ValueError(f"x: expected shape (2, 7), got ({x.shape[0]}, {x.shape[1]})")
    if pa.shape[0] != 4 or pa.shape[1] != STATE or pa.shape[2] != STATE:
        raise ValueError(
            f"pa: expected shape (4, 7, 7), got ({pa.shape[0]}, {pa.shape[1]}, {pa.shape[2]})"
        )
    return 0


cdef void _sandwich(double f[7][7], const double[:, :, :] src, int k, double out[7][7]) noexcept:
    """out = f · src[k] · fᵀ"""
    cdef double g[7][7]
    cdef double acc
    cdef int i, j, m
    for i in range(STATE):
        for j in range(STATE):
            acc = 0.0
            for m in range(STATE):
                acc += f[i][m] * src[k, m, j]
            g[i][j] = acc
    for i in range(STATE):
        for j in range(STATE):
            acc = 0.0
            for m in range(STATE):
                acc += g[i][m] * f[j][m]
            out[i][j] = acc


def predict(const double[:, :] x, const double[:, :, :] pa,
            double w00, double w10, double w01, double w11,
            const double[:, ::1] basis, double dt, double speed_density,
            double small_turn, double slow_m_s):
    """``motion.Imm.predict``'s arrays from the mixing weights ``w[i][j]`` (the share of mode
    ``j``'s mixed prior from mode ``i``) and the process noise's ``basis``: the modes' means a step of ``dt`` ahead (2, 7), the
    four covariances predicted (4, 7, 7), each mode's position (its first three) and the
    position blocks of ``p`` (2 × 3×3), as lists."""
    cdef double mixed[2][7]
    cdef double d[7]
    cdef double nxt[2][7]
    cdef double f[2][7][7]
    cdef double spread_w[2]
    cdef double wt[2][2]
    cdef int i, j, k, b, mode, entry
    _check_shapes(x, pa)
    if basis.shape[0] != 3 or basis.shape[1] != 4 * STATE * STATE:
        raise ValueError(f"basis: expected shape (3, 196), got ({basis.shape[0]}, {basis.shape[1]})")
    wt[0][0] = w00
    wt[1][0] = w10
    wt[0][1] = w01
    wt[1][1] = w11
    for i in range(STATE):
        mixed[0][i] = w00 * x[0, i] + w10 * x[1, i]
        mixed[1][i] = w01 * x[0, i] + w11 * x[1, i]
        d[i] = x[0, i] - x[1, i]
    spread_w[0] = w00 * w10
    spread_w[1] = w01 * w11

    both_array = np.empty((4, STATE, STATE))
    cdef double[:, :, ::1] both = both_array
    # mixed covariances: [2b + j] = w0j · pa[2b] + w1j · pa[2b + 1] + w0j·w1j · d dᵀ
    for b in range(2):
        for mode in range(2):
            k = 2 * b + mode
            for i in range(STATE):
                for j in range(STATE):
                    both[k, i, j] = (wt[0][mode] * pa[2 * b, i, j]
                                     + wt[1][mode] * pa[2 * b + 1, i, j]
                                     + spread_w[mode] * (d[i] * d[j]))

    # the modes' means a step ahead, and their transition matrices (CT's: the EKF's Jacobian)
    for i in range(STATE):
        for j in range(STATE):
            f[0][i][j] = 1.0 if i == j else 0.0
            f[1][i][j] = 1.0 if i == j else 0.0
    cdef double vn, ve, w, wdt, sin_wt, cos_wt, s, c, ds, dc
    for i in range(3):
        f[0][i][i + 3] = dt
        nxt[0][i] = mixed[0][i] + dt * mixed[0][i + 3]
    for i in range(3, STATE):
        nxt[0][i] = mixed[0][i]
    vn, ve, w = mixed[1][3], mixed[1][4], mixed[1][OMEGA]
    wdt = w * dt
    sin_wt, cos_wt = sin(wdt), cos(wdt)
    if fabs(w) < small_turn:  # sin(wt)/w and (1 - cos wt)/w by their series, and d/dw
        s = dt - w * w * dt * dt * dt / 6.0
        c = w * dt * dt / 2.0 - w * w * w * dt * dt * dt * dt / 24.0
        ds = -w * dt * dt * dt / 3.0
        dc = dt * dt / 2.0 - w * w * dt * dt * dt * dt / 8.0
    else:
        s = sin_wt / w
        c = (1.0 - cos_wt) / w
        ds = (dt * cos_wt - s) / w
        dc = (dt * sin_wt - c) / w
    nxt[1][0] = mixed[1][0] + s * vn - c * ve
    nxt[1][1] = mixed[1][1] + c * vn + s * ve
    nxt[1][2] = mixed[1][2] + dt * mixed[1][5]
    nxt[1][3] = cos_wt * vn - sin_wt * ve
    nxt[1][4] = sin_wt * vn + cos_wt * ve
    nxt[1][5] = mixed[1][5]
    nxt[1][6] = w
    f[1][0][3], f[1][0][4], f[1][1][3], f[1][1][4] = s, -c, c, s
    f[1][2][5] = dt
    f[1][3][3], f[1][3][4], f[1][4][3], f[1][4][4] = cos_wt, -sin_wt, sin_wt, cos_wt
    f[1][0][6] = ds * vn - dc * ve
    f[1][1][6] = dc * vn + ds * ve
    f[1][3][6] = -dt * (sin_wt * vn + cos_wt * ve)
    f[1][4][6] = dt * (cos_wt * vn - sin_wt * ve)

    # F · P · Fᵀ + Q(dt), Q(dt) being (dt³/3, dt²/2, dt) times the noise's basis
    cdef double q0 = dt * dt * dt / 3.0, q1 = dt * dt / 2.0
    cdef double product[7][7]
    out_array = np.empty((4, STATE, STATE))
    cdef double[:, :, ::1] out = out_array
    for k in range(4):
        _sandwich(f[k % 2], both, k, product)
        for i in range(STATE):
            for j in range(STATE):
                entry = (k * STATE + i) * STATE + j
                out[k, i, j] = product[i][j] + (q0 * basis[0, entry] + q1 * basis[1, entry]
                                                + dt * basis[2, entry])

    # the turn mode's change of speed, along its mixed velocity (``motion.along``)
    cdef int along_index[4]
    cdef double block[4][4]
    cdef double slow2, kk, m00, m01, m11, t3, t2
    if speed_density != 0.0:
        along_index[0], along_index[1], along_index[2], along_index[3] = 0, 1, 3, 4
        slow2 = slow_m_s * slow_m_s
        kk = speed_density / (vn * vn + ve * ve + slow2)
        m00, m01, m11 = kk * (vn * vn + slow2), kk * vn * ve, kk * (ve * ve + slow2)
        t3, t2 = dt * dt * dt / 3.0, dt * dt / 2.0
        block[0][0], block[0][1], block[0][2], block[0][3] = t3 * m00, t3 * m01, t2 * m00, t2 * m01
        block[1][1], block[1][2], block[1][3] = t3 * m11, t2 * m01, t2 * m11
        block[2][2], block[2][3], block[3][3] = dt * m00, dt * m01, dt * m11
        for i in range(4):
            for j in range(i):
                block[i][j] = block[j][i]
        for k in (1, 3):
            for i in range(4):
                for j in range(4):
                    out[k, along_index[i], along_index[j]] += block[i][j]

    x_array = np.empty((2, STATE))
    cdef double[:, ::1] x_next = x_array
    for mode in range(2):
        for i in range(STATE):
            x_next[mode, i] = nxt[mode][i]
    positions = [[nxt[0][0], nxt[0][1], nxt[0][2]], [nxt[1][0], nxt[1][1], nxt[1][2]]]
    blocks = [
        [[out[mode, i, 0], out[mode, i, 1], out[mode, i, 2]] for i in range(3)]
        for mode in range(2)
    ]
    return x_array, out_array, positions, blocks


cdef void _inverse3(double s[3][3], double inv[3][3], double *det) except *:
    """The inverse by the adjugate and the determinant (``motion._inverse3``)."""
    cdef double a = s[0][0], b = s[0][1], c = s[0][2]
    cdef double d = s[1][0], e = s[1][1], f = s[1][2]
    cdef double g = s[2][0], h = s[2][1], i = s[2][2]
    cdef double c00 = e * i - f * h, c01 = f * g - d * i, c02 = d * h - e * g
    det[0] = a * c00 + b * c01 + c * c02
    if det[0] == 0.0:
        raise ZeroDivisionError("float division by zero")
    cdef double k = 1.0 / det[0]
    inv[0][0], inv[0][1], inv[0][2] = c00 * k, (c * h - b * i) * k, (b * f - c * e) * k
    inv[1][0], inv[1][1], inv[1][2] = c01 * k, (a * i - c * g) * k, (c * d - a * f) * k
    inv[2][0], inv[2][1], inv[2][2] = c02 * k, (b * g - a * h) * k, (a * e - b * d) * k


def update(const double[:, :] x, const double[:, :, :] pa,
           double z0, double z1, double z2, const double[:, :] r, double log_2pi):
    """``motion.Imm.update``'s arrays: each mode's Kalman update by the position measurement
    ``z`` with covariance ``r`` (3×3), the four covariances by the Joseph form with the gains
    of ``p`` (symmetrised), and each mode's log-likelihood. Raises as ``math.log`` and ``/``
    do on an innovation covariance whose determinant is zero or negative."""
    cdef double s[3][3]
    cdef double inv[3][3]
    cdef double gain[2][7][3]
    cdef double nu[3]
    cdef double step[3]
    cdef double z[3]
    cdef double like[2]
    cdef double det, d2, acc
    cdef int mode, i, j, k
    _check_shapes(x, pa)
    if r.shape[0] != 3 or r.shape[1] != 3:
        raise ValueError(f"r: expected shape (3, 3), got ({r.shape[0]}, {r.shape[1]})")
    z[0], z[1], z[2] = z0, z1, z2
    x_array = np.empty((2, STATE))
    cdef double[:, ::1] x_new = x_array
    for mode in range(2):
        for i in range(3):
            nu[i] = z[i] - x[mode, i]
            for j in range(3):
                s[i][j] = pa[mode, i, j] + r[i, j]
        _inverse3(s, inv, &det)
        for i in range(3):
            step[i] = inv[i][0] * nu[0] + inv[i][1] * nu[1] + inv[i][2] * nu[2]
        d2 = nu[0] * step[0] + nu[1] * step[1] + nu[2] * step[2]
        if not det > 0.0 and det == det:  # ``math.log``: a domain error (nan gives nan)
            raise ValueError("math domain error")
        like[mode] = -0.5 * (d2 + log(det) + 3 * log_2pi)
        for i in range(STATE):  # K = P·Hᵀ·S⁻¹, and x + P·Hᵀ·S⁻¹·ν
            for j in range(3):
                gain[mode][i][j] = (pa[mode, i, 0] * inv[0][j] + pa[mode, i, 1] * inv[1][j]
                                    + pa[mode, i, 2] * inv[2][j])
            x_new[mode, i] = x[mode, i] + (pa[mode, i, 0] * step[0] + pa[mode, i, 1] * step[1]
                                           + pa[mode, i, 2] * step[2])

    # Joseph form: (I - KH) P (I - KH)ᵀ + K R Kᵀ, of p and a with their mode's gain
    cdef double ikh[7][7]
    cdef double product[7][7]
    cdef double kr[7][3]
    out_array = np.empty((4, STATE, STATE))
    cdef double[:, :, ::1] out = out_array
    for k in range(4):
        mode = k % 2
        for i in range(STATE):
            for j in range(STATE):
                ikh[i][j] = (1.0 if i == j else 0.0) - (gain[mode][i][j] if j < 3 else 0.0)
        _sandwich(ikh, pa, k, product)
        for i in range(STATE):
            for j in range(3):
                kr[i][j] = (gain[mode][i][0] * r[0, j] + gain[mode][i][1] * r[1, j]
                            + gain[mode][i][2] * r[2, j])
            for j in range(STATE):
                out[k, i, j] = product[i][j] + (kr[i][0] * gain[mode][j][0]
                                                + kr[i][1] * gain[mode][j][1]
                                                + kr[i][2] * gain[mode][j][2])
        for i in range(STATE):
            for j in range(i):
                acc = 0.5 * (out[k, i, j] + out[k, j, i])
                out[k, i, j] = acc
                out[k, j, i] = acc
    return x_array, out_array, like[0], like[1]
