"""How well the headline model predicts runs it was not fitted on (issue 52).

The non-stationary model's aₖ and sₖ are fitted on one run's iterations; compared with that
same run's KSPSolve it measures how well a run describes itself (an in-sample fit). Here the
model fitted on one run predicts *another* run, only where the model claims validity:

* **held-out repetition**: another run of the same configuration (every attribute of
  :data:`~ksptrace.trace.model.CONFIG_KEYS` and P equal), whose N may differ (another node
  count);
* **same n/P at another P**: a configuration of the same problem, solver, preconditioner and K
  with the same local size n/P at another P, through E[max of N] with the target's N (a standard
  method's Σₖ E[max of N] of U(aₖ, aₖ + sₖ); a pipelined one's Σₖ μₖ does not depend on N).

Another n/P is not predicted: the work of an iteration changes with the local size, and no
per-iteration work model is fitted. An error beyond ±:data:`ABSURD_PCT` % is no prediction but a
failure, reported with its reason and without a number (:mod:`.plausible`).

Pure: analyses in, frozen dataclasses out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ksptrace.studies.variability.conclusions.findings import file_name, n_of
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats import models
from ksptrace.studies.variability.stats.plausible import ABSURD_PCT, plausible_pct
from ksptrace.studies.variability.stats.skill import pair_skill, skill
from ksptrace.trace.model import CONFIG_DEFAULTS, CONFIG_KEYS

REPETITION = "held-out repetition"
SAME_LOCAL_SIZE = "same n/P at another P"
IN_SAMPLE = "in-sample fit"
MAX_PER_CONFIGURATION = 6
"""At most this many runs of one configuration enter the repetition pairs (R·(R−1) pairs)."""
_KIND_KEYS = tuple(k for k in CONFIG_KEYS if k not in ("n", "nprocs", "ranks_per_node"))
"""What two configurations share to be of one kind: all but n and P (and the ranks per node,
which follow P on one node)."""


@dataclass(frozen=True)
class HeldOut:
    """The headline model fitted on ``fitted_on`` predicting the run ``predicts``, beside the
    naive baselines on the same target (issue 63)."""

    basis: str
    """:data:`REPETITION` or :data:`SAME_LOCAL_SIZE`."""
    fitted_on: str
    predicts: str
    predicted: float
    measured: float
    """The target's measured time (KSPSolve without its set-up when recorded)."""
    error_pct: float | None
    """Signed error in per cent; None when the prediction failed (see ``why``)."""
    why: str = ""
    baseline: float | None = None
    """Persistence: the source run's own measured time (the other repetition's, or the
    other P's at the same n/P)."""
    baseline_error_pct: float | None = None
    scaled: float | None = None
    """The smaller-P time scaled by the per-iteration growth measured between a still smaller
    P and the source's (same kind and n/P); None where no such run exists."""
    scaled_error_pct: float | None = None

    @property
    def skill(self) -> float | None:
        """This prediction's skill against persistence (:func:`.skill.pair_skill`)."""
        return pair_skill(self.error_pct, self.baseline_error_pct)

    @property
    def scaled_skill(self) -> float | None:
        """This prediction's skill against the growth-scaled baseline."""
        return pair_skill(self.error_pct, self.scaled_error_pct)


def _config(a: TraceAnalysis) -> tuple[str, ...]:
    attrs = dict(a.attrs)
    return (*(str(attrs.get(k, CONFIG_DEFAULTS.get(k))) for k in CONFIG_KEYS), str(a.nprocs))


def same_kind(a: TraceAnalysis, b: TraceAnalysis) -> bool:
    """Whether ``a`` and ``b`` differ at most in n and P (problem, solver, preconditioner, K,
    restart, noise, ... equal)."""
    return _kind(a) == _kind(b)


def _kind(a: TraceAnalysis) -> tuple[str, ...]:
    attrs = dict(a.attrs)
    return tuple(str(attrs.get(k, CONFIG_DEFAULTS.get(k))) for k in _KIND_KEYS)


def predict_from(src: TraceAnalysis, dst: TraceAnalysis) -> float | None:
    """The headline model fitted on ``src``'s iterations for ``dst``'s N (None when the two
    recorded different numbers of iterations: the model is per iteration)."""
    if src.iterations != dst.iterations:
        return None
    if dst.pipelined:
        return src.nonstationary.pipelined
    if dst.count == src.count:
        return src.nonstationary.standard
    return models.nonstationary_model(src.uniform, dst.count).standard


def _pct(value: float | None, measured: float) -> float | None:
    return None if value is None else plausible_pct(100.0 * (value - measured) / measured)


def _held_out(basis: str, src: TraceAnalysis, dst: TraceAnalysis,
              scaled: float | None = None) -> HeldOut | None:
    value = predict_from(src, dst)
    if value is None or not dst.measured > 0:
        return None
    shown = _pct(value, dst.measured)
    why = "" if shown is not None else (
        f"failed: off by more than {ABSURD_PCT:.0f} % (the model fitted on {file_name(src)} "
        f"does not describe {file_name(dst)})")
    return HeldOut(basis, file_name(src), file_name(dst), value, dst.measured, shown, why,
                   baseline=src.measured, baseline_error_pct=_pct(src.measured, dst.measured),
                   scaled=scaled, scaled_error_pct=_pct(scaled, dst.measured))


