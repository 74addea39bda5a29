"""What a reader needs first: one findings row per analysed trace and a few sentences built from
the numbers. Pure: TraceAnalysis in, frozen dataclasses and strings out.

Every value that cannot be given comes with the reason ("P = 1: no rank pairs"), so the report
never shows a blank cell without saying why. Errors are signed percentages everywhere:
100 * (predicted - measured) / measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ksptrace.studies.numbers import seconds_text
from ksptrace.studies.variability.run.flags import Flag
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats import ks
from ksptrace.studies.variability.stats.choices import HEADLINE_MODEL
from ksptrace.studies.variability.stats.plausible import ABSURD_PCT, is_absurd
from ksptrace.trace.model import MIN_ITERATION_SECONDS

FAR = 50.0
"""A prediction more than this many per cent off the measurement is flagged."""
RANK_INDEPENDENT = 10.0
"""At most this share (per cent) of rank pairs rejected reads as rank-independent."""


def fmt_time(seconds: float | None) -> str:
    """A duration in the unit that suits it: s, ms or µs, four significant digits, never finer
    than the clock's resolution (1 ns, :data:`MIN_ITERATION_SECONDS`): '12 ns', '< 1 ns'."""
    if seconds is None or not math.isfinite(seconds):
        return "—" if seconds is None else str(seconds)
    text = seconds_text(seconds, 4)
    return below_microsecond(seconds) if text is None else text


def below_microsecond(seconds: float) -> str:
    """A time under 1 µs in whole nanoseconds (the clock's resolution), or '< 1 ns'."""
    if abs(seconds) < MIN_ITERATION_SECONDS / 2:
        return f"{'-' if seconds < 0 else ''}< 1 ns"
    return f"{round(seconds / MIN_ITERATION_SECONDS):.0f} ns"


def fmt_pct(pct: float | None) -> str:
    """A signed percentage ("+12.3 %", "−4.0 %")."""
    if pct is None or not math.isfinite(pct):
        return "—"
    digits = 0 if abs(pct) >= 100 else 1 if abs(pct) >= 0.1 or pct == 0 else 2
    text = f"{pct:+.{digits}f}\u00a0%"
    return text.replace("-", "\u2212")


SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def fmt_n(n: int | None) -> str:
    """A problem size: 10⁶ for powers of ten, 20 000 otherwise."""
    if n is None:
        return "?"
    exp = len(str(n)) - 1
    if n >= 10_000 and n == 10**exp:
        return "10" + str(exp).translate(SUPERSCRIPTS)
    return f"{n:,}".replace(",", "\u202f")


def error_pct(value: float | None, measured: float) -> float | None:
    """Signed error of ``value`` against ``measured`` in per cent, or None without a value."""
    if value is None or not measured or not math.isfinite(value):
        return None
    return 100.0 * (value - measured) / measured


def attr(a: TraceAnalysis, name: str) -> object:
    return dict(a.attrs).get(name)


def problem_of(a: TraceAnalysis) -> str:
    return str(attr(a, "problem") or "?")


def n_of(a: TraceAnalysis) -> int | None:
    n = attr(a, "n")
    return int(n) if isinstance(n, int | float) else None


def file_name(a: TraceAnalysis) -> str:
    """The trace's file name (without its folder), or its label for an in-memory trace."""
    return a.path.rsplit("/", 1)[-1] if a.path else a.label


@dataclass(frozen=True)
class Prediction:
    """One model or bound against the measurement; ``why`` says why there is no value."""

    key: str
    """Stable id: "stationary:<family>", "nonstationary", "montecarlo", "cramer", "bertsimas"."""
    name: str
    formula: str
    value: float | None
    error_pct: float | None
    why: str = ""
    stderr: float | None = None
    flags: tuple[Flag, ...] = ()

    @property
    def is_bound(self) -> bool:
        return self.key in ("cramer", "bertsimas")


def _flags_about(a: TraceAnalysis, *subjects: str) -> tuple[Flag, ...]:
    low = tuple(s.lower() for s in subjects)
    return tuple(f for f in a.flags if any(s in f.subject.lower() for s in low))


