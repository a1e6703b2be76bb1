"""A far target's ground-plane fixes are not pulled towards the camera, and the covariance
covers the error: a still target 300 m out, seen from 20 m up along a grazing ray (the
along-ray σ of one fix is some 21 m, growing as the range²). The truth is the simulation's
(``hil_geometry``'s pinhole), never fusion's camera model."""

from __future__ import annotations

import math

from tests.support.tracking_sim import far_fixes

DISTANCE_M = 300.0
SEEDS = range(4)


def test_a_far_target_is_not_placed_short_and_its_covariance_covers_the_error() -> None:
    errors: list[float] = []
    within = total = 0
    for seed in SEEDS:
        lines = far_fixes(DISTANCE_M, 700 + seed)
        assert len(lines) > 250, len(lines)
        for (n, e, _), (sn, se, rho) in lines:
            dn, de = n - DISTANCE_M, e
            errors.append(dn)
            zn, ze = dn / sn, de / se
            nees = (zn * zn - 2 * rho * zn * ze + ze * ze) / (1 - rho * rho)
            within += nees <= 5.991
            total += 1
    bias = sum(errors) / len(errors)
    spread = math.sqrt(sum((x - bias) ** 2 for x in errors) / len(errors))
    # 7f448dc: 5.6 m short (the fixes that fell short weighed more), 57 % of lines within
    assert abs(bias) < 1.5, (bias, spread)
    # honest or cautious: every line's covariance weighs the same σ, at the track's range
    assert within / total >= 0.85, within / total
