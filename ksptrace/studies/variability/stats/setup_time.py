"""Set-up apart, and the smallest sample a distribution is fitted to (issue 52).

PETSc sets a solver up inside its first KSPSolve (PCSetUp of GAMG can take longer than the
iterations); a trace written since issue 52 records that set-up as ``setup_max`` (see
``ksptrace/harness/monitoring/setuptime.py``). The models describe the iterations, so the analysis
compares them with KSPSolve without its set-up and says how much set-up there was. Traces written
before do not record it, and are compared with the whole KSPSolve as before. Pure.
"""

from __future__ import annotations

from ksptrace.trace.model import Trace

MIN_FIT_PER_RANK = 200
"""Fewer values per rank than this get no distribution fit (issue 52: 29 iterations on 2
ranks were fitted and tabled)."""


def recorded_setup(trace: Trace) -> float | None:
    """The trace's ``setup_max`` (seconds), when it records a plausible one."""
    value = trace.attr("setup_max")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value <= trace.solve_max else None


def setup_note(setup: float, solve: float) -> str:
    """The note that says how much of KSPSolve went outside its iterations (set-up, unless a
    ``ksptrace trace`` trace kept it apart already, and the initial and final residual work)."""
    share = 100.0 * setup / solve if solve > 0 else 0.0
    return (f"set-up: {setup:.3g} s of KSPSolve's {solve:.3g} s ({share:.0f} %) went outside "
            f"its iterations (before the first: KSPSetUp and PCSetUp unless kept apart, the "
            f"initial residual; after the last); the models and their errors use the "
            f"iterations' {solve - setup:.3g} s")