def _montecarlo_why(a: TraceAnalysis) -> str:
    if a.simulated_status.startswith("failed"):
        return f"Monte Carlo {a.simulated_status}"
    for note in a.notes:
        if "Monte Carlo" in note or "a_k and s_k" in note:
            return note
    return "no Johnson S_U fit of a_k and s_k"


def predictions(a: TraceAnalysis) -> tuple[Prediction, ...]:
    """Every model and bound of the paper for this trace, in the paper's order."""
    out: list[Prediction] = []
    target = "E[T′]" if a.pipelined else "E[T]"
    for m in a.stationary:
        value = m.pipelined if a.pipelined else m.standard
        formula = "K·μ" if a.pipelined else "K·E[max of N]"
        out.append(Prediction(
            f"stationary:{m.family}", f"{target} {m.family}", formula, value,
            error_pct(value, a.measured),
            flags=_flags_about(a, f"({m.family})", f"stationary model {m.family}")))
    if not a.stationary:
        reason = next((n for n in a.notes if "fit" in n), "no distribution fit")
        out.append(Prediction("stationary", "E[T] stationary", "K·E[max of N]", None, None,
                              why=reason))
    ns = a.nonstationary.pipelined if a.pipelined else a.nonstationary.standard
    out.append(Prediction(
        "nonstationary", "Ê[T′] uniform per k" if a.pipelined else "Ê[T] uniform per k",
        "Σ_k μ_k" if a.pipelined else "Σ_k E[max of N] of U(a_k, a_k + s_k)",
        ns, error_pct(ns, a.measured), flags=_flags_about(a, "non-stationary")))
    for key, name, value in (("cramer", "Cramér bound", a.bounds.cramer),
                             ("bertsimas", "Bertsimas bound", a.bounds.bertsimas)):
        if a.pipelined:
            out.append(Prediction(key, name, "K·(μ + σ…)", None, None,
                                  why=f"pipelined: no {name.split()[0]} bound"))
        else:
            formula = ("K·(μ + σ(N−1)/√(2N−1))" if key == "cramer" else "K·(μ + σ√(N−1))")
            out.append(Prediction(key, name, formula, value, error_pct(value, a.measured),
                                  flags=_flags_about(a, name.split()[0])))
    sim = a.simulated
    out.append(Prediction(
        "montecarlo", "Monte Carlo (Johnson S_U a_k, s_k)",
        f"mean of {a.simulation.runs} runs" if a.simulation is not None else "mean of the runs",
        sim, error_pct(sim, a.measured), why="" if sim is not None else _montecarlo_why(a),
        stderr=a.simulated_stderr, flags=_flags_about(a, "monte carlo", "jsu fit", "of a_k",
                                                      "of s_k")))
    return tuple(_failed(p) for p in out)


def _failed(p: Prediction) -> Prediction:
    """``p``, or, when it is off by more than ±ABSURD_PCT %, ``p`` as failed: no value and no
    error, the reason instead (issue 52: a failed model is not a number)."""
    if not is_absurd(p.error_pct):
        return p
    side = "below zero" if (p.value or 0.0) < 0 else \
        f"more than {1 + ABSURD_PCT / 100:.0f}× the measured time"
    reasons = "; ".join(f.message for f in p.flags if f.code != "prediction-far")
    return replace(p, value=None, error_pct=None, stderr=None,
                   why=f"failed: {side}" + (f" ({reasons})" if reasons else ""))


def headline(a: TraceAnalysis) -> Prediction | None:
    """The prediction chosen in advance (``choices.HEADLINE_MODEL``), whatever its error: the
    report never picks the model closest to the measurement after the fact."""
    return next((p for p in predictions(a) if p.key == HEADLINE_MODEL), None)


def ks_why(a: TraceAnalysis) -> str:
    if a.nprocs < 2:
        return "P = 1: no rank pairs"
    if a.kept < 2:
        return "K < 2: too few iterations per rank"
    return "not computed"


def nodes_why(a: TraceAnalysis) -> str:
    if a.nprocs < 2:
        return "P = 1: no rank pairs"
    return "not computed"


