"""Print the profiles of a real campaign's traces for ``ksptrace.studies.fits.real_shapes``
(issue 61): the real-shaped benchmark set is calibrated on real traces, not on the package's
own generator.

    ksptrace campaign run bench/fits_real/laplace.toml --backend local   # and iceflow.toml
    python bench/fits_calibrate.py bench/fits_real/runs

prints one ``Profile(...)`` line per trace (P, K, the bulk as a shifted gamma, the detours'
rate and lognormal size over the median), and the set's shape: q99/q50, detour rates, gamma
shapes, as the issue describes the traces the project had not seen.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ksptrace.studies.fits.real_shapes import calibrate
from ksptrace.trace.read import read_trace


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not Path(argv[1]).is_dir():
        print("usage: python bench/fits_calibrate.py TRACE_DIR", file=sys.stderr)
        return 2
    q = []
    for path in sorted(Path(argv[1]).rglob("*.h5")):
        t = read_trace(path)
        name = f"{t.attr('problem', '?')}-{t.attr('ksp', '?')}-p{t.nprocs}-k{t.iterations}"
        p = calibrate(name, t.iteration_seconds)
        x = t.iteration_seconds.ravel()
        q.append(float(np.quantile(x, 0.99) / np.median(x)))
        print(f"    Profile({p.name!r}, {p.nprocs}, {p.iterations}, {p.median:.4g}, "
              f"{p.floor:.4g},\n            {p.shape:.4g}, {p.scale:.4g}, {p.rate:.4g}, "
              f"{p.log_size:.4g}, {p.log_spread:.4g}),")
    print(f"# {len(q)} traces; q99/q50 median {np.median(q):.1f}, range {min(q):.1f}-{max(q):.1f}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
