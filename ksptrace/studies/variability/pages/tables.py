"""Tables built from analyses: the paper's Table 1 (models and bounds against KSPSolve), its
Tables 2 and 3 (Johnson S_U fits of a_k and s_k, simulated runtimes), a priori predictions,
scaling tables across P and n, and the variability statistics. Pure: analyses in, pandas
DataFrames out.

Each :class:`Table` holds the machine-readable frame written as CSV (times in seconds, column
names ending in ``_s``; errors as signed percentages, column names with ``pct``) and, for the
report, a display frame of formatted text in which every empty cell says why it is empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ksptrace.studies.rows import Rows
from ksptrace.studies.table import Table
from ksptrace.studies.variability.conclusions.findings import (
    Prediction,
    error_pct,
    file_name,
    fmt_n,
    fmt_pct,
    fmt_time,
    ks_why,
    n_of,
    nodes_why,
    predictions,
    problem_of,
)
from ksptrace.studies.variability.pages import jsu_cells
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats.fitting import CRITERION

__all__ = ["Table"]




def run_name(a: TraceAnalysis) -> str:
    """A run named by its parameters: problem, solver, n, P."""
    n = n_of(a)
    return f"{problem_of(a)} {a.ksp} n={fmt_n(n)} P={a.nprocs}"


def _id_columns(a: TraceAnalysis) -> dict[str, Any]:
    return {"problem": problem_of(a), "ksp": a.ksp, "n": n_of(a), "P": a.nprocs,
            "N": a.count, "nodes": a.n_nodes, "K": a.kept, "file": file_name(a)}


def _cell(p: Prediction) -> str:
    """'4.831 s (+118 %)', with the standard error when there is one, or the reason."""
    if p.value is None:
        return p.why
    value = fmt_time(p.value)
    if p.stderr is not None:
        value += f" ± {fmt_time(p.stderr)}"
    return f"{value} ({fmt_pct(p.error_pct)})"


def model_table(analyses: Sequence[TraceAnalysis]) -> Table:
    """Table 1: measured KSPSolve, Σ_k max_p T and max_p Σ_k T next to every model and bound.

    Standard methods get E[T] = K E[max of N] per fitted family and Ê[T]; pipelined methods get
    E[T'] = K mu per family and Ê[T'] = sum_k mu_k. The bounds apply to standard methods.
    """
    families: list[str] = []
    for a in analyses:
        for fitted in a.stationary:
            if fitted.family not in families:
                families.append(fitted.family)
    rows, shown = [], []
    for a in analyses:
        preds = {p.key: p for p in predictions(a)}
        row: dict[str, Any] = {**_id_columns(a), "model": "T'=max_p sum_k" if a.pipelined
                               else "T=sum_k max_p", "KSPSolve_s": a.measured,
                               "sum_k_max_p_T_s": a.lockstep_sum,
                               "max_p_sum_k_T_s": a.rank_sum_max,
                               "best_fit": a.best_fit_name}
        for f in families:
            p = preds.get(f"stationary:{f}")
            row[f"E_{f}_s"] = None if p is None else p.value
            row[f"err_pct_{f}"] = None if p is None else p.error_pct
        for key, col in (("nonstationary", "hat_unif"), ("cramer", "cramer"),
                         ("bertsimas", "bertsimas"), ("montecarlo", "montecarlo")):
            p = preds[key]
            row[f"{'E_' if key == 'nonstationary' else ''}{col}_s"] = p.value
            row[f"err_pct_{col}"] = p.error_pct
        row["montecarlo_stderr_s"] = preds["montecarlo"].stderr
        rows.append(row)
        best = a.best_fit_name
        best_pred = preds.get(f"stationary:{best}") if best else None
        shown.append({
            "run": run_name(a),
            "N": f"{a.count:g}",
            "KSPSolve": fmt_time(a.measured),
            "Σₖ maxₚ Tₚᵏ": fmt_time(a.lockstep_sum),
            "maxₚ Σₖ Tₚᵏ": fmt_time(a.rank_sum_max),
            "stationary, best fit": (f"{best}: {_cell(best_pred)}" if best_pred is not None
                              else preds.get("stationary", Prediction("", "", "", None, None,
                                                                      why="no fit")).why),
            "Ê[T] uniform per k": _cell(preds["nonstationary"]),
            "Cramér": _cell(preds["cramer"]),
            "Bertsimas": _cell(preds["bertsimas"]),
            "Monte Carlo": _cell(preds["montecarlo"]),
        })
    return Table(
        name="table1_models",
        title="Table 1: models and bounds fitted on each run, against its own measured time "
              "(in sample: fits, not predictions)",
        frame=Rows.of(rows),
        display=Rows.of(shown),
        notes=(
            "Each model is fitted on the run it is compared with: its error says how well the "
            "run describes itself, not how well it predicts another (heldout.csv does). "
            "Errors are signed: 100·(model − KSPSolve)/KSPSolve; KSPSolve is without its set-up "
            "where the trace records it. N is the number of independent "
            "units in the maximum (the trace's node count, or P with --independent ranks). K "
            "counts the iterations kept for bulk statistics (pipeline-fill iterations dropped); "
            "the non-stationary Ê uses every recorded iteration. Σₖ maxₚ Tₚᵏ is what a "
            "synchronising method's models predict (E[T]), maxₚ Σₖ Tₚᵏ what a pipelined "
            "one's do (E[T′]). Best fit: the family with a model whose fit is a verified maximum "
            "and has the least AIC of the binned likelihood (summary.json's best_fit; every "
            "fit, with its status, in fits.csv).",
        ),
    )


def prediction_table(analyses: Sequence[TraceAnalysis]) -> Table:
    """Tables 2 and 3: Johnson S_U fits of a_k and s_k, and the simulated runtime."""
    rows = []
    for a in analyses:
        sim = a.simulated  # None when failed: no number (issues 52, 63)
        rows.append({**_id_columns(a), **jsu_cells.csv_cells(a.parameters),
                     "KSPSolve_s": a.measured, "simulated_s": sim,
                     "simulated_stderr_s": a.simulated_stderr,
                     "simulated_status": a.simulated_status,
                     "err_pct_simulated": error_pct(sim, a.measured),
                     "runs": None if a.simulation is None else a.simulation.runs})
    return Table(
        name="table2_3_prediction",
        title="Johnson S_U fits of a_k and s_k, and Monte Carlo runtime against KSPSolve "
              "(in sample: fitted on the run it simulates)",
        frame=Rows.of(rows),
    )


def jsu_table(a: TraceAnalysis) -> Table:
    """One trace's Johnson S_U fits of a_k and s_k, long: their form, then a row per parameter
    (:mod:`.jsu_cells`: a limit or a failure says so instead of printing its parameters)."""
    p = a.parameters
    why = "no fit: " + next((n for n in a.notes if "a_k" in n or "Monte Carlo" in n),
                            "not computed")
    cells = jsu_cells.shown_cells(p)
    rows = [{"parameter": "fit" if name == "fit" else name,
             "a_k": why if p is None else cells[f"a_k_{name}"],
             "s_k": why if p is None else cells[f"s_k_{name}"]}
            for name in ("fit", *jsu_cells.PARAMS)]
    return Table(name="jsu", title="Johnson S_U fits of a_k and s_k (scipy's shape a and b, "
                 "loc and scale)", frame=Rows.of(rows),
                 notes=jsu_cells.notes([p]))


def scaling_table(analyses: Sequence[TraceAnalysis], across: str = "P") -> Table:
    """Johnson S_U parameters of a_k and s_k across P (strong scaling) or across n (static)."""
    key = "P" if across == "P" else "n"
    fixed = "n" if across == "P" else "P"
    groups: dict[tuple[str, str, Any], list[TraceAnalysis]] = {}
    for a in analyses:
        value = n_of(a) if fixed == "n" else a.nprocs
        groups.setdefault((problem_of(a), a.ksp, value), []).append(a)
    rows, shown, fits = [], [], []
    for g, members in sorted(groups.items(), key=lambda kv: (
            kv[0][0], kv[0][1], float("inf") if kv[0][2] is None else float(kv[0][2]))):
        def value_of(m: TraceAnalysis) -> float:
            v = m.nprocs if key == "P" else n_of(m)
            return float(v or 0)

        if len({value_of(m) for m in members}) < 2:
            continue
        for m in sorted(members, key=value_of):
            ids = {"problem": g[0], "ksp": g[1], fixed: g[2],
                   key: m.nprocs if key == "P" else n_of(m)}
            rows.append({**ids, **jsu_cells.csv_cells(m.parameters)})
            shown.append({**{k: _short(v) for k, v in ids.items()},
                          **jsu_cells.shown_cells(m.parameters)})
            fits.append(m.parameters)
    columns = ["problem", "ksp", fixed, key, *jsu_cells.COLUMNS]
    return Table(
        name=f"scaling_{'nprocs' if key == 'P' else 'n'}",
        title=f"Johnson S_U parameters of a_k and s_k across {across}",
        frame=Rows.of(rows, columns=columns),
        display=Rows.of([[r[c.removesuffix("_s")] for c in columns] for r in shown],
                        [c.removesuffix("_s") for c in columns]),
        notes=jsu_cells.notes(fits) if rows else (
            f"Needs traces that differ only in {across}.",),
    )


def _short(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "no fit"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def variability_table(analyses: Sequence[TraceAnalysis]) -> Table:
    """KS tests between ranks and node variances of each trace (CSV)."""
    rows = []
    for a in analyses:
        pair, all_ = a.ks_pair, a.ks_all
        at, overall = a.nodes_at, a.nodes_overall
        rows.append({
            **_id_columns(a),
            "D_r0_r1": None if pair is None else pair.statistic,
            "threshold": None if pair is None else pair.threshold,
            "rejected_pct": None if all_ is None else 100.0 * all_.fraction_rejected,
            "iteration": a.focus_iteration,
            "var_node0_s2": None if at is None else float(at.within[0]),
            "var_between_s2": None if at is None else at.between,
            "mean_var_within_all_k_s2": None if overall is None else overall.mean_within,
            "var_between_all_k_s2": None if overall is None else overall.between,
        })
    return Table(name="variability",
                 title="KS tests between ranks and node variances (variances in s²)",
                 frame=Rows.of(rows))


def ks_table(a: TraceAnalysis) -> Table:
    """One trace's KS results, long."""
    why = ks_why(a)
    pair, all_ = a.ks_pair, a.ks_all
    rows = [
        ("D between the reference rank and the next",
         why if pair is None else f"{pair.statistic:.4g} (ranks of {pair.n} values)"),
        ("rejection threshold", why if pair is None else f"{pair.threshold:.4g} at α = "
                                                         f"{pair.alpha:g}"),
        ("verdict", why if pair is None else ("rejected: different distributions"
                                              if pair.rejected else "not rejected")),
        ("rank pairs rejected (reference vs all)",
         why if all_ is None else f"{100 * all_.fraction_rejected:.1f} % of "
                                  f"{all_.others.size} (reference rank {all_.reference})"),
    ]
    return Table(name="ks", title="Kolmogorov–Smirnov tests between ranks",
                 frame=Rows.of(rows, columns=["test", "result"]))


