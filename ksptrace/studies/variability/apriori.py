"""A priori prediction across configurations: Johnson S_U parameters fitted on one
configuration's run predict the KSPSolve of another configuration of the same problem and solver
by Monte Carlo (the paper's use of its non-stationary model). Pure: analyses in, a Table out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ksptrace.studies.rows import Rows
from ksptrace.studies.table import Table
from ksptrace.studies.variability import montecarlo
from ksptrace.studies.variability.findings import (
    file_name,
    fmt_pct,
    fmt_time,
    n_of,
    problem_of,
)
from ksptrace.studies.variability.pipeline import TraceAnalysis
from ksptrace.studies.variability.tables import run_name
from ksptrace.trace.model import CONFIG_DEFAULTS, CONFIG_KEYS


def neighbours(src: TraceAnalysis, dst: TraceAnalysis,
               analyses: Sequence[TraceAnalysis]) -> bool:
    """Whether ``dst`` is next to ``src``: same problem and solver, the same n at the nearest
    other P measured, or the same P at the nearest other n."""
    def where(a: TraceAnalysis) -> tuple[int, int]:
        return a.nprocs, n_of(a) or 0

    kind = (problem_of(src), src.ksp)
    (p0, n0), (p1, n1) = where(src), where(dst)
    if (p0 == p1) == (n0 == n1):
        return False
    axis = 0 if n0 == n1 else 1
    lo, hi = sorted((where(src)[axis], where(dst)[axis]))
    return not any((problem_of(a), a.ksp) == kind and where(a)[1 - axis] == where(src)[1 - axis]
                   and lo < where(a)[axis] < hi for a in analyses)


def _configuration(a: TraceAnalysis) -> tuple[str, ...]:
    attrs = dict(a.attrs)
    return (*(str(attrs.get(k, CONFIG_DEFAULTS.get(k))) for k in CONFIG_KEYS), str(a.nprocs))


def _representatives(analyses: Sequence[TraceAnalysis]) -> tuple[list[TraceAnalysis], int]:
    """The first run of each configuration, and how many runs repeat one already seen."""
    first: dict[tuple[str, ...], TraceAnalysis] = {}
    for a in analyses:
        first.setdefault(_configuration(a), a)
    return list(first.values()), len(analyses) - len(first)


def apriori_table(analyses: Sequence[TraceAnalysis], runs: int = 16, seed: int = 0) -> Table:
    """Parameters fitted on one configuration's run predict every other configuration of the
    same problem and KSP.

    Each configuration is represented by its first run (a repetition predicts nothing a priori,
    and every pair of runs would cost a Monte Carlo prediction per pair: a million for a
    campaign of a thousand traces, issue 35). Every pair of configurations is a row of the CSV;
    the page shows the neighbouring ones (the next P or n), where a priori prediction is meant
    to be used, and the median error of the others."""
    rows, shown, far_errors = [], [], []
    chosen, repeats = _representatives(analyses)
    for src in chosen:
        if src.parameters is None:
            continue
        for dst in chosen:
            same_kind = (problem_of(src), src.ksp) == (problem_of(dst), dst.ksp)
            if dst is src or not same_kind or dst.measured <= 0:
                continue
            pred = montecarlo.predict(
                src.parameters, dst.kept, max(1, int(dst.count)), dst.measured, dst.pipelined,
                src.label, dst.label, runs=runs, seed=seed)
            err = 100.0 * pred.relative_error
            near = neighbours(src, dst, chosen)
            rows.append({"fitted_on": file_name(src), "predicts": file_name(dst),
                         "simulated_s": pred.simulated, "KSPSolve_s": pred.measured,
                         "err_pct": err, "neighbour": near})
            if not near:
                far_errors.append(abs(err))
                continue
            shown.append({"fitted on": run_name(src), "predicts": run_name(dst),
                          "simulated": fmt_time(pred.simulated),
                          "KSPSolve": fmt_time(pred.measured), "error": fmt_pct(err)})
    notes: tuple[str, ...] = ()
    if not rows:
        notes = ("Needs two configurations of the same problem and solver.",)
    elif far_errors:
        notes = (f"{len(far_errors)} pairs farther apart (not the next P or n) are in the CSV; "
                 f"their median |error| is {float(np.median(far_errors)):.0f} %.",)
    if repeats:
        notes += (f"{repeats} runs repeat a configuration; each configuration is represented "
                  "by its first run.",)
    return Table(
        name="apriori",
        title="A priori prediction: one run's fits predict its neighbours (next P or n)",
        frame=Rows.of(rows, columns=["fitted_on", "predicts", "simulated_s", "KSPSolve_s",
                                          "err_pct", "neighbour"]),
        display=Rows.of(shown, columns=["fitted on", "predicts", "simulated", "KSPSolve",
                                             "error"]),
        notes=notes,
    )
