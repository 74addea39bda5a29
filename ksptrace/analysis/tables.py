"""Tables built from analyses: the paper's Table 1 (models and bounds against KSPSolve), its
Tables 2 and 3 (Johnson S_U fits of a_k and s_k, simulated runtimes), a priori predictions,
scaling tables across P and n, and the variability statistics. Pure: rows in, text out.
"""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ksptrace.analysis import montecarlo
from ksptrace.analysis.pipeline import TraceAnalysis

Cell = str | int | float | None


@dataclass(frozen=True)
class Table:
    """A titled table of plain cells; None is an empty cell."""

    name: str
    """File-name stem of the CSV."""
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    notes: tuple[str, ...] = ()

    def records(self) -> list[dict[str, Cell]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def to_csv(self) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow(["" if c is None else c for c in row])
        return buf.getvalue()

    def to_html(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(fmt(c))}</td>" for c in row) + "</tr>"
            for row in self.rows
        )
        notes = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in self.notes)
        return (
            f"<h3>{html.escape(self.title)}</h3><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>{notes}"
        )


JSU_COLUMNS = tuple(f"{v} {p}" for v in ("a_k", "s_k") for p in ("a", "b", "loc", "scale"))
"""Johnson S_U parameters (scipy's a, b, loc, scale) of a_k and then of s_k."""


def _name(a: TraceAnalysis) -> str:
    """The trace's file name (its folder is in the report's metadata), or its label."""
    return a.path.rsplit("/", 1)[-1] if a.path else a.label


def fmt(c: Cell) -> str:
    """A cell as text: floats to four significant digits, None as empty."""
    if c is None:
        return ""
    if isinstance(c, float):
        if not math.isfinite(c):
            return str(c)
        return f"{c:.4g}"
    return str(c)


def rel(value: float | None, measured: float) -> float | None:
    """Relative error (value - measured) / measured, or None when there is no value."""
    if value is None or not measured:
        return None
    return (value - measured) / measured


def _config(a: TraceAnalysis) -> str:
    attrs = dict(a.attrs)
    return f"{attrs.get('problem', '?')} n={attrs.get('n', '?')}"


def model_table(analyses: Sequence[TraceAnalysis]) -> Table:
    """Table 1: measured KSPSolve next to every model and bound, with relative errors.

    Standard methods get E[T] = K E[max of N] per fitted family and Ê[T]; pipelined methods get
    E[T'] = K mu per family and Ê[T'] = sum_k mu_k. The bounds apply to standard methods.
    """
    families: list[str] = []
    for a in analyses:
        for fitted in a.stationary:
            if fitted.family not in families:
                families.append(fitted.family)
    cols = ["trace", "problem", "ksp", "model", "P", "N", "K", "KSPSolve"]
    for f in families:
        cols += [f"E_{f}", f"err_{f}"]
    cols += ["E_hat_unif", "err_hat_unif", "cramer", "err_cramer", "bertsimas", "err_bertsimas"]
    rows = []
    for a in analyses:
        row: list[Cell] = [
            _name(a),
            _config(a),
            a.ksp,
            "T'=max_p sum_k" if a.pipelined else "T=sum_k max_p",
            a.nprocs,
            round(a.count, 3),
            a.kept,
            a.measured,
        ]
        for f in families:
            m = a.model(f)
            value = None if m is None else (m.pipelined if a.pipelined else m.standard)
            row += [value, rel(value, a.measured)]
        ns = a.nonstationary.pipelined if a.pipelined else a.nonstationary.standard
        row += [ns, rel(ns, a.measured)]
        if a.pipelined:
            row += [None, None, None, None]
        else:
            row += [
                a.bounds.cramer,
                rel(a.bounds.cramer, a.measured),
                a.bounds.bertsimas,
                rel(a.bounds.bertsimas, a.measured),
            ]
        rows.append(tuple(row))
    return Table(
        name="table1_models",
        title="Models and bounds against measured KSPSolve (seconds; err = relative error)",
        columns=tuple(cols),
        rows=tuple(rows),
        notes=(
            "N is the number of independent units in the maximum (P, or P-hat = P / ranks per "
            "node). K counts the iterations kept for bulk statistics (pipeline-fill iterations "
            "dropped); the non-stationary Ê uses every recorded iteration.",
        ),
    )


def _jsu_cells(p: montecarlo.ParameterFits | None) -> list[Cell]:
    if p is None:
        return [None] * 8
    return [*p.lower.params, *p.span.params]


def prediction_table(analyses: Sequence[TraceAnalysis]) -> Table:
    """Tables 2 and 3: Johnson S_U fits of a_k and s_k, and the simulated runtime."""
    cols = (
        "trace",
        "ksp",
        "P",
        "N",
        "K",
        *JSU_COLUMNS,
        "KSPSolve",
        "simulated",
        "err_simulated",
        "runs",
    )
    rows = []
    for a in analyses:
        sim = a.simulated
        rows.append(
            (
                _name(a),
                a.ksp,
                a.nprocs,
                round(a.count, 3),
                a.kept,
                *_jsu_cells(a.parameters),
                a.measured,
                sim,
                rel(sim, a.measured),
                None if a.simulation is None else a.simulation.runs,
            )
        )
    return Table(
        name="table2_3_prediction",
        title="Johnson S_U fits of a_k and s_k, and Monte Carlo runtime against KSPSolve",
        columns=cols,
        rows=tuple(rows),
    )