def _var(v: float) -> str:
    return f"{v:.3g} s²"


def node_table(a: TraceAnalysis) -> Table:
    """One trace's within- and between-node variances, long."""
    why = nodes_why(a)
    at, ov = a.nodes_at, a.nodes_overall
    one_node = "one node: no between-node variance"
    rows = [
        (f"within node 0, iteration k = {a.focus_iteration}",
         why if at is None else _var(float(at.within[0]))),
        (f"between nodes, iteration k = {a.focus_iteration}",
         why if at is None else (one_node if a.n_nodes < 2 else _var(at.between))),
        ("mean within-node, all iterations", why if ov is None else _var(ov.mean_within)),
        ("between nodes, all iterations",
         why if ov is None else (one_node if a.n_nodes < 2 else _var(ov.between))),
        ("nodes and ranks per node", f"{a.n_nodes} node(s), at most {a.ranks_per_node} ranks "
                                     "each"),
    ]
    return Table(name="nodes", title="Within- and between-node variance",
                 frame=Rows.of(rows, columns=["quantity", "value"]))


def fit_table(a: TraceAnalysis) -> Table:
    """The bulk fits of one trace: the ok fits by AIC on the binned likelihood, best first, then
    the fits whose maximum was not verified, with their status (never ranked, never modelled)."""
    rows, shown = [], []
    if a.bulk is not None:
        in_table = {m.family for m in a.stationary}
        for f in a.bulk.fits:
            rows.append({"family": f.name, "sse": f.sse, "ks": f.ks, "aic": f.aic,
                         "n_fit": f.n_fit, "params": " ".join(f"{p:.4g}" for p in f.params),
                         "converged": f.converged, "status": f.status,
                         "objective": f.objective, "criterion": f.criterion})
            flagged = [f"{fl.code}: {fl.message}" for fl in a.flags
                       if f"({f.name})" in fl.subject]
            if f.ok:
                status = "ok; " + ("in Table 1" if f.name in in_table else
                                   "not in Table 1: no model")
            else:
                status = f"{f.status}: {f.reason}; not ranked, no model"
            if flagged:
                status += "; flagged:\n" + "\n".join(flagged)
            shown.append({"family": f.name,
                          "SSE (1/s²)": f"{f.sse:.4g}" if np.isfinite(f.sse) else "—",
                          "KS distance": f"{f.ks:.3g}" if np.isfinite(f.ks) else "—",
                          "AIC": f"{f.aic:.6g}" if f.ok else "—", "n fitted": str(f.n_fit),
                          "parameters (shapes, loc, scale)": rows[-1]["params"],
                          "status": status})
    return Table(
        name="fits", title=f"Bulk fits of {run_name(a)}, ranked by AIC of the binned likelihood",
        frame=Rows.of(rows, columns=["family", "sse", "ks", "aic", "n_fit", "params",
                                          "converged", "status", "objective", "criterion"]),
        display=Rows.of(shown, columns=["family", "SSE (1/s²)", "KS distance", "AIC",
                                        "n fitted", "parameters (shapes, loc, scale)",
                                        "status"]),
        notes=(f"Family chosen by {CRITERION}.",) if rows else
              (next((n for n in a.notes if "fit" in n), "no fit"),),
    )


