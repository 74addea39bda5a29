"""The figures across traces, drawn once every trace has been digested (the paper's Figs. 8-11
kind of comparisons): the solvers side by side for one problem, n and P ("solvers-*"), and the
scaling with P or n ("scaling-P-*", "scaling-n-*"). A comparison with one configuration only
is not drawn; its reason goes to ``FigureSet.omitted``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from ksptrace.studies.variability.pages import figures, jsu_cells
from ksptrace.studies.variability.pages.collector import Collector
from ksptrace.studies.variability.pages.digest import LOG_EDGES, FigureSet, TraceDigest
from ksptrace.studies.variability.run.pipeline import TraceAnalysis


def _fmt_n(n: float | None) -> str:
    if n is None:
        return "n = ?"
    return f"n = {int(n)}" if float(n).is_integer() else f"n = {n:g}"


def _number(n: float | None) -> float:
    """n as a sort key: numbers in numeric order (30 000 before 100 000), unknown last."""
    return float("inf") if n is None else float(n)


def _solver_times(a: TraceAnalysis, label: str) -> figures.SolverTimes:
    best = a.best_fit_name
    model = a.model(best) if best is not None else None
    return figures.SolverTimes(
        label=label,
        measured=a.measured,
        lockstep_sum=a.lockstep_sum,
        rank_sum_max=a.rank_sum_max,
        nonstationary=a.nonstationary.pipelined if a.pipelined else a.nonstationary.standard,
        stationary=None if model is None else (model.pipelined if a.pipelined else model.standard),
        stationary_name=best,
        simulated=a.simulated,
        simulated_stderr=a.simulated_stderr,
    )


def _solver_figures(out: Collector, items: Sequence[tuple[TraceAnalysis, TraceDigest]]) -> None:
    """Solvers overlaid for the same problem, n and P (the paper's Figs. 10-11)."""
    groups: dict[tuple[str, float, int], list[tuple[TraceAnalysis, TraceDigest]]] = {}
    for a, d in items:
        groups.setdefault((d.problem, _number(d.n), d.nprocs), []).append((a, d))
    single: list[str] = []
    for (problem, _, nprocs), members in sorted(groups.items(), key=lambda kv: kv[0]):
        n = _fmt_n(members[0][1].n)
        solvers = list(dict.fromkeys(d.ksp for _, d in members))
        name = f"{problem}, {n}, P = {nprocs}"
        if len(solvers) < 2:
            single.append(f"{name} ({solvers[0]})")
            continue
        slug = f"{problem}-{n.replace(' ', '').replace('=', '')}-P{nprocs}"
        merged = []
        for s in solvers:
            mine = [d for _, d in members if d.ksp == s]
            merged.append((
                s if len(mine) == 1 else f"{s} ({len(mine)} runs)",
                [sum(getattr(d, w).counts for d in mine) for w in ("times", "lower", "span")],
            ))
        names = ("iteration time $T_p^k$", "minimum $a_k$", "span $s_k$")
        shown = [p for p in range(len(names)) if any(c[p].sum() > 0 for _, c in merged)]
        if nprocs == 1:  # one rank: its time is the iteration's minimum, aₖ = Tₚᵏ
            shown = [p for p in shown if p != 1]
        if not shown:
            single.append(f"{name} (every value below 1 ns)")
            continue
        left = [n for p, n in enumerate(("Tₚᵏ", "aₖ", "sₖ")) if p not in shown]
        gone = (" No aₖ or sₖ panel: at P = 1 the one rank's time is the iteration's minimum "
                "(aₖ = Tₚᵏ) and its span is 0." if nprocs == 1 else
                f" No {' or '.join(left)} panel: every value is below 1 ns." if left else "")
        out.later(
            f"solvers-distributions-{slug}",
            f"Solvers compared: {name}",
            f"Distributions of {', '.join(('Tₚᵏ', 'aₖ', 'sₖ')[p] for p in shown)} (kept "
            f"iterations, repetitions pooled) of each solver for {name} (the paper's Figs. "
            "10-11). Logarithmic time axes, density per decade, so that solvers far apart share "
            f"the axes; values below 1 ns are not shown.{gone}",
            functools.partial(
                figures.solver_distributions, LOG_EDGES,
                [(label, [c[p] for p in shown]) for label, c in merged],
                tuple(names[p] for p in shown)),
        )
        seen: dict[str, int] = {}
        rows = []
        for a, d in members:
            seen[d.ksp] = seen.get(d.ksp, 0) + 1
            label = d.ksp if seen[d.ksp] == 1 else f"{d.ksp} #{seen[d.ksp]}"
            kind = "pipelined" if d.pipelined else "standard"
            rows.append(_solver_times(a, f"{label}\n({kind})"))
        out.later(
            f"solvers-models-{slug}",
            f"Measured and modelled KSPSolve: {name}",
            f"For each run of {name}: the measured KSPSolve (slowest rank), the measured "
            "Σₖ maxₚ Tₚᵏ and maxₚ Σₖ Tₚᵏ, the non-stationary model, the best stationary model "
            "(least AIC among verified fits) and the Monte Carlo mean with its standard "
            "error, each for the "
            "method kind the solver is (standard or pipelined).",
            functools.partial(figures.solver_times, rows),
        )
    if single:
        out.omitted.append(
            f"one solver only, no solver comparison for: {'; '.join(single)}"
        )


def _scaling_figures(out: Collector, items: Sequence[tuple[TraceAnalysis, TraceDigest]],
                     across: str) -> None:
    """Model parameters across P (fixed n) or across n (fixed P) (the paper's Figs. 8-9)."""
    groups: dict[tuple[str, str, float, str],
                 dict[float, list[tuple[TraceAnalysis, TraceDigest]]]] = {}
    for a, d in items:
        x = float(d.nprocs) if across == "P" else d.n
        if x is None:
            continue
        fixed = _fmt_n(d.n) if across == "P" else f"P = {d.nprocs}"
        order = _number(d.n) if across == "P" else float(d.nprocs)
        groups.setdefault((d.problem, d.ksp, order, fixed), {}).setdefault(x, []).append((a, d))
    single: list[str] = []
    for (problem, ksp, _, fixed), by_x in sorted(groups.items(), key=lambda kv: kv[0]):
        name = f"{problem}, {ksp}, {fixed}"
        if len(by_x) < 2:
            single.append(name)
            continue
        points = []
        missing: list[str] = []
        for x, members in sorted(by_x.items()):
            params = next((a.parameters for a, _ in members if a.parameters is not None), None)
            fits = {}
            for w, name_w in (("lower", "aₖ"), ("span", "sₖ")):
                collapsed = params is not None and getattr(params, f"{w}_normal") is not None
                fit = fits[w] = None if params is None or collapsed else getattr(params, w)
                if fit is None:
                    why = ("collapsed" if collapsed else "P = 1: sₖ = 0, so no Monte Carlo fits"
                           if members[0][1].nprocs == 1 else "not fitted")
                    missing.append(f"{name_w} at {across} = {x:g} ({why})")
                elif jsu_cells.form(fit, None) == jsu_cells.LOGNORMAL:
                    missing.append(f"the shape a of {name_w} at {across} = {x:g} (lognormal "
                                   "limit: not determined)")
            points.append(figures.ScalingPoint(
                x=x,
                mean=float(np.mean([d.mean for _, d in members])),
                std=float(np.mean([d.std for _, d in members])),
                lower=fits["lower"],
                span=fits["span"],
            ))
        slug = f"{problem}-{ksp}-{fixed.replace(' ', '').replace('=', '')}"
        what = "processor counts P" if across == "P" else "problem sizes n"
        gaps = f" No Johnson S_U fit drawn for {', '.join(missing)}." if missing else ""
        if not any(p.lower or p.span for p in points):
            gaps = (" Only the moments are drawn: no Johnson S_U fit of aₖ or sₖ at any "
                    f"{across}" + (" (at P = 1 sₖ = 0, and the Monte Carlo fits were not made)"
                                   if fixed == "P = 1" else "") + ".")
        out.later(
            f"scaling-{across}-{slug}",
            f"Across {what}: {name}",
            f"Model parameters of {name} at {len(points)} {what}: mean ± standard deviation "
            "of the kept Tₚᵏ (repetitions averaged), the Johnson S_U shape parameters a and b "
            "of aₖ and sₖ, and the fitted aₖ and sₖ densities (first repetition; per decade on a "
            "logarithmic axis when they span orders of magnitude) (the paper's "
            f"Figs. 8-9).{gaps}",
            functools.partial(figures.scaling, points, across),
        )
    if single:
        out.omitted.append(f"one {across} only, no scaling plot across {across} for: "
                           + "; ".join(single))


def across_figures(items: Sequence[tuple[TraceAnalysis, TraceDigest]],
                   jobs: int = 1) -> FigureSet:
    """Solvers compared (Figs. 10-11) and model parameters across P and across n (Figs. 8-9),
    drawn in ``jobs`` processes."""
    out = Collector()
    out.guarded("solver comparisons", _solver_figures, out, items)
    out.guarded("scaling across P", _scaling_figures, out, items, "P")
    out.guarded("scaling across n", _scaling_figures, out, items, "n")
    return out.result(jobs)
