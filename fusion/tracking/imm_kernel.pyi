"""The types of the Cython kernel ``imm_kernel.pyx`` (built by tools/native_build.py)."""

import numpy as np
import numpy.typing as npt

_Array = npt.NDArray[np.float64]

def predict(
    x: _Array,
    pa: _Array,
    w00: float,
    w10: float,
    w01: float,
    w11: float,
    basis: _Array,
    dt: float,
    speed_density: float,
    small_turn: float,
    slow_m_s: float,
) -> tuple[_Array, _Array, list[list[float]], list[list[list[float]]]]: ...
def update(
    x: _Array, pa: _Array, z0: float, z1: float, z2: float, r: _Array, log_2pi: float
) -> tuple[_Array, _Array, float, float]: ...