def fit_mapping(a: TraceAnalysis) -> dict[str, dict[str, Any]]:
    """summary.json's per-trace ``fits``: family -> params (scipy's order, seconds), status,
    objective (negative binned log-likelihood, nats) and criterion (AIC on it)."""
    if a.bulk is None:
        return {}
    return {f.name: {"params": list(f.params), "status": f.status, "objective": f.objective,
                     "criterion": f.criterion, "reason": f.reason, "limit": f.limit}
            for f in a.bulk.fits}


def passed_over(a: TraceAnalysis) -> dict[str, str]:
    """Family -> why an ok fit with a better AIC than the trace's best was not chosen: the best
    must also give a stationary model (a finite mean inside the data), and the analysis's note
    or flag about that family's model says why it gives none."""
    if a.bulk is None:
        return {}
    best = a.best_fit_name
    out: dict[str, str] = {}
    for fit in a.bulk.fits:
        if fit.name == best or not fit.ok:
            break
        lead = f"stationary model with {fit.name}"
        why = next((n[len(lead):].lstrip(": ").removeprefix("left out: ") for n in a.notes
                    if n.startswith(lead)), None)
        if why is None:
            why = next((f.message for f in a.flags if f.code == "infinite-mean"
                        and f.subject == f"stationary model ({fit.name})"),
                       "no stationary model")
        out[fit.name] = why
    return out


