"""The whole per-trace analysis of the paper, as one pure function of an in-memory Trace.

Which iterations feed which method:

* bulk fits, the stationary models, the bounds, the KS tests and the Monte Carlo use the
  *kept* iterations (pipeline-fill iterations dropped unless asked otherwise), and K is their
  number;
* the non-stationary models use every recorded iteration, each with its own uniform fit.

A step that cannot be computed (P = 1, K < 2, too few values) leaves its result at None and adds
a note that says why; the other steps still run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ksptrace.analysis import ks, models, montecarlo
from ksptrace.analysis.cycles import CycleLayout, cycle_layout, fill_was_recorded, is_pipelined
from ksptrace.analysis.fitting import (
    DEFAULT_CANDIDATES,
    MIN_SAMPLES,
    FitRanking,
    JohnsonSU,
    fit_candidates,
    outliers_explain_mean,
)
from ksptrace.analysis.nodes import NodeVariance, node_variance
from ksptrace.errors import AnalysisError, UsageError
from ksptrace.trace.model import Trace

Progress = Callable[[str, float], None]
"""Called with (step name, fraction done of that step)."""

INDEPENDENT_UNITS = ("nodes", "ranks")


@dataclass(frozen=True)
class AnalysisOptions:
    """Knobs of the analysis, each with its default."""

    alpha: float = 0.05
    """Significance level of the KS tests."""
    reference_rank: int = 0
    """Rank tested against all others."""
    candidates: tuple[str, ...] = DEFAULT_CANDIDATES
    """Distribution families fitted to the bulk data."""
    fit_size: int | None = 10_000
    """Fit on a seeded subsample of this many values (None: all values)."""
    bins: int = 200
    independent: str = "nodes"
    """Independent units in the max: 'nodes' (N = the trace's node count) or 'ranks' (N = P)."""
    drop_fill: bool = True
    """Drop pipelined GMRES's pipeline-fill iterations from bulk statistics."""
    mc_runs: int = 16
    seed: int = 0
    iteration: int | None = None
    """Iteration for per-iteration node variances (default: a mid-cycle one)."""

    def __post_init__(self) -> None:
        if self.independent not in INDEPENDENT_UNITS:
            raise UsageError(
                f"independent must be one of {', '.join(INDEPENDENT_UNITS)}, "
                f"got {self.independent!r}"
            )
        if self.mc_runs < 1:
            raise UsageError(f"mc_runs must be >= 1, got {self.mc_runs}")
        ks.critical_value(self.alpha)


@dataclass(frozen=True)
class Flag:
    """A result a reader must not take at face value, and why.

    ``code`` is a stable id: "prediction-far" (a model or the Monte Carlo is more than 50 % off
    the measured KSPSolve), "fit-mean-outliers" (a converged fit whose mean differs from the
    sample mean because of outliers), "fit-mean-far" (a converged fit whose mean differs from
    the sample mean for no reason found), "jsu-collapsed" (a Johnson S_U fit of a_k or s_k
    collapsed to its normal limit), "one-node" (N = 1: every model is K times the mean),
    "infinite-mean" (a fitted family with no finite mean: no E[max of N]).
    """

    code: str
    subject: str
    """What it is about: "Monte Carlo", "stationary model (lognorm)", "JSU fit of s_k"."""
    message: str
    """One sentence with the numbers and the reason where known."""


@dataclass(frozen=True)
class TraceAnalysis:
    """Everything the paper computes for one trace."""

    label: str
    path: str | None
    ksp: str
    pipelined: bool
    nprocs: int
    ranks_per_node: int
    count: float
    """N in the expected maximum: the node count (independent="nodes") or P ("ranks")."""
    iterations: int
    """K recorded."""
    kept: int
    """K used by bulk statistics."""
    measured: float
    """KSPSolve of the slowest rank."""
    layout: CycleLayout
    focus_iteration: int
    uniform: models.UniformFits
    nonstationary: models.NonStationaryModel
    lockstep_sum: float
    """sum_k max_p T_p^k of the trace (kept iterations)."""
    rank_sum_max: float
    """max_p sum_k T_p^k of the trace (kept iterations)."""
    bounds: models.Bounds
    ks_all: ks.KSOneVsAll | None = None
    ks_pair: ks.KSTest | None = None
    nodes_at: NodeVariance | None = None
    nodes_overall: NodeVariance | None = None
    bulk: FitRanking | None = None
    stationary: tuple[models.StationaryModel, ...] = ()
    parameters: montecarlo.ParameterFits | None = None
    simulation: montecarlo.Simulation | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    attrs: tuple[tuple[str, object], ...] = ()
    flags: tuple[Flag, ...] = ()
    n_nodes: int = 1
    """The trace's node count (distinct node ids)."""

    def model(self, family: str) -> models.StationaryModel | None:
        return next((m for m in self.stationary if m.family == family), None)

    @property
    def simulated(self) -> float | None:
        """The Monte Carlo runtime of the method kind this trace ran."""
        if self.simulation is None:
            return None
        sim = self.simulation
        return sim.pipelined_mean if self.pipelined else sim.standard_mean

    @property
    def simulated_stderr(self) -> float | None:
        """Standard error of ``simulated`` over the Monte Carlo runs (None with one run)."""
        if self.simulation is None:
            return None
        sim = self.simulation
        return sim.pipelined_stderr if self.pipelined else sim.standard_stderr

    @property
    def best_fit_name(self) -> str | None:
        """The lowest-SSE family that has a stationary model (the best one Table 1 shows)."""
        if self.bulk is None:
            return None
        shown = {m.family for m in self.stationary}
        return next((f.name for f in self.bulk.fits if f.name in shown), None)

    def flagged(self, code: str) -> tuple[Flag, ...]:
        """The flags with this code."""
        return tuple(f for f in self.flags if f.code == code)


FIT_MEAN_TOLERANCE = 0.5
"""A fitted family whose mean is off the sample mean by more than this fraction is flagged."""
PREDICTION_TOLERANCE = 0.5
"""A model or Monte Carlo prediction off the measured KSPSolve by more than this is flagged."""


def _mean_flag(code_subject: str, fitted: float, data: np.ndarray) -> Flag | None:
    """A flag when a converged fit's mean is far from the sample mean, with the reason if known."""
    sample = float(np.mean(data))
    if abs(fitted - sample) <= FIT_MEAN_TOLERANCE * abs(sample):
        return None
    gap = (
        f"the fitted mean {fitted:.3g} s is {abs(fitted / sample - 1):.0%} "
        f"{'below' if fitted < sample else 'above'} the sample mean {sample:.3g} s"
    )
    found = outliers_explain_mean(data, fitted, FIT_MEAN_TOLERANCE)
    if found is not None:
        return Flag(
            "fit-mean-outliers",
            code_subject,
            f"{gap} because of outliers ({found.describe()}); without them the sample mean is "
            f"{found.clean_mean:.3g} s, which the fit follows",
        )
    return Flag("fit-mean-far", code_subject, f"{gap}, and outliers do not explain it")


def _stationary_models(
    bulk: FitRanking,
    kept: np.ndarray,
    k: int,
    count: float,
    notes: list[str],
    flags: list[Flag],
) -> tuple[models.StationaryModel, ...]:
    """A stationary model per converged fit; those whose mean is far from the data flagged.

    Only fits that did not converge (a non-finite model, or a mean both far from the sample mean
    and outside the data's range) are left out. A fit that follows the bulk while outliers pull
    the sample mean stays, flagged, as the paper keeps such rows.
    """
    stationary = []
    lo, hi = float(kept.min()), float(kept.max())
    for fit in bulk.fits:
        subject = f"stationary model ({fit.name})"
        dist = fit.frozen()
        if not models.has_finite_mean(dist):
            flags.append(
                Flag(
                    "infinite-mean",
                    subject,
                    f"the {fit.name} fit {tuple(round(p, 6) for p in fit.params)} has no finite "
                    "mean, so its E[max of N] and K mu are infinite; no model from it",
                )
            )
            continue
        try:
            model = models.stationary_model(fit.name, dist, k, count)
        except AnalysisError as exc:
            notes.append(f"stationary model with {fit.name}: {exc}")
            continue
        fitted_mean = model.mean
        flag = _mean_flag(subject, fitted_mean, kept)
        inside = lo <= fitted_mean <= hi
        if not np.isfinite(model.standard) or (flag is not None and not inside):
            notes.append(
                f"stationary model with {fit.name} left out: the fitted mean "
                f"{fitted_mean:.4g} s lies outside the data's range {lo:.4g}..{hi:.4g} s "
                "(the fit did not converge to the data)"
            )
            continue
        if flag is not None:
            flags.append(flag)
        stationary.append(model)
    return tuple(stationary)


def _parameter_flags(params: montecarlo.ParameterFits, fits: models.UniformFits) -> list[Flag]:
    """Flags on the Johnson S_U fits of a_k and s_k: collapsed, or mean far from the data."""
    flags = []
    for what, jsu, normal, data in (
        ("a_k", params.lower, params.lower_normal, fits.lower),
        ("s_k", params.span, params.span_normal, fits.span),
    ):
        subject = f"JSU fit of {what}"
        if normal is not None:
            flags.append(
                Flag(
                    "jsu-collapsed",
                    subject,
                    f"the Johnson S_U fit of {what} collapsed to its normal limit "
                    f"(a = {jsu.a:.3g}, b = {jsu.b:.3g}, loc = {jsu.loc:.3g} s, "
                    f"scale = {jsu.scale:.3g} s for data of mean {np.mean(data):.3g} s); "
                    f"the Monte Carlo draws {what} from the normal fit N({normal.mean:.3g} s, "
                    f"{normal.std:.3g} s) instead, cut at zero",
                )
            )
            continue
        flag = _mean_flag(subject, _jsu_mean(jsu), data)
        if flag is not None:
            flags.append(
                replace(flag, message=f"{flag.message}; the simulated runtime is unreliable")
            )
    return flags


def _jsu_mean(jsu: JohnsonSU) -> float:
    return float(jsu.frozen().mean())


def _count_flags(nprocs: int, count: float) -> list[Flag]:
    """The one-node flag: with N = 1 every model is K times the mean."""
    if count != 1:
        return []
    if nprocs == 1:
        why = "P = 1"
    else:
        why = (
            f"all {nprocs} ranks share one node and N counts nodes "
            "(--independent ranks makes N = P)"
        )
    return [
        Flag(
            "one-node",
            "models",
            f"N = 1 ({why}): E[max of N] is the mean, so every stationary model is K times the "
            "mean, the non-stationary Ê[T] equals Ê[T'], the bounds equal K mu and the Monte "
            "Carlo draws one rank; they cannot show the cost of waiting for the slowest rank",
        )
    ]


def _reason(flags: Sequence[Flag], subjects: Sequence[str]) -> str:
    """The messages of the flags already raised on these subjects, as a reason."""
    known = [f for f in flags if f.subject in subjects or f.code == "one-node"]
    if not known:
        return "no reason found"
    return "; ".join(f"{f.subject}: {f.message}" for f in known)


def _prediction_flags(a: TraceAnalysis, flags: Sequence[Flag]) -> list[Flag]:
    """A flag for every model or Monte Carlo prediction more than 50 % off KSPSolve."""
    if not a.measured > 0:
        return []
    out = []
    candidates: list[tuple[str, float | None, tuple[str, ...]]] = [
        (
            f"stationary model ({m.family})",
            m.pipelined if a.pipelined else m.standard,
            (f"stationary model ({m.family})",),
        )
        for m in a.stationary
    ]
    candidates.append(
        (
            "non-stationary model",
            a.nonstationary.pipelined if a.pipelined else a.nonstationary.standard,
            (),
        )
    )
    candidates.append(("Monte Carlo", a.simulated, ("JSU fit of a_k", "JSU fit of s_k")))
    for subject, value, related in candidates:
        if value is None or abs(value - a.measured) <= PREDICTION_TOLERANCE * a.measured:
            continue
        err = value / a.measured - 1.0
        out.append(
            Flag(
                "prediction-far",
                subject,
                f"{value:.4g} s against the measured KSPSolve {a.measured:.4g} s ({err:+.0%}); "
                f"reason: {_reason(flags, related)}",
            )
        )
    return out


def check_timings(trace: Trace) -> None:
    """Raise AnalysisError when the timings cannot be analysed (NaN, inf, negative)."""
    fault = trace.timing_fault()
    if fault is not None:
        raise AnalysisError(f"{trace.path or trace.label}: {fault}; rerun the run that made it")


def layout_of(trace: Trace) -> CycleLayout:
    """The restart-cycle layout of a trace, from its KSP type and attributes."""
    ksp = str(trace.attr("ksp", "") or "")
    restart = trace.attr("restart", None)
    requested = trace.attr("iterations", None)
    fill = fill_was_recorded(
        ksp, trace.iterations, int(requested) if isinstance(requested, int | float) else None
    )
    return cycle_layout(
        trace.iterations, ksp, int(restart) if isinstance(restart, int | float) else None, fill
    )


def _noop(step: str, fraction: float) -> None:
    return None


def analyze_trace(
    trace: Trace, options: AnalysisOptions | None = None, progress: Progress | None = None
) -> TraceAnalysis:
    """Run every analysis of the paper on one trace."""
    opt = options or AnalysisOptions()
    tick = progress or _noop
    check_timings(trace)
    notes: list[str] = []
    flags: list[Flag] = []
    ksp = str(trace.attr("ksp", "?"))
    pipelined = is_pipelined(ksp)
    times = trace.iteration_seconds
    nprocs, k_all = times.shape
    rpn = trace.ranks_per_node
    n_nodes = trace.n_nodes
    # N is a whole number of independent units: the nodes the trace ran on (P = 200 on 16-core
    # nodes is 13 nodes, not P / ranks-per-node = 12.5), or every rank.
    count = float(n_nodes) if opt.independent == "nodes" else float(nprocs)
    layout = layout_of(trace)
    keep = layout.keep(opt.drop_fill)
    kept = times if keep.size == k_all else times[:, keep]
    k = int(kept.shape[1])
    focus = opt.iteration
    if focus is None:
        mid = layout.at_position(layout.middle_position())
        focus = int(mid[1] if mid.size > 1 else mid[0]) if mid.size else 0
    if not 0 <= focus < k_all:
        raise UsageError(f"iteration {focus} is outside 0..{k_all - 1} for {trace.label}")

    tick("uniform fits", 0.0)
    uniform = models.uniform_fits(times)
    nonstationary = models.nonstationary_model(uniform, count)
    bulk_mean, bulk_std = float(kept.mean()), float(kept.std())
    bounds = models.Bounds(iterations=k, count=count, mean=bulk_mean, std=bulk_std)
    result: dict[str, object] = {}

    if nprocs < 2:
        notes.append("P = 1: the KS tests between ranks and node variances need >= 2 ranks")
    elif k < 2:
        notes.append("K < 2: the KS tests need >= 2 iterations per rank")
    else:
        tick("KS tests", 0.0)
        result["ks_all"] = ks.one_vs_all(
            kept,
            opt.reference_rank,
            opt.alpha,
            progress=lambda f: tick("KS tests", f),
        )
        other = 1 if opt.reference_rank != 1 else 0
        result["ks_pair"] = ks.compare_ranks(kept, opt.reference_rank, other, opt.alpha)
    if nprocs >= 2:
        tick("node variances", 0.0)
        result["nodes_at"] = node_variance(times, trace.node_ids, focus)
        result["nodes_overall"] = node_variance(kept, trace.node_ids)

    if kept.size < MIN_SAMPLES or bulk_std == 0:
        notes.append(f"{kept.size} distinct-enough samples: too few for distribution fits")
    else:
        tick("bulk fits", 0.0)
        bulk = fit_candidates(kept, opt.candidates, opt.bins, opt.fit_size, opt.seed)
        result["bulk"] = bulk
        for name, why in bulk.failed:
            notes.append(f"fit of {name} failed: {why}")
        tick("stationary models", 0.0)
        result["stationary"] = _stationary_models(bulk, kept, k, count, notes, flags)

    kept_uniform = uniform if keep.size == k_all else models.uniform_fits(kept)
    if k < MIN_SAMPLES:
        notes.append(f"K = {k} < {MIN_SAMPLES}: too few iterations to fit a_k and s_k")
    else:
        tick("Monte Carlo", 0.0)
        try:
            params = montecarlo.fit_parameters(kept_uniform, opt.fit_size, opt.seed)
            result["parameters"] = params
            flags.extend(_parameter_flags(params, kept_uniform))
            result["simulation"] = montecarlo.simulate(
                params,
                k,
                int(count),
                runs=opt.mc_runs,
                seed=opt.seed,
                progress=lambda f: tick("Monte Carlo", f),
            )
        except AnalysisError as exc:
            notes.append(f"Monte Carlo skipped: {exc}")
    flags.extend(_count_flags(nprocs, count))
    tick("done", 1.0)
    analysis = TraceAnalysis(
        label=trace.label,
        path=trace.path,
        ksp=ksp,
        pipelined=pipelined,
        nprocs=nprocs,
        ranks_per_node=rpn,
        count=count,
        iterations=k_all,
        kept=k,
        measured=trace.solve_max,
        layout=layout,
        focus_iteration=focus,
        uniform=uniform,
        nonstationary=nonstationary,
        lockstep_sum=models.measured_standard(kept),
        rank_sum_max=models.measured_pipelined(kept),
        bounds=bounds,
        notes=tuple(notes),
        attrs=tuple(sorted((str(a), v) for a, v in trace.attrs.items())),
        n_nodes=n_nodes,
        **result,  # type: ignore[arg-type]
    )
    far = _prediction_flags(analysis, flags)
    return replace(analysis, flags=(*flags, *far))
