"""Injected noise: each model's prediction against the measurement and the known truth.

For every analysed run with injected noise this pairs the run with the noise-free run of the same
configuration (everything equal but the noise) and gives

* the measured KSPSolve, and the slowdown against the noise-free run;
* the known truth: what the injected distribution implies exactly, K E[max over N of X + D]
  for a standard method and K (E[X] + p E[D]) for a pipelined one, with X the noise-free run's
  iteration times (or, without one, this run's times minus its recorded detours);
* the paper's models computed from the noisy run's own timings, as a user would: the
  stationary E[max of N] of the best fit (K mu for a pipelined method), the non-stationary Ê,
  K mu, and the Johnson S_U Monte Carlo; each as a signed error against the measurement.

Standard and pipelined variants of one method (GMRES and PGMRES, BiCGSTAB and PIPEBiCGSTAB, ...)
under the same noise are then compared: how much more the standard one slowed down, and how
much more the non-stationary model and the truth say it should. Pure: analyses in, frozen
dataclasses out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ksptrace.studies.variability.conclusions.findings import error_pct, file_name
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats.injected import noise_truth
from ksptrace.studies.variability.stats.plausible import plausible_pct

PIPELINED_VARIANT = {
    "gmres": "pgmres",
    "fgmres": "pipefgmres",
    "bcgs": "pipebcgs",
    "cg": "pipecg",
    "cr": "pipecr",
}
"""The pipelined variant of each standard method."""

PAIR_KEYS = ("problem", "n", "pc", "nprocs", "iterations", "problem_config", "ranks_per_node",
             "noise")
"""Attributes a standard and a pipelined run must share to be compared (besides the method)."""
BASELINE_KEYS = ("problem", "n", "ksp", "pc", "nprocs", "iterations", "restart",
                 "problem_config", "ranks_per_node")
"""Attributes a noisy run and its noise-free run share (everything but the noise)."""


@dataclass(frozen=True)
class NoiseRow:
    """One run with injected noise, against its truth and the models."""

    file: str
    ksp: str
    pipelined: bool
    nprocs: int
    noise: str
    """The canonical spec."""
    dist: str
    count: int
    """N of the truth: the independent noise sources (ranks, or nodes with per=node)."""
    iterations: int
    oversubscribed: bool
    measured: float
    injected_mean: float
    """Mean injected seconds per rank and iteration."""
    baseline: float | None
    """KSPSolve of the noise-free run of the same configuration (mean over its repetitions)."""
    truth: float
    truth_source: str
    """"noise-free run" or "this run minus its detours"."""
    stationary: float | None
    stationary_family: str | None
    nonstationary: float
    k_mu: float
    montecarlo: float | None
    ks_rejected_pct: float | None
    detour_cost: float | None = None
    """KSPSolve minus K times the mean quiet iteration (no rank detoured): what the detours cost,
    measured inside the run."""
    injected_lockstep: float = 0.0
    """sum_k max_p of the detours: what waiting for every rank in every iteration costs."""
    injected_rank_max: float = 0.0
    """max_p sum_k of the detours: what a fully decoupled (pipelined) run would cost."""
    loaded: bool = False
    """The run is flagged machine-loaded (other processes used its node's CPUs)."""

    @property
    def detour_cost_ratio(self) -> float | None:
        """detour_cost / injected_lockstep: about 1 when the run paid every iteration's
        slowest detour; injected_rank_max / injected_lockstep when it hid them."""
        if self.detour_cost is None or self.cost_failed or not self.injected_lockstep:
            return None
        return self.detour_cost / self.injected_lockstep

    @property
    def cost_failed(self) -> bool:
        """The in-run detour cost came out below zero: a cost cannot be negative, so the
        estimate failed (the run's own variation swamps the detours); it is not shown."""
        return self.detour_cost is not None and self.detour_cost < 0

    @property
    def slowdown_pct(self) -> float | None:
        return error_pct(self.measured, self.baseline) if self.baseline else None

    def error(self, value: float | None) -> float | None:
        """Signed error of ``value`` against the measured KSPSolve, per cent (None beyond
        ±1000 %: a failed model, reported as failed, not as a number)."""
        return plausible_pct(error_pct(value, self.measured))

    def shown(self, value: float | None) -> float | None:
        """``value``, or None when it is a failed model (its error beyond ±1000 %)."""
        return None if value is None or self.error(value) is None else value


GAP_FLOOR = 0.1
"""A gap between two slowdowns below this share of the smaller slowdown gets no relative error."""


@dataclass(frozen=True)
class NoisePair:
    """A standard method and its pipelined variant under the same noise and configuration."""

    standard: NoiseRow
    pipelined: NoiseRow

    def _gap(self, std: float | None, pip: float | None) -> float | None:
        """(std - std's noise-free time) - (pip - pip's noise-free time), seconds."""
        s, p = self.standard, self.pipelined
        if std is None or pip is None or s.baseline is None or p.baseline is None:
            return None
        return (std - s.baseline) - (pip - p.baseline)

    @property
    def measured_gap(self) -> float | None:
        """How many seconds more the standard method slowed down than the pipelined one."""
        return self._gap(self.standard.measured, self.pipelined.measured)

    @property
    def nonstationary_gap(self) -> float | None:
        """The same gap as the non-stationary model predicts it (Ê[T] and Ê[T'] of the noisy
        runs against the measured noise-free runs)."""
        return self._gap(self.standard.nonstationary, self.pipelined.nonstationary)

    @property
    def truth_gap(self) -> float | None:
        """The same gap as the injected distribution implies it."""
        return self._gap(self.standard.truth, self.pipelined.truth)

    @property
    def nonstationary_gap_error_pct(self) -> float | None:
        """The prediction's error against the measured gap, in per cent; None when the gap is
        below GAP_FLOOR of the smaller of the two slowdowns: a per cent of a difference near 0
        (the noise demo printed -240 % for a 1.7 ms gap between 40 ms slowdowns) says nothing."""
        m = self.measured_gap
        s, p = self.standard, self.pipelined
        if m is None or s.baseline is None or p.baseline is None:
            return None
        slower = min(abs(s.measured - s.baseline), abs(p.measured - p.baseline))
        if abs(m) < GAP_FLOOR * slower or m == 0:
            return None
        return plausible_pct(error_pct(self.nonstationary_gap, m))


@dataclass(frozen=True)
class NoiseComparison:
    rows: tuple[NoiseRow, ...]
    pairs: tuple[NoisePair, ...]
    notes: tuple[str, ...]


def _mixed(a: TraceAnalysis) -> bool:
    return a.injection is not None and bool(a.injection.spec.also)


def _key(a: TraceAnalysis, keys: Sequence[str]) -> tuple[str, ...]:
    attrs = dict(a.attrs)
    out = []
    for k in keys:
        if k == "nprocs":
            out.append(str(a.nprocs))
        elif k == "noise":
            out.append(a.injection.spec.text() if a.injection is not None else "none")
        else:
            out.append(str(attrs.get(k)))
    return tuple(out)


def _row(a: TraceAnalysis, baselines: Sequence[TraceAnalysis]) -> NoiseRow:
    inj = a.injection
    assert inj is not None
    count = inj.units(a.nprocs, a.n_nodes)
    if baselines:
        natural = baselines[0].injection.natural if baselines[0].injection else inj.natural
        source = "noise-free run"
        baseline: float | None = sum(b.measured for b in baselines) / len(baselines)
    else:
        natural, source, baseline = inj.natural, "this run minus its detours", None
    truth = noise_truth(natural, inj.spec, count, a.iterations)
    best = a.model(a.best_fit_name) if a.best_fit_name else None
    return NoiseRow(
        file=file_name(a),
        ksp=a.ksp,
        pipelined=a.pipelined,
        nprocs=a.nprocs,
        noise=inj.spec.text(),
        dist=inj.spec.dist,
        count=count,
        iterations=a.iterations,
        oversubscribed=bool(dict(a.attrs).get("oversubscribed", False)),
        measured=a.measured,
        injected_mean=inj.injected_mean,
        baseline=baseline,
        truth=truth.pipelined if a.pipelined else truth.standard,
        truth_source=source,
        stationary=None if best is None else (best.pipelined if a.pipelined else best.standard),
        stationary_family=None if best is None else best.family,
        nonstationary=a.nonstationary.pipelined if a.pipelined else a.nonstationary.standard,
        k_mu=a.bounds.iterations * a.bounds.mean,
        montecarlo=a.simulated,
        ks_rejected_pct=None if a.ks_all is None else 100.0 * a.ks_all.fraction_rejected,
        detour_cost=inj.detour_cost(a.measured, a.iterations, a.pipelined),
        injected_lockstep=inj.injected_lockstep,
        injected_rank_max=inj.injected_rank_max,
        loaded=any(f.code == "machine-loaded" for f in a.flags),
    )


def compare(analyses: Sequence[TraceAnalysis]) -> NoiseComparison:
    """Every noisy run against its truth and the models, and standard/pipelined pairs."""
    noisy = [a for a in analyses if a.noisy and not _mixed(a)]
    mixed = [f"{file_name(a)}: its noise joins several specs ({a.injection.spec.text()}), "
             "which no closed-form truth covers; it is left out of the noise tables"
             for a in analyses if a.noisy and _mixed(a) and a.injection is not None]
    if not noisy:
        return NoiseComparison((), (), tuple(mixed))
    clean: dict[tuple[str, ...], list[TraceAnalysis]] = {}
    for a in analyses:
        if a.injection is not None and not a.injection.spec.active:
            clean.setdefault(_key(a, BASELINE_KEYS), []).append(a)
    notes = list(mixed)
    rows = []
    for a in noisy:
        row = _row(a, clean.get(_key(a, BASELINE_KEYS), []))
        if row.baseline is None:
            notes.append(f"{row.file}: no noise-free run of the same configuration; its truth "
                         "uses its own times minus its detours, and no slowdown is shown")
        rows.append((a, row))
    pairs = []
    by_key = {(_key(a, PAIR_KEYS), a.ksp.lower()): r for a, r in rows}
    for (key, ksp), std in by_key.items():
        pip = by_key.get((key, PIPELINED_VARIANT.get(ksp, "")))
        if pip is not None:
            pairs.append(NoisePair(std, pip))
    order = {"none": 0, "fixed": 1, "uniform": 2, "exponential": 3, "lognormal": 4, "pareto": 5}
    rows.sort(key=lambda ar: (ar[1].nprocs, order.get(ar[1].dist, 9), ar[1].noise, ar[1].ksp))
    pairs.sort(key=lambda p: (p.standard.nprocs, order.get(p.standard.dist, 9),
                              p.standard.noise, p.standard.ksp))
    return NoiseComparison(tuple(r for _, r in rows), tuple(pairs), tuple(notes))
