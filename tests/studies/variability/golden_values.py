"""Every number an analysis computes, flattened to ``{path: value}``, to hold the analysis to
the numbers it gave before a change (issue 35: throughput work must not move a result by more
than 1e-6 relative).

``python -m tests.studies.variability.golden_values write`` analyses the stored demo traces in
``golden/`` with the paper's seven families (the defaults plus nct) and writes
``golden/<trace>.json``; the test compares a fresh analysis with those files
(:func:`differences`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace.studies.fits import GUARANTEE_NATS

FOLDER = Path(__file__).with_name("golden")
SKIPPED = {"path", "label", "attrs"}
"""Fields that name the file or repeat the trace's attributes, not computed values."""
RELATIVE = 1e-6
ABSOLUTE = 1e-12
"""Values this close to zero (seconds of a sub-nanosecond spread, p-values) compare absolutely."""


def flatten(value: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """``value`` as ``{path: number or string}``: dataclass fields, sequences, mappings and
    arrays element by element."""
    out = {} if out is None else out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.name not in SKIPPED:
                flatten(getattr(value, f.name), f"{prefix}.{f.name}", out)
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            flatten(value[key], f"{prefix}[{key}]", out)
    elif isinstance(value, np.ndarray):
        for i, v in enumerate(value.ravel().tolist()):
            out[f"{prefix}[{i}]"] = v
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            flatten(v, f"{prefix}[{i}]", out)
    elif isinstance(value, bool | int | float | str) or value is None:
        out[prefix] = value
    elif isinstance(value, np.generic):
        out[prefix] = value.item()
    else:
        out[prefix] = repr(value)
    return out


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, int | float) or not isinstance(b, int | float):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= max(RELATIVE * max(abs(a), abs(b)), ABSOLUTE)
    return bool(a == b)


OBJECTIVES = (".objective", ".criterion", ".aic")
"""A fit's objective (lower is better) and criteria on it: a fresh value may be lower than the
stored one (a better maximum) but not higher by more than the engine's guarantee
(``GUARANTEE_NATS``: an ok or boundary fit is within that of the best point of its box or
bound, on any CPU) or RELATIVE, whichever is larger."""
LOGLIK = ".loglik"
"""Minus the objective: may be higher, not lower by more than RELATIVE."""
FITTED_RELATIVE = 1e-2
"""Values computed from a fitted distribution (SSE, KS distance, a stationary model's mean and
expected maximum, the Monte Carlo simulation from the Johnson S_U fits): two maxima equally good
to RELATIVE describe the same distribution to about this much, whatever their parameters."""
FITTED = re.compile(r"^\.bulk\.fits[<\[]|^\.parameters\.(lower|span)\.|^\.stationary[<\[].*"
                    r"\.(mean|expected_max)$|^\.simulation\.")
PARAMETERS = re.compile(r"^\.bulk\.fits[<\[].*\.params\[\d+\]$"
                        r"|^\.parameters\.(lower|span)\.(a|b|loc|scale)$")
"""Fitted parameters: on a flat ridge of the objective (Johnson S_U towards its lognormal limit,
nct as df grows) two maxima equal to RELATIVE have parameters that differ by any amount, so a
parameter is only held to be finite where the stored one is, and of the same sign; the
distribution it describes is held by the FITTED values."""
UNCHECKED = (".reason",)
"""Why a fit is not ok: words, not numbers (its status is compared)."""


def by_family(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with fits and stationary models keyed by family instead of rank, and the
    ranking kept as ``.bulk.ranking`` (the names, best first: ok fits by AIC, then the
    others), so that a fit is compared with the same family's stored fit."""
    out: dict[str, Any] = {}
    for prefix in (".bulk.fits", ".stationary"):
        names = {k.rsplit(".", 1)[0]: v for k, v in values.items()
                 if k.startswith(prefix + "[") and k.endswith((".name", ".family"))}
        for key, value in values.items():
            if key.startswith(prefix + "["):
                head = key[: key.index("]") + 1]
                out[f"{prefix}<{names.get(head)}>{key[len(head):]}"] = value
        if prefix == ".bulk.fits" and names:
            out[".bulk.ranking"] = " ".join(str(names[k]) for k in sorted(
                names, key=lambda k: int(k[len(prefix) + 1:-1])))
    out.update({k: v for k, v in values.items()
                if not k.startswith((".bulk.fits[", ".stationary["))})
    return out


def _agrees(key: str, a: Any, b: Any) -> bool:
    """Whether the fresh value ``b`` agrees with the stored ``a`` at ``key``."""
    if key.endswith(UNCHECKED):
        return True
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b))
    if numbers and all(math.isfinite(v) for v in (a, b)):
        slack = max(RELATIVE * max(abs(a), abs(b)), ABSOLUTE)
        if key.endswith(OBJECTIVES):  # the AIC and criterion are 2 (objective + parameters)
            return bool(b <= a + max(slack, (1 if key.endswith(".objective") else 2)
                                     * GUARANTEE_NATS))
        if key.endswith(LOGLIK):
            return bool(b >= a - max(slack, GUARANTEE_NATS))
        if PARAMETERS.search(key):
            return (a > 0) == (b > 0) or a == b
        if FITTED.search(key):
            return abs(a - b) <= max(FITTED_RELATIVE * max(abs(a), abs(b)), ABSOLUTE)
    return _close(a, b)


def differences(expected: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """The paths where ``got`` differs from ``expected`` (missing, extra, or not agreeing), with
    fits compared family by family: the objective one-sided (a better maximum passes), the
    status and the ranking exactly, the fitted parameters and what is computed from them to
    FITTED_RELATIVE, every other value to RELATIVE."""
    expected, got = by_family(expected), by_family(got)
    bad = [f"missing {k}" for k in expected if k not in got]
    bad += [f"extra {k}" for k in got if k not in expected]
    bad += [f"{k}: {expected[k]!r} -> {got[k]!r}" for k in expected
            if k in got and not _agrees(k, expected[k], got[k])]
    return bad


def analysed(path: Path) -> dict[str, Any]:
    from ksptrace.studies.variability.run.options import AnalysisOptions
    from ksptrace.studies.variability.run.pipeline import analyze_trace
    from ksptrace.studies.variability.stats.choices import PAPER_CANDIDATES
    from ksptrace.trace.read import read_trace

    # The paper's seven families, nct included: the values were stored before nct left the
    # default set, and this keeps every one of them checked.
    return flatten(analyze_trace(read_trace(path), AnalysisOptions(candidates=PAPER_CANDIDATES)))


def main(argv: list[str]) -> int:
    if argv[1:] != ["write"]:
        print("usage: python -m tests.studies.variability.golden_values write", file=sys.stderr)
        return 2
    for path in sorted(FOLDER.glob("*.h5")):
        values = analysed(path)
        path.with_suffix(".json").write_text(json.dumps(values, indent=0, sort_keys=True) + "\n")
        print(f"{path.name}: {len(values)} values")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
