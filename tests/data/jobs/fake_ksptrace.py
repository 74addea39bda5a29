"""A stand-in for ``ksptrace run`` in campaign tests: writes a small valid trace, fast.

It writes like the harness does (hidden temporary file, then rename), optionally slowly, so that
kill tests can hit it mid-write. It logs each call to $FAKE_CALLS and fails for the run ids
listed in $FAKE_FAIL.
"""

import os
import sys
import time
from pathlib import Path

import h5py
import numpy as np

from ksptrace.trace.layout import fill_file
from ksptrace.trace.model import Trace
from ksptrace.trace.temporaries import temp_path_for


def main(argv: list[str]) -> int:
    assert argv[0] == "run", argv
    def value(flag: str, default: str | None = None) -> str:
        return argv[argv.index(flag) + 1] if flag in argv else str(default)

    out = Path(value("--out"))
    nprocs = int(value("--np", os.environ.get("SLURM_NTASKS", "1")))
    iterations = int(value("--iterations"))
    run_id = os.environ.get("KSPTRACE_RUN_ID", "")
    with open(os.environ["FAKE_CALLS"], "a") as f:
        f.write(f"{run_id} {' '.join(argv)}\n")
    if run_id and run_id in os.environ.get("FAKE_FAIL", "").split(","):
        print("ksptrace: error: fake failure", file=sys.stderr)
        return 5
    stamps = np.cumsum(np.full((nprocs, iterations + 1), 1e-3), axis=1)
    trace = Trace(stamps=stamps, residual_norms=np.ones(iterations + 1),
                  node_ids=np.zeros(nprocs, dtype=np.int64), hostnames=("h",) * nprocs,
                  solve_seconds=np.full(nprocs, 0.1),
                  attrs={"run_id": run_id,
                         "campaign_hash": os.environ.get("KSPTRACE_CAMPAIGN_HASH", "")})
    tmp = temp_path_for(out)
    with h5py.File(tmp, "w") as f:
        fill_file(f, trace)
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
    gate = os.environ.get("FAKE_GATE")
    deadline = time.monotonic() + 300
    while gate and not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # held until the test opens the gate: a state, not a time
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
