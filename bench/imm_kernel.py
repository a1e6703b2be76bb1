#!/usr/bin/env python3
"""The tracker's filter steps: their C forms (``fusion/tracking/imm_kernel.pyx``) against
their numpy forms (the baseline), in the same run.

A track's prediction and update cost about 40 µs with numpy (issue 31: a saturated line's new
images spend a sixth of offline replay's time there). Each step is timed on the same state,
the two forms alternating, best of ``ROUNDS`` runs of ``CALLS`` calls; and the two forms'
results are compared (they agree to 1e-9: tests/fusion/test_tracking_exactness.py).
Run: ``.venv/bin/python bench/imm_kernel.py`` (after ``python3 dev.py``, which builds the
kernel where Cython and a C compiler are at hand).
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as every gizmo-host command runs
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from fusion.tracking.motion import Imm, ImmState, MotionParams

CALLS = 5000
ROUNDS = 7
PARAMS = MotionParams(cv_true_accel_m_s2=0.012, ct_speed_accel_m_s2=1.3)
DT_S = 1 / 30


def _state() -> ImmState:
    """A track some seconds into a turn, as the tracker holds it (after an update)."""
    imm, r = Imm(PARAMS, native=False), np.diag([0.04**2, 0.04**2, 0.02**2])
    state = imm.initial_state(np.zeros(3), r)
    for k in range(1, 90):
        heading = 0.02 * k
        z = [3.0 * k * DT_S * np.cos(heading), 3.0 * k * DT_S * np.sin(heading), 0.0]
        state = imm.update(imm.predict(state, DT_S), z, r.tolist(), r)
    return state


def _mean_us(run: Callable[[], object]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(CALLS):
            run()
        return (time.perf_counter() - start) / CALLS * 1e6
    finally:
        gc.enable()


def main() -> int:
    numpy_imm, native_imm = Imm(PARAMS, native=False), Imm(PARAMS)
    if native_imm._kernel is None:
        print("imm_kernel: not built here (run `python3 dev.py`): nothing to compare")
        return 1
    state, r = _state(), np.diag([0.04**2, 0.04**2, 0.02**2])
    z, r_list = [7.9, 0.6, 0.01], r.tolist()
    predicted = numpy_imm.predict(state, DT_S)
    steps: dict[str, dict[str, Callable[[], object]]] = {
        "predict": {
            "numpy": lambda: numpy_imm.predict(state, DT_S),
            "native": lambda: native_imm.predict(state, DT_S),
        },
        "update": {
            "numpy": lambda: numpy_imm.update(predicted, z, r_list, r),
            "native": lambda: native_imm.update(predicted, z, r_list, r),
        },
    }
    print(f"imm_kernel: {CALLS} calls a run, best of {ROUNDS}, the forms alternating")
    for name, forms in steps.items():
        best = dict.fromkeys(forms, float("inf"))
        for _ in range(ROUNDS):
            for form, run in forms.items():
                best[form] = min(best[form], _mean_us(run))
        print(
            f"  {name:8s} numpy {best['numpy']:6.2f} us   C {best['native']:6.2f} us   "
            f"{best['numpy'] / best['native']:5.1f}x"
        )
    a, b = numpy_imm.predict(state, DT_S), native_imm.predict(state, DT_S)
    after_a, after_b = numpy_imm.update(a, z, r_list, r), native_imm.update(b, z, r_list, r)
    worst = max(
        float(np.abs(x - y).max() / max(np.abs(x).max(), 1e-300))
        for x, y in ((a.pa, b.pa), (after_a.pa, after_b.pa), (after_a.x, after_b.x))
        if x is not None and y is not None
    )
    print(f"  largest relative difference between the forms: {worst:.1e} (the tests: 1e-9)")
    return 0 if worst <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
