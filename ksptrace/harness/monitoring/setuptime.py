"""The set-up inside a KSPSolve (issue 52): the time a solve spends outside its iterations.

PETSc sets the solver up inside the first KSPSolve (KSPSetUp, PCSetUp: GAMG's hierarchy can
take longer than the iterations), before the monitor's first call (iteration 0, after the
initial residual). A trace records, as ``setup_max``, the largest over ranks of the first
solve's time minus the span of its monitor calls: its set-up, and the few vector operations
after its last iteration. The models describe the iterations, so the analysis compares them
with KSPSolve without it.
"""

from __future__ import annotations

import math

import numpy as np


def setup_seconds(solve: float, stamps: np.ndarray) -> float | None:
    """One rank's set-up: ``solve`` (its KSPSolve seconds) minus the span of its monitor
    ``stamps`` (absolute seconds, first solve only); None when that cannot be told (fewer than
    two stamps, a stamp missing, or a difference below zero: then the solve's time did not
    come from the same clock)."""
    s = np.asarray(stamps, dtype=np.float64)
    if s.size < 2 or not np.isfinite(s[[0, -1]]).all() or not math.isfinite(solve):
        return None
    value = float(solve - (s[-1] - s[0]))
    return value if value >= 0 else None
