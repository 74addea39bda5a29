"""How much of a Krylov iteration's time, and of its spread, the global reductions explain.

The number of global reductions per iteration is read from PETSc's own ``-log_view`` rather
than assumed: it depends on the method and, for GMRES, on the orthogonalisation. Blocking ones
are the ``Reduct`` column of the ``KSPSolve`` event; the non-blocking (split-phase) reductions
of pipelined methods are not in that column (pgmres, P = 2, 300 iterations: 12), so they are
counted as the ``VecReduceBegin`` events (one MPI_Iallreduce each: 310). With r reductions
per iteration and an allreduce whose call time c was measured at the same P on the same
machine (a collectives trace, small message), the reductions account for

- of the mean: ``r * mean(c) / mean(T)``;
- of the spread: ``r * var(c) / var(T)`` (independent calls add their variances),

where T is the iteration time of the slowest rank. Pipelined methods overlap their reductions
with work, so for them these shares are upper bounds. Pure: text and arrays in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ksptrace.errors import AnalysisError
from ksptrace.studies.table import Table

PIPELINED = ("pipecg", "pipecr", "pgmres", "pipefgmres", "pipebcgs", "pipecgrr", "pipelcg",
             "pipeprcg", "pipegcr", "pipefcg", "groppcg")
"""KSP types that overlap (some of) their reductions with other work."""
_NUMBER = r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"


def log_view_reductions(text: str, event: str = "KSPSolve") -> float:
    """MPI reductions inside ``event`` (its ``Reduct`` column in ``-log_view``'s event table:
    the ninth number after the name, after count, ratio, time, ratio, flop, ratio, messages
    and average length)."""
    row = re.compile(rf"^{re.escape(event)}\s+((?:{_NUMBER}\s+){{8}}{_NUMBER})", re.MULTILINE)
    found = row.search(text)
    if found is None:
        raise AnalysisError(f"no {event} event in the -log_view output; run the solve with "
                            "-log_view :FILE (ksptrace run passes it to PETSc)")
    return float(found.group(1).split()[8])


def log_view_count(text: str, event: str) -> float:
    """The ``Count`` (max over ranks) of ``event`` in ``-log_view``'s table; 0 if absent."""
    found = re.search(rf"^{re.escape(event)}\s+({_NUMBER})\s", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


@dataclass(frozen=True)
class ReductionCount:
    blocking: float
    """MPI reductions inside KSPSolve (``Reduct``)."""
    split: float
    """Split-phase (non-blocking) reductions: ``VecReduceBegin`` events."""
    iterations: int
    """The iterations of every KSPSolve the log counted."""
    calls: int = 1
    """KSPSolve calls in the log (a warm-up solve is one more)."""

    @property
    def per_iteration(self) -> float:
        return (self.blocking + self.split) / self.iterations

    source: str = "PETSc -log_view"

    def describe(self) -> str:
        solves = f" of {self.calls} KSPSolve calls" if self.calls != 1 else ""
        return (f"{self.blocking:g} blocking + {self.split:g} non-blocking reductions in "
                f"{self.iterations} iterations{solves} ({self.source})")


def iterations_in_log(calls: float, solves: int, iterations: int, warmup: bool) -> int:
    """The iterations a ``-log_view`` with ``calls`` KSPSolve calls counted, for a trace of
    ``solves`` solves of ``iterations`` iterations in all, run with or without a warm-up solve
    (the same forced solve once more). AnalysisError when the log is not this run's."""
    if iterations < 1:
        raise AnalysisError(f"iterations must be >= 1, got {iterations}")
    if calls == solves:
        return iterations
    if warmup and calls == solves + 1 and solves == 1:
        return 2 * iterations
    raise AnalysisError(
        f"the -log_view output counts {calls:g} KSPSolve calls but the trace holds {solves} "
        f"solve{'s' if solves != 1 else ''}{' and a warm-up' if warmup else ''}; give the "
        "-log_view of the run that wrote this trace")


def count_reductions(text: str, iterations: int, solves: int = 1,
                     warmup: bool = False) -> ReductionCount:
    """The reductions of ``-log_view`` output ``text`` for a trace of ``solves`` solves of
    ``iterations`` iterations in all (see :func:`iterations_in_log`)."""
    calls = log_view_count(text, "KSPSolve")
    counted = iterations_in_log(calls, solves, iterations, warmup)
    return ReductionCount(log_view_reductions(text), log_view_count(text, "VecReduceBegin"),
                          counted, int(calls))


def count_from_attrs(attrs: Mapping[str, object]) -> ReductionCount:
    """The reductions ``ksptrace run`` counted during the timed solve (trace attributes
    ``reductions_blocking``, ``reductions_split``, ``ksp_solves``, ``petsc_iterations``)."""
    if "reductions_blocking" not in attrs:
        raise AnalysisError("this trace has no reduction counts (written before ksptrace "
                            "recorded them); rerun with -log_view :FILE and pass --log-view FILE")
    solves = int(str(attrs.get("ksp_solves", 1)))
    recorded = int(str(attrs.get("solves", 1)))  # ksptrace.record: every solve in the trace
    if solves != recorded:
        raise AnalysisError(f"the timed solve ran {solves} KSPSolves (a nonlinear problem); "
                            "reductions per Krylov iteration are counted for one KSPSolve only")
    iterations = int(str(attrs.get("petsc_iterations", attrs.get("iterations_done", 0))))
    if iterations < 1:
        raise AnalysisError("this trace does not say how many iterations PETSc counted")
    return ReductionCount(float(str(attrs["reductions_blocking"])),
                          float(str(attrs.get("reductions_split", 0))), iterations, solves,
                          "PETSc's event log, counted during the run")


def reductions_per_iteration(text: str, iterations: int) -> float:
    return count_reductions(text, iterations).per_iteration


@dataclass(frozen=True)
class ReductionShare:
    reductions_per_iteration: float
    allreduce_mean: float
    allreduce_std: float
    iteration_mean: float
    """Mean over k of the slowest rank's iteration, maxₚ Tₚᵏ (s)."""
    iteration_std: float
    pipelined: bool
    every_rank_mean: float = float("nan")
    """Mean of every Tₚᵏ (s): ``show``'s mean_iteration, below ``iteration_mean`` at P > 1."""

    @property
    def mean_share(self) -> float:
        return self.reductions_per_iteration * self.allreduce_mean / self.iteration_mean

    @property
    def spread_share(self) -> float:
        if self.iteration_std == 0:
            return float("nan")
        return self.reductions_per_iteration * self.allreduce_std ** 2 / self.iteration_std ** 2

    def describe(self) -> str:
        bound = " (pipelined: overlapped, an upper bound)" if self.pipelined else ""
        every = ("" if not np.isfinite(self.every_rank_mean) else
                 f"; every rank's mean, ksptrace show's mean_iteration, is "
                 f"{self.every_rank_mean * 1e6:.2f} us: the reductions wait for the slowest")
        over = (" > 1: the benchmark's allreduce varies more than the solve's iterations "
                "(a noisier moment, or reductions hidden)" if self.spread_share > 1 else "")
        return (f"{self.reductions_per_iteration:.2f} reductions per iteration x "
                f"{self.allreduce_mean * 1e6:.2f} us (sd {self.allreduce_std * 1e6:.2f} us) "
                f"explain {self.mean_share:.1%} of the mean iteration of the slowest rank "
                f"(mean over k of max_p T: {self.iteration_mean * 1e6:.2f} us{every}) and "
                f"{self.spread_share:.1%} of its variance (sd {self.iteration_std * 1e6:.2f} us)"
                f"{bound}{over}")


def reduction_share(iteration_seconds: np.ndarray, allreduce_seconds: np.ndarray,
                    per_iteration: float, ksp: str = "") -> ReductionShare:
    """``iteration_seconds`` [P, K] of a solver trace; ``allreduce_seconds`` the call times
    (slowest rank, one per repetition) at the message size the solver reduces."""
    t = np.asarray(iteration_seconds, dtype=np.float64)
    c = np.asarray(allreduce_seconds, dtype=np.float64).ravel()
    if t.ndim != 2 or t.size == 0 or c.size < 2:
        raise AnalysisError("need a [P, K] iteration matrix and at least 2 allreduce times")
    if per_iteration < 0:
        raise AnalysisError(f"reductions per iteration must be >= 0, got {per_iteration}")
    slowest = t.max(axis=0)
    return ReductionShare(per_iteration, float(c.mean()), float(c.std(ddof=1)),
                          float(slowest.mean()), float(slowest.std(ddof=1)) if
                          slowest.size > 1 else 0.0, ksp in PIPELINED, float(t.mean()))


@dataclass(frozen=True)
class SolverReductions:
    """What the reductions table needs of one solver trace (no file, no full trace)."""

    label: str
    ksp: str
    nprocs: int
    attrs: Mapping[str, object]
    iteration_seconds: np.ndarray
    """float64 [P, K]."""


def reductions_table(solvers: Sequence[SolverReductions],
                     allreduce: Mapping[int, np.ndarray], message_bytes: int = 8) -> Table:
    """One row per solver trace whose reductions ``ksptrace run`` counted and for whose P an
    allreduce of the library's default algorithm was timed (``allreduce``: P -> the call times
    at ``message_bytes``, slowest rank, one per repetition): the share of the mean and of the
    variance of its iterations that its reductions explain. The others are counted in the
    table's notes, with why."""
    rows: list[dict[str, object]] = []
    skipped: dict[str, int] = {}
    for s in solvers:
        try:
            counted = count_from_attrs(s.attrs)
        except AnalysisError as exc:
            reason = str(exc).split(";")[0]
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        calls = allreduce.get(s.nprocs)
        if calls is None:
            reason = f"no default-algorithm allreduce of {message_bytes} B at their P"
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        share = reduction_share(s.iteration_seconds, calls, counted.per_iteration, s.ksp)
        rows.append({
            "trace": s.label, "ksp": s.ksp, "P": s.nprocs,
            "reductions_per_iteration": counted.per_iteration,
            "allreduce_mean_us": share.allreduce_mean * 1e6,
            "allreduce_sd_us": share.allreduce_std * 1e6,
            "iteration_mean_us": share.iteration_mean * 1e6,
            "iteration_sd_us": share.iteration_std * 1e6,
            "mean_share": share.mean_share, "variance_share": share.spread_share,
            "upper_bound": share.pipelined,
        })
    notes = [f"{n} solver trace{'s' if n != 1 else ''} left out: {why}"
             for why, n in sorted(skipped.items())]
    notes.append(f"reductions per iteration as PETSc counted them in the timed solve (blocking "
                 f"+ split-phase); allreduce: {message_bytes}-byte calls with the library's "
                 "default algorithm, the slowest rank's time; shares r·mean(c)/mean(T) and "
                 "r·var(c)/var(T), T the slowest rank's iteration; pipelined methods overlap "
                 "their reductions: their shares are upper bounds")
    columns = ["trace", "ksp", "P", "reductions_per_iteration", "allreduce_mean_us",
               "allreduce_sd_us", "iteration_mean_us", "iteration_sd_us", "mean_share",
               "variance_share", "upper_bound"]
    return Table("collectives_reductions",
                 "Reductions in the solves: the share of an iteration they explain",
                 pd.DataFrame(rows, columns=columns), notes=tuple(notes))
