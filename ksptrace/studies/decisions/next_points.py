"""Where to measure next: the points a decision map is least sure of.

Three kinds of point, in this order of priority:

- **unmeasured**: a grid cell where no method was run (its method was copied from the nearest
  measured cell);
- **boundary**: two neighbouring measured cells (adjacent along one axis, the other value
  equal) whose fastest methods differ. The change lies somewhere between them, so the point
  halfway between the two values (the geometric mean when both are positive, as process
  counts and sizes grow multiplicatively) is suggested, rounded on integer axes. When no new
  value lies strictly between them (P = 1 and P = 2), there is nothing to add and the pair is
  skipped;
- **close**: a measured cell whose second-fastest method is within ``close`` (relative) of the
  fastest. The decision there rests on a small margin; measuring the same cell again (more
  repetitions) settles it.

Within a kind, points with the smallest margin between the two methods involved come first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ksptrace import escape
from ksptrace.errors import AnalysisError
from ksptrace.studies.decisions.maps import DecisionMap

REASONS = ("unmeasured", "boundary", "close")


@dataclass(frozen=True)
class Suggestion:
    a: float
    """Value on the first axis."""
    b: float
    reason: str
    """One of ``REASONS``."""
    detail: str
    margin: float
    """Relative gap between the two methods involved (smaller: less certain); inf if unknown."""


@dataclass(frozen=True)
class Suggestions:
    axis_names: tuple[str, str]
    points: tuple[Suggestion, ...]
    dropped: int
    """Points found beyond ``limit``."""


def _between(x: float, y: float, integer: bool) -> float | None:
    lo, hi = min(x, y), max(x, y)
    mid = math.sqrt(lo * hi) if lo > 0 else 0.5 * (lo + hi)
    if integer:
        mid = float(round(mid))
        if not lo < mid < hi:
            inside = [v for v in (math.floor(0.5 * (lo + hi)), math.ceil(0.5 * (lo + hi)))
                      if lo < v < hi]
            if not inside:
                return None
            mid = float(inside[0])
    elif not lo < mid < hi:
        return None
    return mid


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _margin(dm: DecisionMap, i: int, j: int, m1: int, m2: int) -> float:
    t1, t2 = dm.times[m1, i, j], dm.times[m2, i, j]
    if not (np.isfinite(t1) and np.isfinite(t2)):
        return math.inf
    return float(abs(t2 - t1) / min(t1, t2))


def suggest_next(dm: DecisionMap, close: float = 0.05,
                 integer_axes: tuple[bool, bool] = (True, True),
                 limit: int = 50) -> Suggestions:
    """The points to measure next, most useful first (see the module docstring)."""
    if close < 0:
        raise AnalysisError(f"close is a relative margin >= 0, got {close}")
    if limit < 0:
        raise AnalysisError(f"limit must be >= 0, got {limit}")
    a1, a2 = dm.axis_names
    found: dict[tuple[float, float, str], Suggestion] = {}

    def add(s: Suggestion) -> None:
        key = (s.a, s.b, s.reason)
        if key not in found or s.margin < found[key].margin:
            found[key] = s

    measured = ~dm.filled
    for i, j in zip(*np.nonzero(dm.filled), strict=True):
        add(Suggestion(float(dm.axis1[i]), float(dm.axis2[j]), "unmeasured",
                       f"no method was run at {a1}={_fmt(dm.axis1[i])}, "
                       f"{a2}={_fmt(dm.axis2[j])}", math.inf))
    n1, n2 = dm.shape
    for i in range(n1):
        for j in range(n2):
            if not measured[i, j]:
                continue
            for di, dj in ((1, 0), (0, 1)):
                k, m = i + di, j + dj
                if k >= n1 or m >= n2 or not measured[k, m] or dm.best[i, j] == dm.best[k, m]:
                    continue
                m1, m2 = int(dm.best[i, j]), int(dm.best[k, m])
                margin = min(_margin(dm, i, j, m1, m2), _margin(dm, k, m, m1, m2))
                if di:
                    mid = _between(float(dm.axis1[i]), float(dm.axis1[k]), integer_axes[0])
                    if mid is None:
                        continue
                    point = (mid, float(dm.axis2[j]))
                    where = (f"between {dm.methods[m1]} ({a1}={_fmt(dm.axis1[i])}) and "
                             f"{dm.methods[m2]} ({a1}={_fmt(dm.axis1[k])}) at "
                             f"{a2}={_fmt(dm.axis2[j])}")
                else:
                    mid = _between(float(dm.axis2[j]), float(dm.axis2[m]), integer_axes[1])
                    if mid is None:
                        continue
                    point = (float(dm.axis1[i]), mid)
                    where = (f"between {dm.methods[m1]} ({a2}={_fmt(dm.axis2[j])}) and "
                             f"{dm.methods[m2]} ({a2}={_fmt(dm.axis2[m])}) at "
                             f"{a1}={_fmt(dm.axis1[i])}")
                add(Suggestion(point[0], point[1], "boundary", where, margin))
            t = dm.times[:, i, j]
            order = np.argsort(np.where(np.isfinite(t), t, np.inf))
            if np.isfinite(t[order[1]]):
                gap = float(t[order[1]] / t[order[0]] - 1.0)
                if gap <= close:
                    add(Suggestion(float(dm.axis1[i]), float(dm.axis2[j]), "close",
                                   f"{dm.methods[order[1]]} within {100 * gap:.1f} % of "
                                   f"{dm.methods[order[0]]}: measure again", gap))
    ranked = sorted(found.values(), key=lambda s: (REASONS.index(s.reason), s.margin, s.a, s.b))
    return Suggestions((a1, a2), tuple(ranked[:limit]), max(0, len(ranked) - limit))


def campaign_toml(s: Suggestions, fixed: dict[str, object], methods: tuple[str, ...],
                  method_key: str, name: str, repetitions: int = 3) -> str:
    """A campaign file that measures the suggested points for every method."""
    if not s.points:
        raise AnalysisError("no point to suggest: every boundary lies between consecutive "
                            "integers and no decision is close")
    a1, a2 = s.axis_names
    lines = [f"# ksptrace decide: where to measure next ({len(s.points)} points"
             + (f", {s.dropped} more left out" if s.dropped else "") + ")"]
    for p in s.points:
        lines.append("#   " + escape.comment(f"{a1}={_fmt(p.a)}, {a2}={_fmt(p.b)}: {p.reason}: "
                                            f"{p.detail}", limit=400))
    key1, key2 = escape.toml_key(a1), escape.toml_key(a2)
    lines += ["[campaign]", f"name = {_toml(name)}", f"output = {_toml('runs/' + name)}",
              f"repetitions = {repetitions}", f"zip = [[{_toml(a1)}, {_toml(a2)}]]", "",
              "[sweep]",
              f"{key1} = [{', '.join(_fmt(p.a) for p in s.points)}]",
              f"{key2} = [{', '.join(_fmt(p.b) for p in s.points)}]",
              f"{escape.toml_key(method_key)} = [{', '.join(_toml(m) for m in methods)}]"]
    for key, value in fixed.items():
        lines.append(f"{escape.toml_key(key)} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _toml(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return _fmt(float(v)) if float(v).is_integer() else repr(float(v))
    return escape.toml_string(str(v))
