"""The noise study's tables: each noisy run against its truth and the models, and standard
against pipelined methods under the same noise. Pure: a comparison in, tables out."""

from __future__ import annotations

from ksptrace.studies.noise.compare import NoiseComparison, NoiseRow
from ksptrace.studies.rows import Rows
from ksptrace.studies.table import Table
from ksptrace.studies.variability.conclusions.findings import fmt_pct, fmt_time

NEGATIVE_COST = ("cannot tell: the estimate came out below zero, which a cost cannot be (the "
                 "run's own variation swamps the detours)")


def _noise_label(row: NoiseRow) -> str:
    """A spec short enough for a table cell: 'pareto scale=333.3us shape=1.5 p=0.1'."""
    dist, _, rest = row.noise.partition(":")
    parts = [p for p in rest.split(",") if p and not p.startswith(("per=rank", "seed="))]
    return " ".join([dist, *parts])


def _slowdown(row: NoiseRow) -> str:
    pct = row.slowdown_pct
    return "no noise-free run of this configuration" if pct is None else fmt_pct(pct)


def noise_table(comparison: NoiseComparison) -> Table:
    """Each run with injected noise: measured, truth and the models, with signed errors."""
    rows, shown = [], []
    for r in comparison.rows:
        rows.append({
            "file": r.file, "ksp": r.ksp, "pipelined": r.pipelined, "P": r.nprocs,
            "oversubscribed": r.oversubscribed, "noise": r.noise, "N_truth": r.count,
            "K": r.iterations, "injected_mean_s": r.injected_mean,
            "kspsolve_s": r.measured, "noise_free_kspsolve_s": r.baseline,
            "slowdown_pct": r.slowdown_pct,
            "truth_s": r.shown(r.truth), "truth_source": r.truth_source,
            "err_pct_truth": r.error(r.truth),
            "stationary_family": r.stationary_family, "stationary_s": r.shown(r.stationary),
            "err_pct_stationary": r.error(r.stationary),
            "nonstationary_s": r.shown(r.nonstationary),
            "err_pct_nonstationary": r.error(r.nonstationary),
            "k_mu_s": r.shown(r.k_mu), "err_pct_k_mu": r.error(r.k_mu),
            "montecarlo_s": r.shown(r.montecarlo),
            "err_pct_montecarlo": r.error(r.montecarlo),
            "ks_rejected_pct": r.ks_rejected_pct,
            "detour_cost_s": None if r.cost_failed else r.detour_cost,
            "injected_lockstep_s": r.injected_lockstep,
            "injected_rank_max_s": r.injected_rank_max,
            "detour_cost_ratio": r.detour_cost_ratio,
        })

        def pred(value: float | None, why: str, r: NoiseRow = r) -> str:
            if value is not None and r.error(value) is None:
                return "failed: more than 11× off the measured KSPSolve"
            return why if value is None else f"{fmt_time(value)} ({fmt_pct(r.error(value))})"

        shown.append({
            "run": f"{r.ksp} P={r.nprocs}{' (oversubscribed)' if r.oversubscribed else ''}\n"
                   f"{_noise_label(r)}",
            "KSPSolve": fmt_time(r.measured),
            "slowdown vs noise-free": _slowdown(r),
            "known truth": pred(r.truth, "—")
                           + ("" if r.baseline is not None else "\nfrom this run's times"),
            "stationary": pred(r.stationary, "no converged fit")
                              + (f"\n{r.stationary_family}" if r.stationary_family else ""),
            "non-stationary Ê": pred(r.nonstationary, ""),
            "K·μ": pred(r.k_mu, ""),
            "Monte Carlo": pred(r.montecarlo, "no Johnson S_U fit"),
            "KS rejected": "P = 1: no rank pairs" if r.ks_rejected_pct is None
                           else f"{r.ks_rejected_pct:.0f} %",
            "detours cost (in-run)": NEGATIVE_COST + (
                "; the machine was loaded during the run" if r.loaded else
                "; no foreign load was recorded") if r.cost_failed
            else "no iteration without a detour"
            if r.detour_cost is None or r.detour_cost_ratio is None else
            f"{fmt_time(r.detour_cost)} = {r.detour_cost_ratio:.2f} × Σₖ maxₚ D"
            f"\n(hidden: {r.injected_rank_max / r.injected_lockstep:.2f} ×)",
        })
    notes = (
        "Errors are signed, against the measured KSPSolve. The known truth is K·E[max over N of "
        "X + D] for a standard method and K·(E[X] + p·E[D]) for a pipelined one, with X the "
        "noise-free run's iteration times and D the injected detour; the models are computed "
        "from the noisy run's own timings. The stationary and non-stationary columns show K·μ "
        "and Σ_k μ_k for a pipelined method. The in-run detour cost is KSPSolve minus K times "
        "the mean iteration without any detour (for a pipelined method, nor one in the "
        "iteration before, which it pays one iteration late): about 1 × Σₖ maxₚ D when the "
        "run waited for every iteration's slowest detour, down to maxₚ Σₖ D (the 'hidden' "
        "figure) when a pipelined method decoupled the ranks completely; it does not depend on "
        "the noise-free run, whose time drifts from run to run.",
        *comparison.notes,
    )
    return Table(name="noise", title="Injected noise: prediction vs measurement",
                 frame=Rows.of(rows), display=Rows.of(shown), notes=notes)


