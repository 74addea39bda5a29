"""The variability study over analysed runs as a :class:`StudyResult`, like every other study:
the report's four questions answered, Table 1 with the out-of-sample predictions under the
models' answer, the Johnson S_U parameters on the page across configurations, the per-run
tables as CSV, and summary.json's ``traces`` and ``fastest``.

The per-run pages and the figures across runs are the runs themselves (drawn once while each
trace is analysed, :mod:`.runs`); this is what the study concludes from them. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ksptrace.studies.result import ACROSS, Part, StudyResult
from ksptrace.studies.variability.conclusions.answers import answer_all, caveats, fastest_summary
from ksptrace.studies.variability.conclusions.findings import headline, n_of, problem_of
from ksptrace.studies.variability.conclusions.heldout_skill import heldout_table
from ksptrace.studies.variability.pages.apriori import apriori_table
from ksptrace.studies.variability.pages.tables import (
    fit_mapping,
    fits_table,
    model_table,
    prediction_table,
    scaling_table,
    variability_table,
)
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis

KEY = "variability"
MODELS = "models"
"""The answer the model tables are shown under."""


def trace_record(a: TraceAnalysis) -> dict[str, Any]:
    """One run's key numbers in summary.json's ``traces``."""
    chosen = headline(a)
    return {
        "trace": a.path or a.label,
        "label": a.label,
        "problem": problem_of(a),
        "n": n_of(a),
        "ksp": a.ksp,
        "pipelined": a.pipelined,
        "nprocs": a.nprocs,
        "n_nodes": a.n_nodes,
        "independent_units": a.count,
        "iterations": a.iterations,
        "iterations_kept": a.kept,
        "kspsolve": a.measured,
        "setup": a.setup,
        "sum_k_max_p_T": a.lockstep_sum,
        "max_p_sum_k_T": a.rank_sum_max,
        "nonstationary_standard": a.nonstationary.standard,
        "nonstationary_pipelined": a.nonstationary.pipelined,
        "stationary": {m.family: {"standard": m.standard, "pipelined": m.pipelined}
                       for m in a.stationary},
        "best_fit": a.best_fit_name,
        "fits": fit_mapping(a),
        "simulated": a.simulated,
        "simulated_stderr": a.simulated_stderr,
        "simulated_status": a.simulated_status,
        "ks_fraction_rejected": None if a.ks_all is None else a.ks_all.fraction_rejected,
        "slow": _slow_record(a),
        "bimodal": None if a.variance is None or a.variance.modes is None
        else a.variance.modes.bimodal,
        "headline_model": None if chosen is None else chosen.key,
        "headline_error_pct": None if chosen is None else chosen.error_pct,
        "headline_error_basis": "in-sample fit",
        "caveats": list(caveats(a)),
        "flags": [{"code": f.code, "subject": f.subject, "message": f.message}
                  for f in a.flags],
        "notes": list(a.notes),
    }


def _slow_record(a: TraceAnalysis) -> dict[str, Any] | None:
    """The slow part of the run's variance (level shifts, drift), or None when not computed."""
    s = None if a.variance is None else a.variance.slow
    if s is None:
        return None
    return {"kind": s.kind, "share": s.share, "shifts": list(s.shifts),
            "levels_s": list(s.levels), "lag1": s.lag1}


def study(analyses: Sequence[TraceAnalysis], options: AnalysisOptions,
          with_figures: bool = True) -> StudyResult | None:
    """The study's answers, tables and summary over ``analyses`` (None when there are none)."""
    if not analyses:
        return None
    return StudyResult(
        key=KEY, title="Iteration-time variability and the runtime models",
        answers=answer_all(analyses),
        parts=(
            Part(title="Table 1 and the predictions out of sample", place=MODELS,
                 tables=(model_table(analyses),), unshown=(prediction_table(analyses),)),
            Part(title="The predictions out of sample", place=MODELS,
                 tables=(heldout_table(analyses),
                         apriori_table(analyses, runs=options.mc_runs, seed=options.seed))),
            Part(title="the Johnson S_U parameters of aₖ and sₖ over P and n", place=ACROSS,
                 tables=(scaling_table(analyses, "P"), scaling_table(analyses, "n"))),
            Part(title="Per run", unshown=(variability_table(analyses), fits_table(analyses))),
        ),
        summary={"traces": [trace_record(a) for a in analyses],
                 "fastest": fastest_summary(analyses)},
    )
