"""How the command line shows a trace's numbers: times in the unit that suits them, shares as
percentages, and a forced run's stop as what it is (not PETSc's DIVERGED_MAX_IT)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

SECONDS = frozenset({
    "solve_max", "solve_min", "solve_mean", "sum_max_iteration", "max_sum_iteration",
    "mean_iteration", "rank_spread", "solve_event_max", "foreign_cpu_seconds", "setup_max",
    "setup_seconds",
})
"""Trace attributes and summary figures that are times in seconds."""
SHARES = frozenset({"foreign_cpu_share", "wait_share", "wait_share_max", "matmult_share",
                    "pcapply_share", "vecreduce_share"})
"""Fractions shown as percentages."""
NOTES = {
    "solve_max": "KSPSolve, the slowest rank",
    "solve_min": "KSPSolve, the fastest rank",
    "solve_mean": "KSPSolve, the mean over ranks",
    "sum_max_iteration": "sum_k max_p T_p^k, each iteration's slowest rank: above KSPSolve "
                         "when the ranks take turns being slowest",
    "max_sum_iteration": "max_p sum_k T_p^k: the slowest rank's own iterations",
    "mean_iteration": "T_p^k, the mean over ranks and iterations",
    "rank_spread": "sum_k T_p^k, the slowest rank's minus the fastest's",
    "setup_max": "the set-up inside the first KSPSolve, the slowest rank",
    "matmult_share": "time in MatMult over the iteration time, all ranks (--events)",
    "pcapply_share": "time in PCApply over the iteration time, all ranks (--events)",
    "vecreduce_share": "time in VecMDot, VecNorm and VecDot over the iteration time, all "
                       "ranks (--events)",
}
"""What ``ksptrace show``'s summary figures are, beside them (T_p^k: iteration k on rank p)."""


def seconds(value: float) -> str:
    """``value`` seconds in s, ms, µs or ns, four significant digits."""
    if not math.isfinite(value):
        return str(value)
    size = abs(value)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if size >= scale:
            return f"{value / scale:.4g} {unit}"
    return "0 s" if value == 0 else f"{value / 1e-9:.4g} ns"


def stop_reason(reason: str, attrs: Mapping[str, Any]) -> str:
    """A forced run's DIVERGED_MAX_IT is its K iterations done; any other reason as PETSc
    names it."""
    if reason == "DIVERGED_MAX_IT" and not attrs.get("recorded"):
        return f"K = {attrs.get('iterations', '?')} iterations done (forced; PETSc: {reason})"
    return reason


def display_value(key: str, value: Any, attrs: Mapping[str, Any]) -> str:
    """The text ``ksptrace show`` prints for ``key``."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if key in SECONDS and isinstance(value, int | float):
        return seconds(float(value))
    if key in SHARES and isinstance(value, int | float):
        return f"{100 * value:.1f} %"
    if key == "loadavg_before" and isinstance(value, float):
        return f"{value:.2f}"
    if key == "converged_reason" and isinstance(value, str):
        return stop_reason(value, attrs)
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def display_line(key: str, value: Any, attrs: Mapping[str, Any], width: int) -> str:
    """One line of ``ksptrace show``: the key, its value and, for a summary figure, what it is."""
    shown = display_value(key, value, attrs)
    note = NOTES.get(key)
    return f"  {key:<{width}}  {shown:<10}  {note}" if note else f"  {key:<{width}}  {shown}"