def noise_pair_table(comparison: NoiseComparison) -> Table:
    """Standard against pipelined under the same noise: slowdowns, the gap, its predictions."""
    rows, shown = [], []
    for pair in comparison.pairs:
        s, p = pair.standard, pair.pipelined
        rows.append({
            "standard": s.ksp, "pipelined": p.ksp, "P": s.nprocs, "noise": s.noise,
            "oversubscribed": s.oversubscribed,
            "slowdown_pct_standard": s.slowdown_pct, "slowdown_pct_pipelined": p.slowdown_pct,
            "measured_gap_s": pair.measured_gap, "nonstationary_gap_s": pair.nonstationary_gap,
            "err_pct_nonstationary_gap": pair.nonstationary_gap_error_pct,
            "truth_gap_s": pair.truth_gap,
            "ks_rejected_pct_standard": s.ks_rejected_pct,
            "ks_rejected_pct_pipelined": p.ks_rejected_pct,
            "err_pct_stationary_standard": s.error(s.stationary),
            "detour_cost_ratio_standard": s.detour_cost_ratio,
            "detour_cost_ratio_pipelined": p.detour_cost_ratio,
        })
        none = "no noise-free run"
        shown.append({
            "methods": f"{s.ksp} / {p.ksp} P={s.nprocs}"
                       f"{' (oversubscribed)' if s.oversubscribed else ''}",
            "noise": _noise_label(s),
            "slowdown standard / pipelined": f"{_slowdown(s)} / {_slowdown(p)}",
            "extra slowdown of the standard method": none if pair.measured_gap is None
            else fmt_time(pair.measured_gap),
            "predicted by Ê": none if pair.nonstationary_gap is None else
            f"{fmt_time(pair.nonstationary_gap)} ("
            + ("gap near 0: no per cent" if pair.nonstationary_gap_error_pct is None
               else fmt_pct(pair.nonstationary_gap_error_pct)) + ")",
            "implied by the injected noise": none if pair.truth_gap is None
            else fmt_time(pair.truth_gap),
            "KS rejected standard / pipelined": " / ".join(
                "—" if r.ks_rejected_pct is None else f"{r.ks_rejected_pct:.0f} %"
                for r in (s, p)),
            "stationary model, standard": "no converged fit" if s.stationary is None
            else fmt_pct(s.error(s.stationary)),
            "in-run detour cost standard / pipelined": " / ".join(
                "—" if r.detour_cost_ratio is None else f"{r.detour_cost_ratio:.2f}"
                for r in (s, p)) + " × Σₖ maxₚ D",
        })
    notes = ("The extra slowdown is (standard noisy − standard noise-free) − (pipelined noisy − "
             "pipelined noise-free) KSPSolve; the non-stationary prediction puts Ê[T] and Ê[T′] "
             "of the noisy runs in place of their measured times.",)
    return Table(name="noise_pairs",
                 title="Standard and pipelined methods under the same injected noise",
                 frame=Rows.of(rows), display=Rows.of(shown), notes=notes)