def _configurations(analyses: Sequence[TraceAnalysis]) -> list[list[TraceAnalysis]]:
    """The runs of each configuration, at most :data:`MAX_PER_CONFIGURATION` of each."""
    groups: dict[tuple[str, ...], list[TraceAnalysis]] = {}
    for a in analyses:
        groups.setdefault(_config(a), []).append(a)
    return [runs[:MAX_PER_CONFIGURATION] for runs in groups.values()]


def repetition_predictions(analyses: Sequence[TraceAnalysis]) -> tuple[HeldOut, ...]:
    """Each run of a repeated configuration predicted by the model of each other run of it."""
    out = []
    for chosen in _configurations(analyses):
        for src in chosen:
            for dst in chosen:
                if dst is not src and (h := _held_out(REPETITION, src, dst)) is not None:
                    out.append(h)
    return tuple(out)


def local_size(a: TraceAnalysis) -> float | None:
    n = n_of(a)
    return None if n is None else n / a.nprocs


def _same_size(src: TraceAnalysis, dst: TraceAnalysis) -> bool:
    return (_kind(src) == _kind(dst) and src.nprocs != dst.nprocs
            and local_size(src) is not None and local_size(src) == local_size(dst))


def growth_scaled(src: TraceAnalysis, dst: TraceAnalysis,
                  configs: Sequence[Sequence[TraceAnalysis]]) -> float | None:
    """``src``'s time scaled to ``dst``'s larger P by the per-iteration growth measured from
    the nearest smaller P of the same kind and n/P to ``src``'s: t_src·(P_dst/P_src)^g with
    g = ln(t_src/t_low)/ln(P_src/P_low) (mean times per iteration). None when ``dst`` is not
    at a larger P or no smaller-P run exists."""
    if dst.nprocs <= src.nprocs:
        return None
    lower = [runs for runs in configs if runs[0].nprocs < src.nprocs
             and _same_size(runs[0], src) and runs[0].measured > 0]
    if not lower or not src.measured > 0:
        return None
    low = max(lower, key=lambda runs: runs[0].nprocs)
    per_src = src.measured / src.iterations
    per_low = sum(a.measured / a.iterations for a in low) / len(low)
    g = math.log(per_src / per_low) / math.log(src.nprocs / low[0].nprocs)
    return src.measured * (dst.nprocs / src.nprocs) ** g


def same_local_size_predictions(analyses: Sequence[TraceAnalysis]) -> tuple[HeldOut, ...]:
    """Each run predicted from each run of another configuration of the same kind and n/P at
    another P (every run of each, up to :data:`MAX_PER_CONFIGURATION`). A P = 1 run is no
    source: its sₖ = 0, so E[max of N] from it is its own time, the baseline itself."""
    configs = _configurations(analyses)
    out = []
    for sources in configs:
        for targets in configs:
            if sources[0].nprocs < 2 or not _same_size(sources[0], targets[0]):
                continue
            for src in sources:
                for dst in targets:
                    h = _held_out(SAME_LOCAL_SIZE, src, dst, growth_scaled(src, dst, configs))
                    if h is not None:
                        out.append(h)
    return tuple(out)


def p1_sources(analyses: Sequence[TraceAnalysis]) -> int:
    """Configurations at P = 1 that would be sources at the same n/P (not used: sₖ = 0)."""
    configs = _configurations(analyses)
    return sum(1 for s in configs if s[0].nprocs == 1
               and any(_same_size(s[0], d[0]) for d in configs))


def other_size_pairs(analyses: Sequence[TraceAnalysis]) -> int:
    """Pairs of configurations of one kind whose n/P differ: not predicted."""
    first: dict[tuple[str, ...], TraceAnalysis] = {}
    for a in analyses:
        first.setdefault(_config(a), a)
    reps = list(first.values())
    return sum(1 for s in reps for d in reps
               if s is not d and _kind(s) == _kind(d) and local_size(s) != local_size(d))


configurations = _configurations
"""The runs of each configuration (public name, for :mod:`.larger_p`)."""
same_size = _same_size
"""Whether two runs are of one kind and n/P at different P (public name)."""


def held_out(analyses: Sequence[TraceAnalysis]) -> tuple[HeldOut, ...]:
    """Every out-of-sample prediction the data allow, repetitions first."""
    return (*repetition_predictions(analyses), *same_local_size_predictions(analyses))


def against_baseline(pairs: Sequence[tuple[float | None, float | None]],
                     name: str) -> str | None:
    """"no better than <name> (mean |error| m % against b %, skill s)" or "better than ...",
    over the (model error, baseline error) pairs both made, in per cent; None when none."""
    both = [(m, b) for m, b in pairs if m is not None and b is not None]
    if not both:
        return None
    s = skill(np.array([m for m, _ in both]), np.array([b for _, b in both]))
    figures = f"mean |error| {s.model_mae_pct:.1f} % against {s.baseline_mae_pct:.1f} %"
    if s.score is None:
        return f"{name} is exact here ({figures}): no skill"
    verdict = "better than" if s.beats else "no better than"
    return (f"{verdict} {name} ({figures}, skill {s.score:+.2f}, closer in {s.closer} of "
            f"{s.count})").replace("skill -", "skill −")
