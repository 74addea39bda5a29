"""Measured runs grouped into decision studies: each run's trace attributes and time become a
:class:`Run`; runs that share every setting but the map's axes and the method form one study.

The computation is in ``maps``, ``quadtree`` and ``study``; its tables are in ``tables``, its
figures in ``figures`` and the files ``ksptrace decide`` writes in ``files``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ksptrace.errors import AnalysisError, UsageError
from ksptrace.studies.decisions.defaults import DEFAULT_AXES, DEFAULT_METHOD
from ksptrace.studies.decisions.maps import decision_map
from ksptrace.studies.decisions.study import DecisionStudy, study
from ksptrace.trace.model import CONFIG_DEFAULTS, CONFIG_KEYS

IGNORED_FOR_GROUPING = ("ranks_per_node", "restart")
"""Configuration keys that follow from the axes or the method: ranks per node changes with P
on one node, and the restart length belongs to the GMRES family only."""


OPTION_OF_METHOD = {"ksp": "-ksp_type", "pc": "-pc_type"}
"""The PETSc option that selects a method, for the options files."""


@dataclass(frozen=True)
class Run:
    """One measured run: its attributes (axes, method, configuration) and its time."""

    attrs: Mapping[str, Any]
    seconds: float
    path: str = ""



@dataclass(frozen=True)
class Studies:
    """The decision maps of a set of runs, and why some runs formed none."""

    axes: tuple[str, str]
    method: str
    studies: tuple[DecisionStudy, ...]
    notes: tuple[str, ...]
    settings: tuple[dict[str, Any], ...] = ()
    """Per study, the campaign keys its runs share (for the follow-up campaign file)."""
    left_out: int = 0
    """Runs in no map: without a numeric axis, or in a group that formed none (see notes)."""


def run_of(attrs: Mapping[str, Any], nprocs: int, seconds: float, path: str = "") -> Run:
    """A run from trace attributes; ``nprocs`` is the trace's rank count."""
    merged = dict(attrs)
    merged.setdefault("nprocs", nprocs)
    for key, value in CONFIG_DEFAULTS.items():
        merged.setdefault(key, value)
    return Run(merged, float(seconds), path)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float | np.integer | np.floating) and math.isfinite(float(value)):
        return float(value)
    return None


def build_studies(runs: Sequence[Run], axes: tuple[str, str] = DEFAULT_AXES,
                  method: str = DEFAULT_METHOD, max_depth: int | None = None,
                  threshold: float = 1.0, strict: bool = False) -> Studies:
    """One decision map per group of runs that agree on every configuration key but the axes
    and the method. Groups that cannot form a map are described in ``notes``; with ``strict``
    (the ``decide`` command) a request that forms no map at all is an error."""
    if len(set(axes)) != 2 or method in axes:
        raise UsageError(f"the two axes and the method must be three different keys, got axes "
                         f"{','.join(axes)} and method {method}")
    known = set().union(*(r.attrs for r in runs)) if runs else set()
    for key in (*axes, method):
        if runs and key not in known:
            near = sorted(k for k in known if k.lower() == key.lower() or key in k)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise UsageError(f"no run has the key {key!r}{hint}; keys present: "
                             f"{', '.join(sorted(known))}")
    skip = set(axes) | {method} | set(IGNORED_FOR_GROUPING)
    group_keys = [k for k in CONFIG_KEYS if k not in skip]
    groups: dict[tuple[Any, ...], list[Run]] = {}
    notes: list[str] = []
    left_out = 0
    for r in runs:
        values = [_number(r.attrs.get(a)) for a in axes]
        if None in values:
            notes.append(f"{r.path or 'a run'}: no numeric {axes[values.index(None)]}; left out")
            left_out += 1
            continue
        groups.setdefault(tuple(str(r.attrs.get(k)) for k in group_keys), []).append(r)
    out: list[DecisionStudy] = []
    settings: list[dict[str, Any]] = []
    varying = _title_keys(group_keys, list(groups))
    for group, members in sorted(groups.items()):
        title = ", ".join(f"{group_keys[i]}={group[i]}" for i in varying) or "all runs"
        try:
            dm = decision_map(
                np.array([_number(r.attrs[axes[0]]) for r in members], dtype=float),
                np.array([_number(r.attrs[axes[1]]) for r in members], dtype=float),
                np.array([str(r.attrs.get(method)) for r in members]),
                np.array([r.seconds for r in members], dtype=float), axis_names=axes)
        except AnalysisError as exc:
            notes.append(f"{title}: no decision map ({len(members)} runs left out): {exc}")
            left_out += len(members)
            continue
        out.append(study(dm, title, max_depth=max_depth, threshold=threshold))
        settings.append(_shared_settings(members))
    if strict and not out:
        raise AnalysisError("no decision map could be built: " + ("; ".join(notes) or
                            "no runs") + f" (axes {axes[0]} x {axes[1]}, method {method})")
    return Studies(axes, method, tuple(out), tuple(notes), tuple(settings), left_out)


SHARED_KEYS = ("problem", "pc", "iterations", "noise")


def _shared_settings(members: Sequence[Run]) -> dict[str, Any]:
    """The campaign keys of a group: problem, pc, iterations, noise, the problem's own."""
    first = members[0].attrs
    out: dict[str, Any] = {}
    for key in SHARED_KEYS:
        value = first.get(key)
        if value is None or (key == "noise" and value == "none"):
            continue
        out[key] = value.item() if isinstance(value, np.generic) else value
    raw = first.get("problem_config")
    if isinstance(raw, str) and raw.strip().startswith("{"):
        try:
            extra = json.loads(raw)
        except ValueError:
            extra = {}
        out.update({k: v for k, v in extra.items() if isinstance(v, str | int | float | bool)})
    return out


def _title_keys(keys: Sequence[str], groups: Sequence[tuple[str, ...]]) -> list[int]:
    """Which keys name a group: the problem whenever groups differ at all, and any other key
    only where it tells apart groups of one problem (so a problem's own settings, which differ
    between problems anyway, do not clutter every title)."""
    if len(groups) < 2:
        return []
    p = keys.index("problem") if "problem" in keys else None
    out = []
    for i in range(len(keys)):
        if len({g[i] for g in groups}) < 2:
            continue
        if i == p or p is None:
            out.append(i)
            continue
        by_problem: dict[str, set[str]] = {}
        for g in groups:
            by_problem.setdefault(g[p], set()).add(g[i])
        if any(len(v) > 1 for v in by_problem.values()):
            out.append(i)
    return out