def apriori_table(analyses: Sequence[TraceAnalysis], runs: int = 16, seed: int = 0) -> Table:
    """Parameters fitted on one trace predict every other trace of the same problem and KSP."""
    rows = []
    for src in analyses:
        if src.parameters is None:
            continue
        for dst in analyses:
            same_kind = (dict(src.attrs).get("problem"), src.ksp) == (
                dict(dst.attrs).get("problem"),
                dst.ksp,
            )
            if dst is src or not same_kind or dst.measured <= 0:
                continue
            pred = montecarlo.predict(
                src.parameters,
                dst.kept,
                max(1, round(dst.count)),
                dst.measured,
                dst.pipelined,
                src.label,
                dst.label,
                runs=runs,
                seed=seed,
            )
            rows.append(
                (pred.source, pred.target, pred.simulated, pred.measured, pred.relative_error)
            )
    return Table(
        name="apriori",
        title="A priori prediction: fits of one configuration predict another's runtime",
        columns=("fitted on", "predicts", "simulated", "KSPSolve", "err"),
        rows=tuple(rows),
        notes=() if rows else ("needs two traces of the same problem and KSP type",),
    )


def scaling_table(analyses: Sequence[TraceAnalysis], across: str = "P") -> Table:
    """Johnson S_U parameters of a_k and s_k across P (strong scaling) or across n (static)."""
    key = "nprocs" if across == "P" else "n"
    fixed = "n" if across == "P" else "nprocs"
    groups: dict[tuple[Cell, ...], list[TraceAnalysis]] = {}
    for a in analyses:
        attrs = dict(a.attrs)
        group: tuple[Cell, ...] = (str(attrs.get("problem")), a.ksp, _cell(attrs.get(fixed)))
        groups.setdefault(group, []).append(a)
    rows: list[tuple[Cell, ...]] = []
    for g, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
        values = {dict(m.attrs).get(key) for m in members}
        if len(values) < 2:
            continue
        for m in sorted(members, key=lambda m: _number(dict(m.attrs).get(key))):
            rows.append((*g, _cell(dict(m.attrs).get(key)), *_jsu_cells(m.parameters)))
    cols = (
        "problem",
        "ksp",
        fixed,
        key,
        *JSU_COLUMNS,
    )
    return Table(
        name=f"scaling_{key}",
        title=f"Johnson S_U parameters of a_k and s_k across {across}",
        columns=cols,
        rows=tuple(rows),
        notes=() if rows else (f"needs traces that differ only in {across}",),
    )


def _number(v: object) -> float:
    return float(v) if isinstance(v, int | float) else 0.0


def _cell(v: object) -> Cell:
    if v is None or isinstance(v, str | int | float):
        return v
    return str(v)


def variability_table(analyses: Sequence[TraceAnalysis]) -> Table:
    """KS tests between ranks and node variances of each trace."""
    rows = []
    for a in analyses:
        pair, all_ = a.ks_pair, a.ks_all
        at, overall = a.nodes_at, a.nodes_overall
        rows.append(
            (
                _name(a),
                a.ksp,
                a.nprocs,
                a.kept,
                None if pair is None else pair.statistic,
                None if pair is None else pair.threshold,
                None if all_ is None else all_.fraction_rejected,
                a.focus_iteration,
                None if at is None else float(at.within[0]),
                None if at is None else at.between,
                None if overall is None else overall.mean_within,
                None if overall is None else overall.between,
            )
        )
    return Table(
        name="variability",
        title="KS tests between ranks and node variances (seconds squared)",
        columns=(
            "trace",
            "ksp",
            "P",
            "K",
            "D(r0,r1)",
            "threshold",
            "fraction rejected (r0 vs all)",
            "iteration",
            "var node 0",
            "var between nodes",
            "mean var within (all k)",
            "var between (all k)",
        ),
        rows=tuple(rows),
    )


def fit_table(a: TraceAnalysis) -> Table:
    """The bulk fits of one trace, best first."""
    rows: list[tuple[Cell, ...]] = []
    if a.bulk is not None:
        for f in a.bulk.fits:
            params = " ".join(f"{p:.4g}" for p in f.params)
            rows.append((f.name, f.sse, f.ks, f.aic, params, f.n_fit))
    return Table(
        name="fits",
        title=f"Bulk fits of {a.label}, ranked by histogram SSE",
        columns=("family", "SSE", "KS", "AIC", "params (shapes, loc, scale)", "n fitted"),
        rows=tuple(rows),
    )
