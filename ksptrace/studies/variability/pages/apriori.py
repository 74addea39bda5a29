"""A priori prediction across configurations: Johnson S_U parameters fitted on one
configuration's run predict the KSPSolve of another configuration of the same problem and solver
by Monte Carlo (the paper's use of its non-stationary model), at the same local size n/P only.
Pure: analyses in, a Table out."""

from __future__ import annotations

from collections.abc import Sequence

from ksptrace.studies.rows import Rows
from ksptrace.studies.table import Table
from ksptrace.studies.variability.conclusions.findings import (
    file_name,
    fmt_pct,
    fmt_time,
)
from ksptrace.studies.variability.conclusions.heldout import local_size, same_kind
from ksptrace.studies.variability.pages.tables import run_name
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats import montecarlo
from ksptrace.studies.variability.stats.plausible import ABSURD_PCT, plausible_pct
from ksptrace.trace.model import CONFIG_DEFAULTS, CONFIG_KEYS


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
    """Parameters fitted on one configuration's run predict the other configurations of the
    same problem and KSP *where the model claims validity*: the same local size n/P at another
    P (issue 52). Another n/P is not predicted (the work of an iteration changes with it), and
    a prediction off by more than ±1000 % is reported as failed, without a number.

    Each configuration is represented by its first run (a repetition predicts nothing a priori,
    and every pair of runs would cost a Monte Carlo prediction per pair: a million for a
    campaign of a thousand traces, issue 35)."""
    rows, shown = [], []
    other_size = 0
    chosen, repeats = _representatives(analyses)
    for src in chosen:
        if src.parameters is None:
            continue
        for dst in chosen:
            if dst is src or not same_kind(src, dst) or dst.measured <= 0:
                continue
            if local_size(src) is None or local_size(src) != local_size(dst) \
                    or src.nprocs == dst.nprocs:
                other_size += 1
                continue
            pred = montecarlo.predict(
                src.parameters, dst.kept, max(1, int(dst.count)), dst.measured, dst.pipelined,
                src.label, dst.label, runs=runs, seed=seed)
            err = plausible_pct(100.0 * pred.relative_error)
            failed = "" if err is not None else f"failed: off by more than {ABSURD_PCT:.0f} %"
            rows.append({"fitted_on": file_name(src), "predicts": file_name(dst),
                         "simulated_s": None if failed else pred.simulated,
                         "KSPSolve_s": pred.measured, "err_pct": err,
                         "status": failed or "ok"})
            shown.append({"fitted on": run_name(src), "predicts": run_name(dst),
                          "simulated": failed or fmt_time(pred.simulated),
                          "KSPSolve": fmt_time(pred.measured), "error": fmt_pct(err)})
    notes: tuple[str, ...] = ()
    if not rows:
        notes = ("Needs two configurations of the same problem and solver with the same n/P "
                 "at different P.",)
    if other_size:
        notes += (f"{other_size} pairs of configurations with another n/P are not predicted: "
                  "the work of an iteration changes with the local size, and no per-iteration "
                  "work model is fitted.",)
    if repeats:
        notes += (f"{repeats} runs repeat a configuration; each configuration is represented "
                  "by its first run.",)
    return Table(
        name="apriori",
        title="A priori prediction (Monte Carlo): one configuration's fits predict the same "
              "n/P at another P",
        frame=Rows.of(rows, columns=["fitted_on", "predicts", "simulated_s", "KSPSolve_s",
                                     "err_pct", "status"]),
        display=Rows.of(shown, columns=["fitted on", "predicts", "simulated", "KSPSolve",
                                        "error"]),
        notes=notes,
    )
