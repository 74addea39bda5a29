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

The options live in :mod:`.options`, the flags in :mod:`.flags`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

import numpy as np

from ksptrace.errors import AnalysisError, UsageError
from ksptrace.studies.variability.run.flags import (
    Flag,
    _count_flags,
    _load_flags,
    _log_flags,
    _parameter_flags,
    _prediction_flags,
    tail_flags,
)
from ksptrace.studies.variability.run.injection import injection_of
from ksptrace.studies.variability.run.lanes import Lanes
from ksptrace.studies.variability.run.options import AnalysisOptions, Progress, units
from ksptrace.studies.variability.run.shown import MAX_NOTE, capped_text, shown_attrs
from ksptrace.studies.variability.run.stationary import stationary_models
from ksptrace.studies.variability.stats import ks, models, montecarlo
from ksptrace.studies.variability.stats.cycles import (
    CycleLayout,
    cycle_layout,
    fill_was_recorded,
    is_pipelined,
)
from ksptrace.studies.variability.stats.fitting import (
    MIN_SAMPLES,
    FitRanking,
    fit_candidates,
)
from ksptrace.studies.variability.stats.halves import Tails, tails_of
from ksptrace.studies.variability.stats.injected import InjectedNoise
from ksptrace.studies.variability.stats.nodes import NodeVariance, node_variance
from ksptrace.studies.variability.stats.ordered import OrderedRows, Sorted, order_rows, resolve
from ksptrace.studies.variability.stats.penalty import Penalty, wait_penalty
from ksptrace.studies.variability.stats.plausible import montecarlo_status
from ksptrace.studies.variability.stats.setup_time import (
    MIN_FIT_PER_RANK,
    recorded_setup,
    setup_note,
)
from ksptrace.studies.variability.stats.variance_split import VarianceSplit, variance_split
from ksptrace.trace.model import Trace
from ksptrace.trace.waits import VarianceSplit as WaitSplit
from ksptrace.trace.waits import WaitShare, wait_share
from ksptrace.trace.waits import variance_split as wait_split


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
    """KSPSolve of the slowest rank, without its set-up when the trace records it (``setup``):
    the iterations' time, which the models describe."""
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
    penalty: Penalty | None = None
    """What waiting costs a standard and a pipelined method on these iterations."""
    variance: VarianceSplit | None = None
    """The share of the iteration times' variance each deterministic cause explains."""
    setup: float | None = None
    """The set-up inside the first KSPSolve (the trace's ``setup_max``), left out of
    ``measured``; None when the trace does not record it (written before issue 52)."""
    mpi_waits: WaitShare | None = None
    """The share of iteration time the ranks spent inside MPI reductions; None for a trace
    without wait times (issue 65)."""
    wait_split: WaitSplit | None = None
    """Var(T) split into the ranks' own work and their waits in MPI reductions (issue 65)."""
    tails: Tails | None = None
    """The held-out-half checks of the best fit and of the bulk-plus-detours model (issue 63)."""

    @property
    def noisy(self) -> bool:
        return self.injection is not None and self.injection.spec.active

    def model(self, family: str) -> models.StationaryModel | None:
        return next((m for m in self.stationary if m.family == family), None)

    @property
    def simulated_raw(self) -> float | None:
        """The Monte Carlo's mean runtime, failed or not: for the flags, never for printing."""
        sim = self.simulation
        return None if sim is None else sim.pipelined_mean if self.pipelined else sim.standard_mean

    @property
    def simulated_status(self) -> str:
        """"ok", "failed: <why>" (more than 11× off KSPSolve) or "not computed" (see notes)."""
        raw = self.simulated_raw
        if raw is None:
            return "not computed"
        return montecarlo_status(raw, self.measured) if self.measured > 0 else "ok"

    @property
    def simulated(self) -> float | None:
        """The Monte Carlo runtime; None unless its status is "ok" (issue 63)."""
        return self.simulated_raw if self.simulated_status == "ok" else None

    @property
    def simulated_stderr(self) -> float | None:
        """Standard error of ``simulated`` (None with one run, or with no ``simulated``)."""
        sim = self.simulation
        if sim is None or self.simulated is None:
            return None
        return sim.pipelined_stderr if self.pipelined else sim.standard_stderr

    @property
    def best_fit_name(self) -> str | None:
        """The ok fit with the least AIC that has a stationary model (the best Table 1 shows)."""
        if self.bulk is None:
            return None
        shown = {m.family for m in self.stationary}
        return next((f.name for f in self.bulk.fits if f.name in shown), None)

    def flagged(self, code: str) -> tuple[Flag, ...]:
        """The flags with this code."""
        return tuple(f for f in self.flags if f.code == code)


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


def kept_times(trace: Trace, drop_fill: bool = True) -> np.ndarray:
    """The [P, K] times the bulk statistics use: pipeline-fill iterations dropped with
    ``drop_fill`` (:attr:`AnalysisOptions.drop_fill`); no copy when every iteration is kept."""
    times = trace.iteration_seconds
    keep = layout_of(trace).keep(drop_fill)
    return times if keep.size == times.shape[1] else times[:, keep]