def fits_table(analyses: Sequence[TraceAnalysis]) -> Table:
    """Every trace's every fit (fits.csv): parameters in seconds in scipy's order (shapes...,
    loc, scale), status, objective and criterion, which fit is the trace's best, and why an ok
    fit with a better AIC was passed over."""
    rows = []
    for a in analyses:
        best = a.best_fit_name
        skipped = passed_over(a)
        half = None if a.tails is None else a.tails.best_fit
        for name, f in fit_mapping(a).items():
            h = half if half is not None and half.family == name else None
            rows.append({"trace": a.path or a.label, "family": name,
                         "q99_miss_heldout_pct": None if h is None or not np.isfinite(
                             h.miss) else 100 * h.miss,
                         "ks_heldout": None if h is None else h.ks,
                         "tail_miss": None if h is None else h.flagged,
                         "params": " ".join(repr(float(p)) for p in f["params"]),
                         "status": f["status"], "objective": f["objective"],
                         "criterion": f["criterion"], "best": name == best,
                         "passed_over": skipped.get(name, ""), "reason": f["reason"],
                         "limit": f["limit"]})
    return Table(name="fits", title="Every bulk fit of every trace",
                 frame=Rows.of(rows, columns=["trace", "family", "params", "status", "objective",
                                              "criterion", "best", "passed_over", "reason",
                                              "limit", "q99_miss_heldout_pct", "ks_heldout",
                                              "tail_miss"]),
                 notes=(f"Family chosen by {CRITERION}, among the ok fits that give a "
                        "stationary model (a finite mean inside the data). params: scipy's "
                        "(shapes..., loc, scale), loc and scale in seconds. objective: the "
                        "negative binned log-likelihood in nats. passed_over: why an ok fit with "
                        "a better AIC than the best gives no model. reason: why the status is "
                        "not ok. limit: for a boundary fit at a limit of its family that another "
                        "family of the set is exactly, that family. The best fit refitted on a "
                        "random half of the iterations: q99_miss_heldout_pct, its q99 against the "
                        "other half's; ks_heldout, its KS distance on that half; tail_miss, the "
                        "miss beyond 25 %.",))


def models_table(a: TraceAnalysis) -> Table:
    """One trace's models and bounds, long: a row per model with its signed error."""
    rows = []
    for p in predictions(a):
        value = p.why if p.value is None else fmt_time(p.value)
        if p.value is not None and p.stderr is not None:
            value += f" ± {fmt_time(p.stderr)}"
        rows.append({"model": p.name, "formula": p.formula, "fitted (in sample)": value,
                     "in-sample error": fmt_pct(p.error_pct) if p.value is not None else "—",
                     "flag": "\n".join(f"{f.code}: {f.message}" for f in p.flags) or "—"})
    return Table(name="models", title="Models and bounds fitted to this run, against its own "
                 "KSPSolve (in sample: a fit, not a prediction)",
                 frame=Rows.of(rows, columns=["model", "formula", "fitted (in sample)",
                                              "in-sample error", "flag"]),
                 notes=("In sample: every model here is fitted on this run's iterations and "
                        "compared with this run's time; how well a model predicts a run it was "
                        "not fitted on is in heldout.csv, beside naive baselines.",))
