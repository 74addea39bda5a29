"""The report's segment-size table: segmented-ring allreduce measured at several
``--segment-bytes``, the survey's segmented-ring model fitted to them, and per (P, m) the
measured best segment beside the model's optimum (section 3.1, Table 3).

Only the (trace, size) cells where the segmented ring really ran count (``algorithm_ran``:
with fewer elements than P segments Open MPI runs the plain ring instead).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives.ran import ran_at
from ksptrace.studies.collectives.segmented import (
    best_segment,
    fit_segmented_ring_hockney,
    segmented_ring_hockney,
)
from ksptrace.studies.table import Table, map_cells, significant
from ksptrace.trace.collectives import CollectiveTrace

SEGMENTED = "segmented_ring"


def _cells(traces: Sequence[CollectiveTrace]) -> pd.DataFrame:
    rows = []
    for t in traces:
        seg = int(t.attrs.get("segment_bytes", 0) or 0)
        if t.operation != "allreduce" or t.algorithm != SEGMENTED or not seg:
            continue
        med = np.median(t.call_seconds(), axis=1)
        for (m, ran), s in zip(ran_at(t).items(), med, strict=True):
            if ran == SEGMENTED:
                rows.append({"P": t.nprocs, "bytes": m, "segment_bytes": seg, "seconds": s})
    return pd.DataFrame(rows, columns=["P", "bytes", "segment_bytes", "seconds"])


def segment_table(traces: Sequence[CollectiveTrace]) -> Table | None:
    """None unless segmented-ring runs at 2+ segment sizes give 3+ cells to fit."""
    cells = _cells(traces)
    fitted = cells[cells["P"] > 2]  # the model (and its optimum) needs P >= 3
    if fitted.empty or fitted["segment_bytes"].nunique() < 2 or len(fitted) < 3:
        return None
    try:
        params = fit_segmented_ring_hockney(fitted["P"], fitted["bytes"],
                                            fitted["segment_bytes"], fitted["seconds"])
    except AnalysisError:
        return None
    rows = []
    for (p, m), g in cells.groupby(["P", "bytes"]):
        best = g.loc[g["seconds"].idxmin()]
        choice = best_segment(params, int(p), int(m)) if p > 2 else None
        rows.append({
            "P": int(p), "bytes": int(m), "segments_measured": g["segment_bytes"].nunique(),
            "best_measured": int(best["segment_bytes"]), "best_us": best["seconds"] * 1e6,
            "model_optimum": None if choice is None or choice.continuous is None
            else round(choice.continuous),
            "model_best_power_of_two": None if choice is None else choice.best_power_of_two,
            "model_at_measured_best_us": None if p < 3 else segmented_ring_hockney(
                params, int(p), int(m), float(best["segment_bytes"])) * 1e6})
    frame = pd.DataFrame(rows)
    notes = (f"segmented-ring model fitted to {len(fitted)} (P, m, segment) medians at P >= 3: "
             f"alpha = {params.alpha * 1e6:.3g} us, beta = {params.beta * 1e9:.3g} ns/B, "
             f"gamma = {params.gamma * 1e9:.3g} ns/B",
             "only sizes where the segmented ring ran (Open MPI runs the plain ring when the "
             "message holds fewer than P segments)",
             "P = 2: measured only; the model needs P >= 3 (its optimum divides by P - 2)")
    return Table("collectives_segments", "Allreduce segment sizes: measured best and the "
                 "model's optimum", frame, display=map_cells(frame.astype(object), significant),
                 notes=notes)
