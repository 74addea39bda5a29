"""The whole per-trace analysis of the paper, as one pure function of an in-memory Trace.

Which iterations feed which method:

* bulk fits, the stationary models, the bounds, the KS tests and the Monte Carlo use the
  *kept* iterations (pipeline-fill iterations dropped unless asked otherwise), and K is their
  number;
* the non-stationary models use every recorded iteration, each with its own uniform fit.

A step that cannot be computed (P = 1, K < 2, too few values) leaves its result at None and adds
a note that says why; the other steps still run.

A result that can be computed but must not be taken at face value carries a Flag instead of being
dropped or shown silently: a prediction more than 50 % off KSPSolve (with the reason when one is
known), a converged fit whose mean is pulled by outliers (kept in Table 1), a Johnson S_U fit of
a_k or s_k collapsed to its normal limit (the Monte Carlo then draws from the normal fit), N = 1,
and a fitted family with no finite mean. N is the trace's node count (independent="nodes") or P.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from ksptrace.errors import AnalysisError, KsptraceError, UsageError
from ksptrace.noise.spec import NoiseSpec, parse
from ksptrace.studies.variability import ks, models, montecarlo
from ksptrace.studies.variability.cycles import (
    CycleLayout,
    cycle_layout,
    fill_was_recorded,
    is_pipelined,
)
from ksptrace.studies.variability.fitting import (
    DEFAULT_CANDIDATES,
    MIN_SAMPLES,
    FitRanking,
    fit_candidates,
)
from ksptrace.studies.variability.injected import InjectedNoise, injected_noise
from ksptrace.studies.variability.nodes import NodeVariance, node_variance
from ksptrace.studies.variability.outliers import outliers, outliers_explain_mean
from ksptrace.trace.model import FOREIGN_LOAD_LIMIT, Trace

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
    pool_solves: bool = False
    """In a trace of several solves, analyse the solves of each length together (one after
    the other) instead of each solve on its own."""

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
    "infinite-mean" (a fitted family with no finite mean: no E[max of N]), "machine-loaded"
    (other processes used more than 10 % of the node's CPUs during the solve), "log-on" (PETSc's
    full event log ran during the timed solve).
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
    injection: InjectedNoise | None = None
    """The injected noise (spec 'none' for a noise-free run) and the natural iteration times."""

    @property
    def noisy(self) -> bool:
        return self.injection is not None and self.injection.spec.active

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


def _t(seconds: float) -> str:
    """A time in the unit that suits it, 3 significant digits: '28 ms', '398 µs'."""
    size = abs(seconds)
    if size >= 1.0 or size == 0.0 or not np.isfinite(size):
        return f"{seconds:.3g} s"
    if size >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if size >= 1e-6:
        return f"{seconds * 1e6:.3g} µs"
    return f"{seconds * 1e9:.3g} ns"


def _mean_flag(
    subject: str, name: str, fitted: float, data: np.ndarray, reasons: dict[str, str]
) -> Flag | None:
    """A flag when a converged fit's mean is far from the sample mean, with the reason if known.

    Records in ``reasons`` the short reason it gives a prediction that is far off.
    """
    sample = float(np.mean(data))
    if abs(fitted - sample) <= FIT_MEAN_TOLERANCE * abs(sample):
        return None
    side = "below" if fitted < sample else "above"
    off = (
        f"{abs(fitted / sample - 1):.0%} {side} the sample mean {_t(sample)}"
        if sample != 0
        else f"{side} the sample mean 0 s"
    )
    gap = f"the fitted mean {_t(fitted)} is {off}"
    found = outliers_explain_mean(data, fitted, FIT_MEAN_TOLERANCE)
    if found is not None:
        where = f"{found.count} of {found.total} values from {_t(found.low)} to {_t(found.high)}"
        reasons[subject] = (
            f"{name} follows the bulk (mean {_t(fitted)}) while outliers ({where}) pull the "
            f"sample mean to {_t(sample)}"
        )
        return Flag(
            "fit-mean-outliers",
            subject,
            f"{gap} because of outliers ({where}); without them the sample mean is "
            f"{_t(found.clean_mean)}, which the fit follows",
        )
    reasons[subject] = f"the mean of {name}, {_t(fitted)}, is {off}"
    return Flag("fit-mean-far", subject, f"{gap}, and outliers do not explain it")


def _stationary_models(
    bulk: FitRanking,
    kept: np.ndarray,
    k: int,
    count: float,
    notes: list[str],
    flags: list[Flag],
    reasons: dict[str, str],
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
        try:
            model = models.stationary_model(fit.name, dist, k, count)
        except AnalysisError as exc:
            if models.has_finite_mean(dist):
                notes.append(f"stationary model with {fit.name}: {exc}")
                continue
            shapes = ", ".join(f"{p:.3g}" for p in fit.params[:-2])
            flags.append(
                Flag(
                    "infinite-mean",
                    subject,
                    f"the {fit.name} fit (shape {shapes}) has no finite mean, so E[max of N] "
                    "and K mu are infinite: no model from this family",
                )
            )
            continue
        fitted_mean = model.mean
        found: dict[str, str] = {}
        flag = _mean_flag(subject, f"the {fit.name} fit", fitted_mean, kept, found)
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
            reasons.update(found)
        stationary.append(model)
    return tuple(stationary)


def _parameter_flags(
    params: montecarlo.ParameterFits, fits: models.UniformFits, reasons: dict[str, str]
) -> list[Flag]:
    """Flags on the Johnson S_U fits of a_k and s_k: collapsed, or mean far from the data."""
    flags = []
    for what, jsu, normal, data in (
        ("a_k", params.lower, params.lower_normal, fits.lower),
        ("s_k", params.span, params.span_normal, fits.span),
    ):
        subject = f"JSU fit of {what}"
        if normal is not None:
            reasons[subject] = (
                f"the Johnson S_U fit of {what} collapsed to its normal limit "
                f"(a = {jsu.a:.3g}, loc = {_t(jsu.loc)}) and {what} was drawn from a normal fit"
            )
            flags.append(
                Flag(
                    "jsu-collapsed",
                    subject,
                    f"the Johnson S_U fit of {what} collapsed to its normal limit "
                    f"(a = {jsu.a:.3g}, b = {jsu.b:.3g}, loc = {_t(jsu.loc)}, "
                    f"scale = {_t(jsu.scale)} for data of mean {_t(float(np.mean(data)))}); "
                    f"the Monte Carlo draws {what} from the normal fit (mean "
                    f"{_t(normal.mean)}, std {_t(normal.std)}) instead, cut at zero",
                )
            )
            continue
        flag = _mean_flag(
            subject, f"the Johnson S_U fit of {what}", float(jsu.frozen().mean()), data, reasons
        )
        if flag is not None:
            flags.append(
                replace(flag, message=f"{flag.message}; the simulated runtime is unreliable")
            )
    return flags


def _count_flags(nprocs: int, count: float, reasons: dict[str, str]) -> list[Flag]:
    """The one-node flag: with N = 1 every model is K times the mean."""
    if count != 1:
        return []
    if nprocs == 1:
        why = "P = 1"
    else:
        why = (
            f"all {nprocs} ranks share one node and N counts nodes; --independent ranks "
            "makes N = P"
        )
    if nprocs > 1:
        reasons["N = 1"] = (
            "with N = 1 the model is K times the mean and misses the wait for the slowest rank"
        )
    return [
        Flag(
            "one-node",
            "models",
            f"N = 1 ({why}): E[max of N] is the mean, so every stationary model is K times the "
            "mean, the non-stationary Ê[T] equals Ê[T'], both bounds equal K mu and the Monte "
            "Carlo draws one rank; no model shows the wait for the slowest rank",
        )
    ]


def _data_outliers(kept: np.ndarray) -> str | None:
    """A reason when the kept T_p^k hold outliers, for a far prediction with no other reason."""
    found = outliers(kept)
    if found is None:
        return None
    return (
        f"the data hold outliers ({found.count} of {found.total} values from {_t(found.low)} "
        f"to {_t(found.high)}; mean {_t(found.sample_mean)}, {_t(found.clean_mean)} without "
        "them)"
    )


def _prediction_flags(
    a: TraceAnalysis, reasons: dict[str, str], kept: np.ndarray
) -> list[Flag]:
    """A flag for every model or Monte Carlo prediction more than 50 % off KSPSolve.

    The reason is that of the flags the prediction stems from (a fit pulled by outliers, a
    collapsed S_U fit, N = 1); failing those, the outliers of the data when there are any.
    """
    if not a.measured > 0:
        return []
    fallback: list[str | None] = []
    lockstep = () if a.pipelined else ("N = 1",)
    candidates: list[tuple[str, float | None, tuple[str, ...]]] = [
        (
            f"stationary model ({m.family})",
            m.pipelined if a.pipelined else m.standard,
            (f"stationary model ({m.family})", *lockstep),
        )
        for m in a.stationary
    ]
    candidates.append(
        (
            "non-stationary model",
            a.nonstationary.pipelined if a.pipelined else a.nonstationary.standard,
            lockstep,
        )
    )
    candidates.append(("Monte Carlo", a.simulated, ("JSU fit of a_k", "JSU fit of s_k", *lockstep)))
    out = []
    for subject, value, related in candidates:
        if value is None or abs(value - a.measured) <= PREDICTION_TOLERANCE * a.measured:
            continue
        known = [reasons[r] for r in related if r in reasons]
        if not known:
            if not fallback:
                fallback.append(_data_outliers(kept))
            known = [r for r in fallback if r is not None]
        why = "; ".join(known) if known else "no known reason was detected"
        out.append(
            Flag(
                "prediction-far",
                subject,
                f"{_t(value)} against the measured KSPSolve {_t(a.measured)} "
                f"({value / a.measured - 1.0:+.0%}): {why}",
            )
        )
    return out


STD_BLOCK_ELEMENTS = 1 << 22
"""The standard deviation is summed over blocks of this many values: no temporary copy of a
paper-scale trace (``ndarray.std`` makes one, as large as the trace)."""


def mean_std(x: np.ndarray) -> tuple[float, float]:
    """Mean and (population) standard deviation of all of ``x``, two passes over row blocks."""
    a = np.asarray(x, dtype=np.float64)
    rows = a.reshape(a.shape[0], -1) if a.ndim > 1 else a.reshape(1, -1)
    step = max(1, STD_BLOCK_ELEMENTS // max(rows.shape[1], 1))
    n = rows.size
    if n == 0:
        return float("nan"), float("nan")
    mean = sum(float(rows[s:s + step].sum()) for s in range(0, rows.shape[0], step)) / n
    squares = 0.0
    for s in range(0, rows.shape[0], step):
        d = rows[s:s + step] - mean
        squares += float(np.einsum("ij,ij->", d, d))
    return mean, float(np.sqrt(squares / n))


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
    reasons: dict[str, str] = {}
    """Subject -> the short reason it gives a prediction that is far off."""
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
    bulk_mean, bulk_std = mean_std(kept)
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
        result["stationary"] = _stationary_models(
            bulk, kept, k, count, notes, flags, reasons
        )

    kept_uniform = uniform if keep.size == k_all else models.uniform_fits(kept)
    if k < MIN_SAMPLES:
        notes.append(f"K = {k} < {MIN_SAMPLES}: too few iterations to fit a_k and s_k")
    else:
        tick("Monte Carlo", 0.0)
        try:
            params = montecarlo.fit_parameters(kept_uniform, opt.fit_size, opt.seed)
            result["parameters"] = params
            flags.extend(_parameter_flags(params, kept_uniform, reasons))
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
    tick("noise summary", 0.0)
    flags.extend(_count_flags(nprocs, count, reasons))
    flags.extend(_load_flags(trace))
    flags.extend(_log_flags(trace))
    injection = _injection(trace, times, notes)
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
        injection=injection,
        **result,  # type: ignore[arg-type]
    )
    far = _prediction_flags(analysis, reasons, kept)
    return replace(analysis, flags=(*flags, *far))


def _load_flags(trace: Trace) -> list[Flag]:
    """The machine-loaded flag: other processes used the node's CPUs during the solve."""
    share = trace.attr("foreign_cpu_share")
    if not isinstance(share, int | float) or isinstance(share, bool):
        return []
    if not share > FOREIGN_LOAD_LIMIT:
        return []
    seconds = trace.attr("foreign_cpu_seconds")
    spent = f" ({seconds:.2f} CPU s)" if isinstance(seconds, int | float) else ""
    return [
        Flag(
            "machine-loaded",
            "measurement",
            f"other processes used {share:.0%} of node {trace.attr('foreign_cpu_node', 0)}'s "
            f"CPU capacity during the solve{spent}: the timings include their interference; "
            "rerun on a quiet machine before comparing",
        )
    ]


