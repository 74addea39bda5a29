"""The golden maxima: for the four golden demo traces and six varied traces (K 200 to 5000, P 1
to 4), every default family's status and the least objective found by the engine and by the
strong search (:mod:`ksptrace.studies.fits.verify`), which the test holds the engine to.

``python -m tests.studies.fits.maxima write`` rewrites ``maxima.json`` (minutes: the strong
search is slow); do it only for a change that means to move a maximum, and say why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from ksptrace.studies.fits import Binned, binned, equal_count_cells, family, fit_family
from ksptrace.studies.fits.samples import SIZES, varied_trace
from ksptrace.studies.variability.stats.choices import DEFAULT_CANDIDATES

FILE = Path(__file__).with_name("maxima.json")
GOLDEN = Path(__file__).parent.parent / "variability" / "golden"


def varied_indices() -> list[int]:
    """The first varied trace of each (P, K) size."""
    found: dict[tuple[int, int], int] = {}
    i = 0
    while len(found) < len(SIZES):
        v = varied_trace(i)
        found.setdefault((v.nprocs, v.iterations), i)
        i += 1
    return sorted(found.values())


def samples() -> dict[str, Binned]:
    """Name -> the equal-count cells of every iteration time of the trace."""
    from ksptrace.trace.read import read_trace

    out = {}
    for path in sorted(GOLDEN.glob("*.h5")):
        x = read_trace(path).iteration_seconds.ravel()
        out[path.stem] = binned(*equal_count_cells(np.sort(x)))
    for i in varied_indices():
        v = varied_trace(i)
        out[v.name] = binned(*equal_count_cells(np.sort(v.trace.iteration_seconds.ravel())))
    return out


def theta_of(name: str, data: Binned, params: tuple[float, ...]) -> np.ndarray:
    fam = family(name)
    z = np.array([*params[:-2], (params[-2] - data.centre) / data.spread,
                  params[-1] / data.spread])
    return fam.theta(z, data.anchor)


def write() -> None:
    from ksptrace.studies.fits.verify import strong_search

    out: dict[str, dict[str, dict[str, object]]] = {}
    for trace, data in samples().items():
        out[trace] = {}
        for name in DEFAULT_CANDIDATES:
            fit = fit_family(family(name), data)
            strong = strong_search(family(name), data, theta_of(name, data, fit.params))
            out[trace][name] = {"status": fit.status, "engine": fit.objective,
                                "strong": strong.objective,
                                "best": min(fit.objective, strong.objective)}
            print(trace, name, out[trace][name], flush=True)
    FILE.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["write"]:
        print("usage: python -m tests.studies.fits.maxima write", file=sys.stderr)
        sys.exit(2)
    write()