@dataclass(frozen=True)
class Finding:
    """One row of the findings table (one analysed trace)."""

    anchor: str
    """The id of the trace's section in the report."""
    problem: str
    ksp: str
    n: int | None
    nprocs: int
    count: float
    n_nodes: int
    repetition: int
    repetitions: int
    file: str
    measured: float
    lockstep_sum: float
    rank_sum_max: float
    best: Prediction | None
    ks_rejected_pct: float | None
    ks_why: str
    within_pct: float | None
    """Share of within-node variance in within + between (per cent), over all iterations."""
    nodes_why: str
    flags: tuple[Flag, ...]
    noise: str = "none"
    """The injected noise, short ("pareto scale=333.3us shape=1.5 p=0.1"), or "none"."""

    @property
    def solver(self) -> str:
        return self.ksp.upper()

    @property
    def config(self) -> str:
        n = fmt_n(self.n)
        rep = f", rep {self.repetition}" if self.repetitions > 1 else ""
        noise = f", noise {self.noise}" if self.noise != "none" else ""
        return f"{self.problem} {self.ksp} n={n} P={self.nprocs}{noise}{rep}"


def finding(a: TraceAnalysis, anchor: str, repetition: int = 1, repetitions: int = 1) -> Finding:
    """The findings row of one analysis."""
    ks_pct = None if a.ks_all is None else 100.0 * a.ks_all.fraction_rejected
    within = None
    why_nodes = nodes_why(a)
    ov = a.nodes_overall
    if ov is not None:
        total = ov.mean_within + ov.between
        if a.n_nodes < 2:
            why_nodes = "one node: no between-node variance"
        elif total > 0:
            within = 100.0 * ov.mean_within / total
        else:
            why_nodes = "all ranks equal: no variance"
    return Finding(
        anchor=anchor, problem=problem_of(a), ksp=a.ksp, n=n_of(a), nprocs=a.nprocs,
        count=a.count, n_nodes=a.n_nodes, repetition=repetition, repetitions=repetitions,
        file=file_name(a), measured=a.measured, lockstep_sum=a.lockstep_sum,
        rank_sum_max=a.rank_sum_max, best=headline(a), ks_rejected_pct=ks_pct,
        ks_why=ks_why(a), within_pct=within, nodes_why=why_nodes, flags=a.flags,
        noise=noise_label(a),
    )


def noise_label(a: TraceAnalysis) -> str:
    """The injected noise in a few words ("pareto scale=333.3us shape=1.5 p=0.1"), or "none";
    the default per=rank and seed are left out."""
    if not a.noisy or a.injection is None:
        return "none"
    dist, _, rest = a.injection.spec.text().partition(":")
    parts = [p for p in rest.split(",") if p and not p.startswith(("per=rank", "seed="))]
    return " ".join([dist, *parts])


def _pct(x: float) -> str:
    return f"{x:.0f} %" if x >= 10 or x == 0 else f"{x:.1f} %"


def ks_sentence(rows: Sequence[Finding]) -> str | None:
    tested = [r for r in rows if r.ks_rejected_pct is not None]
    if not tested:
        if rows and all(r.nprocs < 2 for r in rows):
            return ("Every run has P = 1, so there are no rank pairs to compare: the KS tests "
                    "and node variances are left out.")
        return None
    pairs: list[tuple[Finding, Finding]] = []
    for lo in tested:
        for hi in tested:
            same = (lo.problem, lo.nprocs, lo.n) == (hi.problem, hi.nprocs, hi.n)
            if same and lo.ksp != hi.ksp and (lo.ks_rejected_pct or 0) <= RANK_INDEPENDENT < (
                    hi.ks_rejected_pct or 0):
                pairs.append((lo, hi))
    if pairs:
        lo, hi = max(pairs, key=lambda p: (p[1].ks_rejected_pct or 0) - (p[0].ks_rejected_pct or 0))
        return (f"On {lo.problem} at P = {lo.nprocs}, {lo.solver}'s per-iteration times are "
                f"rank-independent ({_pct(lo.ks_rejected_pct or 0)} of rank pairs rejected by KS) "
                f"while {hi.solver}'s are not ({_pct(hi.ks_rejected_pct or 0)}).")
    independent = [r for r in tested if (r.ks_rejected_pct or 0) <= RANK_INDEPENDENT]
    if len(independent) == len(tested):
        worst = max(r.ks_rejected_pct or 0 for r in tested)
        share = ("KS rejects none of their rank pairs" if worst == 0 else
                 f"KS rejects at most {_pct(worst)} of their rank pairs")
        return (f"In all {len(tested)} runs with rank pairs, per-iteration times look "
                f"rank-independent: {share}.")
    if not independent:
        return (f"In all {len(tested)} runs with rank pairs, ranks differ: KS rejects at least "
                f"{_pct(min(r.ks_rejected_pct or 0 for r in tested))} of rank pairs.")
    return (f"Per-iteration times look rank-independent in {len(independent)} of {len(tested)} "
            f"runs with rank pairs (at most {RANK_INDEPENDENT:.0f} % of pairs rejected by KS): "
            + ", ".join(r.config for r in independent) + ".")


