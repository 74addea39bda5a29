"""The segmentation report over process counts: series from traces, their segmentation, and
each series as JSON (the files that show it are written by :mod:`ksptrace.report.segmentation`).

Traces are grouped by (problem, ksp); within a group every trace is one measurement at its P
(traces at the same P are repetitions, reduced to their minimum by default: see
:mod:`ksptrace.studies.segmentation.load` for why, and for the load and spread notes). Four metrics
are modelled over P: the undisturbed time (K times a low quantile of each iteration's slowest
rank, which a busy process beside the job leaves alone), the KSPSolve time (slowest rank), the
mean iteration time (over ranks and iterations) and the Johnson SU location of a_k (each
iteration's fastest rank). For each group
and metric the report gives the data, the single PMNF model, the change point and the segment
models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ksptrace.errors import AnalysisError, KsptraceError
from ksptrace.studies.segmentation.load import SweepLoad, sweep_load, undisturbed_time
from ksptrace.studies.segmentation.segment import Segmentation, SegmentationParams, segment
from ksptrace.trace.model import Trace


def johnsonsu_location(trace: Trace) -> float:
    """The location of a Johnson SU fitted to a_k = min over ranks of each iteration's time."""
    from ksptrace.studies.variability.stats.fitting import fit_johnsonsu

    a_k = trace.iteration_seconds.min(axis=0)
    fit = fit_johnsonsu(a_k, fit_size=5000)
    if fit.status != "ok":
        raise AnalysisError(f"the Johnson SU fit of a_k is {fit.status}, not a verified maximum; "
                            "its location is not reported")
    return float(fit.loc)


METRICS: tuple[tuple[str, str, Callable[[Trace], float]], ...] = (
    ("undisturbed_time", "K x 5 % quantile of the slowest rank's iteration time [s]",
     lambda t: undisturbed_time(t.iteration_seconds)),
    ("solve_time", "KSPSolve time [s]", lambda t: t.solve_max),
    ("mean_iteration_time", "mean iteration time [s]", lambda t: float(t.iteration_seconds.mean())),
    ("johnsonsu_loc_ak", "Johnson SU location of a_k [s]", johnsonsu_location),
)
"""(key, label, value of one trace) for each modelled metric."""


@dataclass(frozen=True)
class SeriesReport:
    group: tuple[str, str]
    metric: str
    label: str
    p: np.ndarray
    y: np.ndarray
    result: Segmentation
    skipped: tuple[str, ...]
    load: SweepLoad | None = None


def collect(traces: list[Trace]) -> dict[tuple[str, str], list[Trace]]:
    """Series over P: one per (problem, ksp), split further by pc, K and n when those vary.

    A weak-scaling series (one n per P) stays together; but when one P was measured at several
    n (or with several PCs or iteration counts) those are different configurations, never
    repetitions, so each gets its own series.
    """
    groups: dict[tuple[str, str], list[Trace]] = {}
    for t in traces:
        key = (str(t.attrs.get("problem", "unknown")), str(t.attrs.get("ksp", "unknown")))
        groups.setdefault(key, []).append(t)
    out: dict[tuple[str, str], list[Trace]] = {}
    for (problem, ksp), members in groups.items():
        by_p: dict[int, set[tuple[str, ...]]] = {}
        for t in members:
            by_p.setdefault(t.nprocs, set()).add(_sub_key(t, ("pc", "iterations", "n")))
        split = [name for name in ("pc", "iterations", "n")
                 if any(len({k[("pc", "iterations", "n").index(name)] for k in keys}) > 1
                        for keys in by_p.values())]
        for t in members:
            label = ksp + "".join(f" {name}={t.attrs.get(name)}" for name in split)
            out.setdefault((problem, label), []).append(t)
    return out


def _sub_key(trace: Trace, names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(str(trace.attrs.get(name)) for name in names)


def analyse(
    group: tuple[str, str],
    traces: list[Trace],
    params: SegmentationParams,
    metrics: tuple[str, ...],
    reduce: Literal["median", "min"] = "min",
) -> list[SeriesReport]:
    reports = []
    for key, label, value in METRICS:
        if key not in metrics:
            continue
        p, y, skipped = [], [], []
        for t in traces:
            try:
                v = value(t)
            except (KsptraceError, ValueError, FloatingPointError) as exc:
                skipped.append(f"{t.path or t.label}: {exc}")
                continue
            p.append(float(t.nprocs))
            y.append(v)
        pa, ya = np.array(p), np.array(y)
        load = sweep_load(traces, pa, ya)
        result = segment(pa, ya, params, reduce=reduce, cores=load.cores)
        reports.append(SeriesReport(group, key, label, pa, ya, result, tuple(skipped), load))
    return reports


def to_json(rep: SeriesReport) -> dict[str, Any]:
    res = rep.result
    return {
        "problem": rep.group[0], "ksp": rep.group[1], "metric": rep.metric,
        "p": rep.p.tolist(), "values": rep.y.tolist(),
        "p_distinct": res.p.tolist(), "reduced": res.y.tolist(),
        "load": None if rep.load is None else rep.load.as_dict(),
        "detection_ran": res.ok, "segmented": res.segmented, "pattern": res.pattern,
        "window_nrss": [round(float(v), 6) for v in res.window_nrss],
        "single_model": None if res.single is None else str(res.single),
        "change_points": [{"p_lo": c.p_lo, "p_hi": c.p_hi, "text": str(c)}
                          for c in res.change_points],
        "segments": [{"p_first": s.p_range[0], "p_last": s.p_range[1],
                      "model": None if s.model is None else str(s.model), "advice": s.advice}
                     for s in res.segments],
        "notes": list(res.notes) + list(rep.skipped)
                 + (list(rep.load.notes()) if rep.load is not None else []),
    }  # fmt: skip
