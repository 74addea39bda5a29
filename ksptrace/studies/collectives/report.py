"""The collectives section of a report: curves, best algorithm per (P, m), model fits,
predicted vs measured allreduce, per-rank distributions and segmentation over P.

A call's time is the slowest rank's (a collective ends for the application when its last
rank leaves it); a cell's time is the median over repetitions. Runs with more ranks than
cores are *oversubscribed*: their times measure the operating system's scheduler as much as
the algorithm, and every table flags them.

Pure: traces in, :class:`ksptrace.studies.table.Table` objects and text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives import models as cm
from ksptrace.studies.collectives import ran
from ksptrace.studies.collectives.labels import TIMING_NOTE, cell_group, timing_of
from ksptrace.studies.collectives.labels import label as _label
from ksptrace.studies.collectives.p2p_table import plogp_tables
from ksptrace.studies.collectives.segment_table import segment_table
from ksptrace.studies.decisions.grouping import Run
from ksptrace.studies.decisions.maps import decision_map
from ksptrace.studies.segmentation.segment import segment
from ksptrace.studies.table import Table
from ksptrace.studies.variability.stats.fitting import fit_candidates
from ksptrace.studies.variability.stats.ks import one_vs_all
from ksptrace.trace.collectives import CollectiveTrace

FIT_MIN_VALUES = 20
"""Fewer per-rank times than this at one size are not fitted with a distribution."""
FIT_FAMILIES = ("norm", "lognorm", "gamma", "invgauss")
"""Families tried on per-rank collective times (a few: about 0.2 s per size)."""


@dataclass(frozen=True)
class CollectivesReport:
    tables: tuple[Table, ...]
    best: pd.DataFrame
    """op, P, bytes, best, runner_up, margin (runner-up / best - 1), oversubscribed."""
    notes: tuple[str, ...]
    rules: tuple[tuple[str, str], ...] = ()
    """(collective, Open MPI dynamic rules file text) deciding like the best-algorithm map."""


def curves(traces: Sequence[CollectiveTrace]) -> pd.DataFrame:
    """One row per trace and message size: median, min and 90th percentile call time."""
    rows = []
    for i, t in enumerate(traces):
        calls, phases = t.call_seconds(), ran.phases_column(t)
        for j, m in enumerate(t.message_bytes):
            med = float(np.median(calls[j]))
            rows.append({
                "trace": i, "op": t.operation, "algorithm": _label(t), "P": t.nprocs,
                "timing": timing_of(t), "segment_phases": phases[j],
                "bytes": int(m), "median_us": med * 1e6, "min_us": float(calls[j].min()) * 1e6,
                "p90_us": float(np.quantile(calls[j], 0.9)) * 1e6,
                "MB_per_s": m / med / 1e6 if m else np.nan,
                "reps": t.repetitions,
                "oversubscribed": bool(t.attrs.get("oversubscribed", False)),
                **dict(zip(("overlap", "comm_alone_us", "compute_alone_us"), _overlap(t, j),
                           strict=True))})
    return pd.DataFrame(rows)


def _overlap(t: CollectiveTrace, j: int) -> tuple[float, float, float]:
    """Median over repetitions of the share of the shorter of communication and compute that
    overlapping hid, (comm + compute - overlapped) / min(comm, compute), clipped to [0, 1];
    and the medians of comm alone and compute alone (us). Only meaningful when the two are of
    comparable length: beside a much longer compute, comm is within its noise."""
    if t.comm_seconds is None or t.compute_seconds is None:
        return np.nan, np.nan, np.nan
    comm = t.comm_seconds[:, j].max(axis=0)
    work = t.compute_seconds[:, j].max(axis=0)
    both = t.seconds[:, j].max(axis=0)
    hidden = np.clip((comm + work - both) / np.minimum(comm, work), 0.0, 1.0)
    return (float(np.median(hidden)), float(np.median(comm)) * 1e6,
            float(np.median(work)) * 1e6)


def best_algorithms(traces: Sequence[CollectiveTrace]) -> pd.DataFrame:
    """The fastest algorithm per (op, P, m) cell, by the decision-map machinery (median of the
    repetitions' call times), with the runner-up and its margin."""
    rows = []
    for op in sorted({cell_group(t) for t in traces}):
        mine = [t for t in traces if cell_group(t) == op]
        p, m, label, sec = [], [], [], []
        for t in mine:
            calls = t.call_seconds()
            for j, (size, name) in enumerate(zip(t.message_bytes, ran.labels(t, _label(t)),
                                                 strict=True)):
                p += [t.nprocs] * calls.shape[1]
                m += [int(size)] * calls.shape[1]
                label += [name] * calls.shape[1]
                sec += list(calls[j])
        over = {t.nprocs for t in mine if t.attrs.get("oversubscribed")}
        cells = _cells(op, np.array(p), np.array(m), np.array(label), np.array(sec), over)
        samples = pd.DataFrame({"P": p, "bytes": m, "alg": label, "s": sec}).groupby(
            ["P", "bytes", "alg"])["s"].apply(np.asarray).to_dict()
        for c in cells:
            c["p_value"] = _p_value(samples.get((c["P"], c["bytes"], c["best"])),
                                    samples.get((c["P"], c["bytes"], c["runner_up"])))
        rows += cells
    return pd.DataFrame(rows, columns=BEST_COLUMNS)


BEST_COLUMNS = ["op", "P", "bytes", "best", "best_us", "runner_up", "margin", "p_value",
                "oversubscribed"]


SIGNIFICANT = 0.05
"""A cell's winner is told apart from its runner-up when the one-sided Mann-Whitney test of
their repetitions gives p below this (with 5 repetitions each, p >= 1/252)."""


def _p_value(best: np.ndarray | None, runner: np.ndarray | None) -> float:
    """One-sided Mann-Whitney U: is the winner's time stochastically smaller than the
    runner-up's? NaN without a runner-up or with fewer than 2 repetitions each."""
    from scipy.stats import mannwhitneyu

    if best is None or runner is None or min(best.size, runner.size) < 2:
        return float("nan")
    return float(mannwhitneyu(best, runner, alternative="less").pvalue)


def _cells(op: str, p: np.ndarray, m: np.ndarray, label: np.ndarray, sec: np.ndarray,
           over: set[int]) -> list[dict[str, object]]:
    try:
        dm = decision_map(p, m, label, sec, ("P", "bytes"))
    except AnalysisError:  # one method or one value on an axis: the cells directly
        return _cells_directly(op, p, m, label, sec, over)
    rows: list[dict[str, object]] = []
    for i, pv in enumerate(dm.axis1):
        for j, mv in enumerate(dm.axis2):
            if dm.filled[i, j]:
                continue
            order = np.argsort(np.where(np.isnan(dm.times[:, i, j]), np.inf, dm.times[:, i, j]))
            first = dm.times[order[0], i, j]
            second = dm.times[order[1], i, j] if len(order) > 1 else np.nan
            rows.append({"op": op, "P": int(pv), "bytes": int(mv),
                         "best": dm.methods[order[0]], "best_us": first * 1e6,
                         "runner_up": dm.methods[order[1]] if np.isfinite(second) else "",
                         "margin": second / first - 1 if np.isfinite(second) else np.nan,
                         "oversubscribed": int(pv) in over})
    return rows


def _cells_directly(op: str, p: np.ndarray, m: np.ndarray, label: np.ndarray, sec: np.ndarray,
                    over: set[int]) -> list[dict[str, object]]:
    frame = pd.DataFrame({"P": p, "bytes": m, "alg": label, "s": sec})
    med = frame.groupby(["P", "bytes", "alg"])["s"].median().reset_index()
    rows: list[dict[str, object]] = []
    for (pv, mv), cell in med.groupby(["P", "bytes"]):
        cell = cell.sort_values("s")
        first, second = cell["s"].iloc[0], cell["s"].iloc[1] if len(cell) > 1 else np.nan
        rows.append({"op": op, "P": int(pv), "bytes": int(mv), "best": cell["alg"].iloc[0],
                     "best_us": first * 1e6,
                     "runner_up": cell["alg"].iloc[1] if len(cell) > 1 else "",
                     "margin": second / first - 1 if len(cell) > 1 else np.nan,
                     "oversubscribed": int(pv) in over})
    return rows


def model_fits(traces: Sequence[CollectiveTrace]) -> pd.DataFrame:
    """Hockney, LogGP and PLogP per trace (op, algorithm, P), with where each breaks down, the
    error of each on held-out sizes and the model that predicts them best (5+ sizes)."""
    from ksptrace.studies.collectives.model_choice import choose_model

    rows = []
    for t in traces:
        if t.message_bytes.size < 3 or t.operation == "barrier":
            continue
        med = np.median(t.call_seconds(), axis=1)
        gamma = t.attrs.get("local_reduce_seconds_per_byte")
        fits = [cm.fit_hockney(t.message_bytes, med), cm.fit_loggp(t.message_bytes, med),
                cm.fit_plogp(t.message_bytes, med)]
        choice = choose_model(t.message_bytes, med) if np.unique(t.message_bytes).size >= 5 \
            else None
        for f in fits:
            rows.append({"op": t.operation, "algorithm": _label(t), "P": t.nprocs,
                         "model": f.model,
                         "params": ", ".join(f"{k}={v:.3g}" for k, v in f.params.items()),
                         "breakpoints": " ".join(str(b) for b in f.breakpoints),
                         "rms_rel": f.rms_relative,
                         "held_out_rms_rel": choice.errors[f.model] if choice else np.nan,
                         "chosen": bool(choice and choice.best == f.model),
                         "breaks_down_at": " ".join(str(int(s)) for s in f.breaks_down_at),
                         "local_gamma": float(gamma) if isinstance(gamma, float) else np.nan,
                         "oversubscribed": bool(t.attrs.get("oversubscribed", False))})
    return pd.DataFrame(rows)


ALLREDUCE_NAMES = {"ring": "ring", "recursive_doubling": "recursive_doubling",
                   "rabenseifner": "rabenseifner"}
"""Open MPI algorithm name -> model of :func:`collective_models.allreduce_time`."""


def allreduce_predictions(traces: Sequence[CollectiveTrace]) -> tuple[pd.DataFrame, str]:
    """Survey section 3.1 formulas against the measurements.

    alpha and beta + gamma come from the Hockney fit of recursive doubling at the smallest P
    (at P = 2 it is one exchange: alpha + (beta + gamma) m); gamma is the ranks' own measured
    local sum per byte; ring, recursive doubling and Rabenseifner are then predicted at every P.
    """
    ar = [t for t in traces if t.operation == "allreduce" and t.message_bytes.size >= 2
          and t.nprocs >= 2]  # one rank: no communication, nothing to model
    rd = sorted((t for t in ar if t.algorithm == "recursive_doubling"
                 and not t.attrs.get("segment_bytes")), key=lambda t: t.nprocs)
    if not rd:
        return pd.DataFrame(), ("no recursive-doubling allreduce measured: nothing to calibrate "
                                "the section 3.1 models on")
    base = rd[0]
    fit = cm.fit_hockney(base.message_bytes, np.median(base.call_seconds(), axis=1))
    lg = float(np.log2(base.nprocs))
    alpha, slope = fit.params["alpha"] / lg, fit.params["beta"] / lg
    gamma = float(base.attrs.get("local_reduce_seconds_per_byte", 0.0) or 0.0)
    gamma = min(gamma, slope)
    beta = slope - gamma
    rows = []
    for t in ar:
        model = ALLREDUCE_NAMES.get(t.algorithm)
        if model is None or t.attrs.get("segment_bytes"):
            continue
        pred = cm.allreduce_time(model, t.nprocs, t.message_bytes, alpha, beta, gamma)
        med = np.median(t.call_seconds(), axis=1)
        for m, p_s, m_s in zip(t.message_bytes, pred, med, strict=True):
            rows.append({"algorithm": model, "P": t.nprocs, "bytes": int(m),
                         "predicted_us": p_s * 1e6, "measured_us": m_s * 1e6,
                         "measured_over_predicted": m_s / p_s,
                         "oversubscribed": bool(t.attrs.get("oversubscribed", False))})
    note = (f"calibrated on recursive doubling at P={base.nprocs}: alpha={alpha:.3g} s, "
            f"beta={beta:.3g} s/B, gamma={gamma:.3g} s/B (measured local sum)")
    return pd.DataFrame(rows), note


def rank_distributions(traces: Sequence[CollectiveTrace], alpha: float = 0.05) -> pd.DataFrame:
    """Per trace, at its smallest and largest size: how many ranks' times differ from rank 0's
    (two-sample KS, as for solver iterations) and the best-fitting distribution family."""
    rows = []
    for t in traces:
        if t.nprocs < 2:
            continue
        for j in sorted({0, t.message_bytes.size - 1}):
            x = t.seconds[:, j, :]
            ks = one_vs_all(x, 0, alpha)
            best = ""
            if x.size >= FIT_MIN_VALUES and np.ptp(x) > 0:
                try:
                    best = fit_candidates(x.ravel(), FIT_FAMILIES).best.name
                except AnalysisError:
                    best = "no fit"
            rows.append({"op": t.operation, "algorithm": _label(t), "P": t.nprocs,
                         "bytes": int(t.message_bytes[j]),
                         "ranks_differing": f"{int(ks.rejected.sum())}/{t.nprocs - 1}",
                         "slowest_rank": int(np.argmax(np.median(x, axis=1))),
                         "best_fit": best or f"(< {FIT_MIN_VALUES} values)",
                         "oversubscribed": bool(t.attrs.get("oversubscribed", False))})
    return pd.DataFrame(rows)


def segmentation_over_p(frame: pd.DataFrame) -> pd.DataFrame:
    """Per op, algorithm and message size (smallest and largest), the existing detector over P."""
    rows: list[dict[str, object]] = []
    if frame.empty:
        return pd.DataFrame(rows)
    for (op, alg), g in frame.groupby(["op", "algorithm"]):
        sizes = sorted(set(g["bytes"]))
        for m in sorted({sizes[0], sizes[-1]}):
            cell = g[g["bytes"] == m]
            if cell["P"].nunique() < 2:
                continue
            seg = segment(cell["P"].to_numpy(float), cell["median_us"].to_numpy(float))
            rows.append({"op": op, "algorithm": alg, "bytes": int(m),
                         "P": " ".join(str(int(v)) for v in sorted(set(cell["P"]))),
                         "result": seg.describe().replace("\n", " ")})
    return pd.DataFrame(rows)


def ompi_rules_files(traces: Sequence[CollectiveTrace]) -> tuple[tuple[str, str], ...]:
    """An Open MPI rules file per blocking collective whose map has 2+ algorithms over 2+ P and
    2+ sizes: the exact quadtree of the best-algorithm map (``ksptrace decide``'s code), with
    the algorithm numbers the traces forced, with the segment size a segmented winner was
    measured with. Only per-call times decide: a rules file sets what each call runs, and
    back-to-back times (calls overlapping) never take a per-call cell (issue 66)."""
    from ksptrace.studies.decisions.encoding import compact_square_map
    from ksptrace.studies.decisions.quadtree import build_quadtree
    from ksptrace.studies.decisions.rules import COLLECTIVE_IDS, ompi_rules

    out = []
    for op in sorted({t.operation for t in traces}):
        mine = [t for t in traces if t.operation == op and "algorithm" in t.attrs
                and cell_group(t) == op]
        if op not in COLLECTIVE_IDS or not mine:
            continue
        named = {t.algorithm: str(int(t.attrs["algorithm"])) for t in mine}
        p, m, label, sec = [], [], [], []
        for t in mine:
            med = np.median(t.call_seconds(), axis=1)
            own = str(int(t.attrs["algorithm"])) + (
                f"/seg{int(t.attrs.get('segment_bytes', 0) or 0)}"
                if t.attrs.get("segment_bytes") else "")
            p += [t.nprocs] * med.size
            m += [int(x) for x in t.message_bytes]
            # what ran: its own number where a trace forced it, else the forced one (same code);
            # a segmented ring's phase mark, if any, reaches the rule's comment (issue 66)
            marks = ran.phase_marks(t)
            label += [own + (f" ({marks[s]})" if s in marks else "") if r == t.algorithm
                      else named.get(r) or _number_of(t, r, own) for s, r in ran.ran_at(t).items()]
            sec += list(med)
        try:
            dm = decision_map(np.array(p), np.array(m), np.array(label), np.array(sec),
                              ("P", "bytes"))
        except AnalysisError:
            continue
        tree = build_quadtree(compact_square_map(dm).square)
        out.append((op, ompi_rules(tree, op, {})))
    return tuple(out)


def _number_of(t: CollectiveTrace, ran_name: str, own: str) -> str:
    """The number under which the algorithm that ran is forced (the trace's own number, 0 for
    a default run, when the library's numbering is not known)."""
    number = ran.ran_number(str(t.attrs.get("mpi_flavor", "openmpi")), t.operation, ran_name)
    return own.partition("/")[0] if number is None else str(number)


def decision_runs(trace: CollectiveTrace, path: str = "") -> list[Run]:
    """One ``ksptrace decide`` run per message size: axes ``nprocs`` and ``bytes``, methods
    ``algorithm`` (the library's number) or ``algorithm_name``, the time the median call time.
    Each size is labelled by the algorithm that ran there (``algorithm_ran``; a ``default`` run
    by what the library chose), with its number; a segmented algorithm that ran segmented is
    ``NUMBER/segBYTES``, so that the fastest segment size wins each cell and reaches the rules
    file and the generated code.
    The operation is the run's ``problem``, so that each collective forms its own map, and
    back-to-back times form their own (:func:`labels.cell_group`), never a per-call one's."""
    calls = np.median(trace.call_seconds(), axis=1)
    library = str(trace.attrs.get("mpi_flavor", "openmpi"))
    base = {**trace.attrs, "problem": cell_group(trace), "nprocs": trace.nprocs}
    seg, marks = int(trace.attrs.get("segment_bytes", 0) or 0), ran.phase_marks(trace)
    runs = []
    for m, c, name, ran_name in zip(trace.message_bytes, calls, ran.labels(trace, _label(trace)),
                                    ran.ran_at(trace).values(), strict=True):
        attrs = {**base, "bytes": int(m), "algorithm_name": name}
        if ran_name != trace.algorithm:
            number = ran.ran_number(library, trace.operation, ran_name)
            attrs["algorithm"] = number if number is not None else ran_name
        elif seg:  # each segment size its own method: the map keeps the fastest per cell
            attrs["algorithm"] = f"{int(trace.attrs.get('algorithm', 0) or 0)}/seg{seg}" + (
                f" ({ran.ONE_PHASE})" if marks.get(int(m)) == ran.ONE_PHASE else "")
        runs.append(Run(attrs, float(c), path))
    return runs


def build(traces: Sequence[CollectiveTrace]) -> CollectivesReport:
    if not traces:
        raise AnalysisError("no collectives trace given")
    point = plogp_tables(traces)
    traces = [t for t in traces if t.operation != "plogp"]  # timed between two ranks only
    if not traces:
        return CollectivesReport(point, pd.DataFrame(columns=BEST_COLUMNS), ())
    frame = curves(traces)
    best = best_algorithms(traces)
    preds, pred_note = allreduce_predictions(traces)
    over = sorted({t.nprocs for t in traces if t.attrs.get("oversubscribed")})
    notes = [f"P = {', '.join(map(str, over))} ran more ranks than cores (oversubscribed, "
             "marked *): those times include waiting for a core"] if over else []
    notes += ran.merge_notes(traces)
    tables = (
        Table("collectives_curves", "Latency and bandwidth per algorithm", frame,
              notes=(TIMING_NOTE,)),
        Table("collectives_best", "Fastest algorithm per (P, message size)", best,
              notes=("margin: how much slower the runner-up is",)),
        Table("collectives_models", "Hockney, LogGP and PLogP fits", model_fits(traces),
              notes=("rms_rel: relative error; breaks_down_at: sizes missed by > 25 %",)),
        Table("collectives_allreduce_models", "Allreduce: section 3.1 models vs measured",
              preds, notes=(pred_note,)),
        Table("collectives_ranks", "Per-rank distributions (KS vs rank 0, best family)",
              rank_distributions(traces)),
        Table("collectives_segmentation", "Segmentation of time over P per algorithm",
              segmentation_over_p(frame)),
        *point,
    )
    segments = segment_table(traces)
    if segments is not None:
        tables = (*tables, segments)
    return CollectivesReport(tables, best, tuple(notes), ompi_rules_files(traces))