def _model_sentence(rows: Sequence[Finding]) -> str | None:
    scored = [r for r in rows if r.best is not None and r.best.error_pct is not None]
    if not scored:
        return None
    close = [r for r in scored if abs(r.best.error_pct or 0) <= 10.0]  # type: ignore[union-attr]
    worst = max(scored, key=lambda r: abs(r.best.error_pct or 0))  # type: ignore[union-attr]
    best = worst.best
    assert best is not None
    text = (f"The non-stationary model (chosen in advance) is within 10 % of the measured "
            f"KSPSolve in {len(close)} of {len(scored)} runs")
    if abs(best.error_pct or 0) > 10.0:
        text += f"; the largest miss is {worst.config}, {fmt_pct(best.error_pct)} off"
    return text + "."


def _flag_sentence(rows: Sequence[Finding]) -> str:
    flags = [f for r in rows for f in r.flags]
    if not flags:
        return "No result is flagged."
    far = [f for f in flags if f.code == "prediction-far"]
    runs = sum(1 for r in rows if r.flags)
    parts = [f"{len(flags)} result{'s are' if len(flags) > 1 else ' is'} flagged in {runs} of "
             f"{len(rows)} runs (see the Flags column)"]
    if far:
        parts.append(f"{len(far)} of them predictions more than {FAR:.0f} % off the measurement")
    return "; ".join(parts) + "."


def _nodes_sentence(rows: Sequence[Finding]) -> str | None:
    one = [r for r in rows if r.count <= 1.0]
    if one and len(one) == len(rows):
        return ("Every run has N = 1 independent unit (one node), so each stationary model "
                "collapses to K·mean and the bounds to K·μ.")
    return None


def sentences(rows: Sequence[Finding]) -> tuple[str, ...]:
    """Two to four sentences that summarise the findings table, for any subset of data."""
    out = [s for s in (ks_sentence(rows), _model_sentence(rows), _nodes_sentence(rows)) if s]
    out.append(_flag_sentence(rows))
    return tuple(out)


PAPER_THRESHOLD = 0.024
"""The KS threshold the paper prints for GMRES ranks 0 and 1, n = m = 5000."""


def alpha_for_threshold(threshold: float, n: int, m: int) -> float:
    """The significance level whose two-sample KS threshold at sizes n, m is ``threshold``."""
    c = threshold / math.sqrt((n + m) / (n * m))
    return 2.0 * math.exp(-2.0 * c * c)


def ks_alpha_note(alpha: float, reference_rank: int) -> str:
    """What the KS threshold means, and how it relates to the paper's printed thresholds."""
    return (
        f"KS tests reject when D > c(α)·√((n+m)/(nm)) with α = {alpha:g} "
        f"(c = {ks.critical_value(alpha):.3f}); rank {reference_rank} is tested against every "
        f"other rank (--reference-rank, default 0, as in the paper). The paper's printed "
        f"threshold {PAPER_THRESHOLD} at n = m = 5000 corresponds to α = 0.10, not 0.05: "
        f"c(0.10) = {ks.critical_value(0.10):.3f} gives {ks.threshold(5000, 5000, 0.10):.4f}, "
        f"while α = 0.05 would give {ks.threshold(5000, 5000, 0.05):.4f}, although the paper's "
        "text says α = 0.05. Compare D with the threshold printed here, not the paper's."
    )