def _log_flags(trace: Trace) -> list[Flag]:
    """The log-on flag: PETSc's full event log timed every event of the timed solve."""
    log = trace.attr("event_log")
    cost = ("about 0.9 us more per iteration, 10 % at 10^3 unknowns per rank")
    if log is None and trace.attr("reductions_blocking") is not None:
        return [Flag("log-on", "measurement",
                     f"written by an older ksptrace that ran PETSc's full event log during "
                     f"the timed solve: {cost}; rerun to measure the solver alone")]
    if not str(log or "").startswith("all"):
        return []
    return [Flag("log-on", "measurement",
                 f"PETSc's full event log ran during the timed solve (-log_view, or the "
                 f"program's own log): {cost}; rerun without -log_view to measure the solver "
                 "alone")]


def _injection(trace: Trace, times: np.ndarray, notes: list[str]) -> InjectedNoise | None:
    """The trace's injected noise and natural times; None (with a note) for an unreadable spec."""
    text = str(trace.attr("noise", "none") or "none")
    try:
        spec = parse(text)
    except KsptraceError as exc:
        notes.append(f"noise attribute {text!r} not understood ({exc}); no noise analysis")
        return None
    if spec.active and trace.injected_seconds is None:
        notes.append(f"noise {text} but no recorded detours: no noise analysis")
        return injected_noise(times, None, NoiseSpec("none"))
    return injected_noise(times, trace.injected_seconds, spec)


def apriori_flag(source: TraceAnalysis, prediction: montecarlo.Prediction) -> Flag | None:
    """A prediction-far flag for an a-priori Monte Carlo prediction fitted on ``source``.

    Its reason is the flags on the source's Johnson S_U fits (collapsed, pulled by outliers, far
    from the data) when it has any. None when the prediction is within 50 % of KSPSolve.
    """
    if not prediction.measured > 0:
        return None
    err = prediction.relative_error
    if abs(err) <= PREDICTION_TOLERANCE:
        return None
    related = [f for f in source.flags if f.subject in ("JSU fit of a_k", "JSU fit of s_k")]
    why = "; ".join(f"the source's {f.subject} is flagged {f.code}" for f in related)
    return Flag(
        "prediction-far",
        f"a priori Monte Carlo from {prediction.source}",
        f"{_t(prediction.simulated)} against the measured KSPSolve {_t(prediction.measured)} "
        f"({err:+.0%}): {why or 'no known reason was detected'}",
    )
