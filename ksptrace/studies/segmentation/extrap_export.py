"""Series over p in Extra-P's text input format, so that they open in Extra-P as they are.

The format is line based: ``PARAMETER`` names the parameter, ``POINTS`` lists its values,
then for each ``REGION`` and ``METRIC`` one ``DATA`` line per point, in the order of
``POINTS``, holding that point's repetitions separated by spaces. ``#`` starts a comment.
Names may not contain white space (Extra-P collapses it); it is replaced by ``_``.
This module returns text; writing the file is the caller's business.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class ExtrapSeries:
    """One (region, metric) series: ``values[k]`` holds the repetitions measured at ``p[k]``."""

    region: str
    metric: str
    values: Sequence[Sequence[float]]


def _name(text: str, what: str) -> str:
    cleaned = _SPACE.sub("_", text.strip())
    if not cleaned:
        raise AnalysisError(f"an empty {what} name cannot be exported to Extra-P; give it a name")
    return cleaned


def _number(v: float) -> str:
    return repr(float(v))


def group_repetitions(
    p: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, list[list[float]]]:
    """(sorted distinct p, repetitions at each) from paired p and y; NaN values are left out."""
    pts = np.asarray(p, dtype=np.float64).ravel()
    vals = np.asarray(y, dtype=np.float64).ravel()
    if pts.shape != vals.shape:
        raise AnalysisError(f"{pts.size} values of p but {vals.size} measurements; pair them up")
    keep = np.isfinite(vals) & np.isfinite(pts)
    uniq = np.unique(pts[keep])
    return uniq, [vals[keep][pts[keep] == u].tolist() for u in uniq]


def to_extrap_text(
    parameter: str,
    p: Sequence[float] | np.ndarray,
    series: Sequence[ExtrapSeries],
    comments: Mapping[str, str] | None = None,
) -> str:
    """Render series that share the points ``p`` as an Extra-P text input file."""
    pts = np.asarray(p, dtype=np.float64).ravel()
    if pts.size == 0:
        raise AnalysisError("no points to export; every series needs at least one p")
    if np.unique(pts).size != pts.size:
        raise AnalysisError("POINTS must be distinct; put repetitions on one DATA line instead")
    if not series:
        raise AnalysisError("no series to export")
    lines = [f"# {_SPACE.sub(' ', k)}: {_SPACE.sub(' ', v)}" for k, v in (comments or {}).items()]
    lines.append(f"PARAMETER {_name(parameter, 'parameter')}")
    lines.append("POINTS " + " ".join(_number(v) for v in pts))
    last_region = None
    for s in series:
        if len(s.values) != pts.size:
            raise AnalysisError(
                f"series {s.region}/{s.metric} has {len(s.values)} points, POINTS has {pts.size};"
                " export series with different points to separate files"
            )
        region = _name(s.region, "region")
        if region != last_region:
            lines.append(f"REGION {region}")
            last_region = region
        lines.append(f"METRIC {_name(s.metric, 'metric')}")
        for k, reps in enumerate(s.values):
            finite = [v for v in reps if np.isfinite(v)]
            if not finite:
                raise AnalysisError(
                    f"series {s.region}/{s.metric} has no finite value at p = {pts[k]:g};"
                    " drop that point or measure it again"
                )
            lines.append("DATA " + " ".join(_number(v) for v in finite))
    return "\n".join(lines) + "\n"