def ordered_kept(trace: Trace, options: AnalysisOptions | None = None) -> OrderedRows | None:
    """Each rank's kept times sorted once (:mod:`.ordered`), for :func:`analyze_trace`, the
    figures and the digest; None without a kept iteration. AnalysisError as
    :func:`analyze_trace` for times it cannot analyse."""
    check_timings(trace)
    kept = kept_times(trace, (options or AnalysisOptions()).drop_fill)
    return order_rows(kept) if kept.size else None


def analyze_trace(
    trace: Trace, options: AnalysisOptions | None = None, progress: Progress | None = None,
    ordered: Sorted = None,
) -> TraceAnalysis:
    """Run every analysis of the paper on one trace. ``ordered``: :func:`ordered_kept` of the
    trace, or a function that makes it (called once, when the sorted rows are first needed,
    so that the caller can keep them for the figures); sorted here when None."""
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
    count = float(units(opt.independent, n_nodes, nprocs))
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

    result: dict[str, object] = {}
    noise_notes: list[str] = []
    with Lanes(times.size) as lanes:  # large traces: these beside the sort and the KS tests
        # the steps that need nothing computed here start first, beside the uniform fits
        overall = lanes.later(node_variance, kept, trace.node_ids) if nprocs >= 2 else None
        injection = lanes.later(injection_of, trace, times, noise_notes)
        lockstep = lanes.later(models.measured_standard, kept)
        rank_sum = lanes.later(models.measured_pipelined, kept)
        split = lanes.later(variance_split, times, layout)
        tick("uniform fits", 0.0)
        uniform = models.uniform_fits(times)
        nonstationary = models.nonstationary_model(uniform, count)
        bulk_mean, bulk_std = mean_std(kept)
        bounds = models.Bounds(iterations=k, count=count, mean=bulk_mean, std=bulk_std)
        rows = resolve(ordered, kept)  # each rank sorted once: KS tests, histograms
        if rows is not None:
            kept = rows.raw  # the same values (no second copy of the kept columns)
        fittable = kept.size >= MIN_SAMPLES and bulk_std != 0 and k >= MIN_FIT_PER_RANK
        fitted = lanes.later(fit_candidates, kept, opt.candidates, opt.bins, opt.fit_size,
                             opt.seed, rows) if fittable else None
        penalty = lanes.later(functools.partial(wait_penalty, ordered=rows), kept, opt.seed)
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
                ordered=None if rows is None else rows.rows,
            )
            other = 1 if opt.reference_rank != 1 else 0
            result["ks_pair"] = ks.compare_ranks(kept, opt.reference_rank, other, opt.alpha)
        if overall is not None:
            tick("node variances", 0.0)
            result["nodes_at"] = node_variance(times, trace.node_ids, focus)
            result["nodes_overall"] = overall.result()

        if fitted is None and k < MIN_FIT_PER_RANK:
            notes.append(f"no distribution fitted: K = {k} values per rank, fewer than the "
                         f"{MIN_FIT_PER_RANK} a fit needs to say anything of the tail that "
                         "E[max of N] depends on (no stationary model)")
        elif fitted is None:
            notes.append(f"{kept.size} distinct-enough samples: too few for distribution fits")
        else:
            tick("bulk fits", 0.0)
            bulk = fitted.result()
            result["bulk"] = bulk
            for name, why in bulk.failed:
                notes.append(f"fit of {name} failed: {why}")
            tick("stationary models", 0.0)
            result["stationary"] = stationary_models(
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
        noise = injection.result()
        notes.extend(noise_notes)
        waits = penalty.result()
        sums = lockstep.result(), rank_sum.result(), split.result()
    tick("done", 1.0)
    setup = recorded_setup(trace)
    if setup is not None:
        notes.append(setup_note(setup, trace.solve_max))
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
        measured=trace.solve_max if setup is None else trace.solve_max - setup,
        setup=setup,
        layout=layout,
        focus_iteration=focus,
        uniform=uniform,
        nonstationary=nonstationary,
        lockstep_sum=sums[0],
        rank_sum_max=sums[1],
        penalty=waits,
        variance=sums[2],
        bounds=bounds,
        notes=tuple(capped_text(n, MAX_NOTE) for n in notes),
        attrs=shown_attrs(dict(trace.attrs)),
        n_nodes=n_nodes,
        injection=noise,
        mpi_waits=wait_share(trace),
        wait_split=wait_split(trace),
        **result,  # type: ignore[arg-type]
    )
    far, later = _prediction_flags(analysis, reasons, kept), list(analysis.notes)
    tails = tails_of(kept, analysis.best_fit_name, opt.fit_size, opt.seed, later)
    return replace(analysis, flags=(*flags, *far, *tail_flags(tails)), tails=tails,
                   notes=tuple(later))
