"""Back-to-back Allreduce: ``ksptrace collectives --mode back-to-back`` against a separate C
program (issue 66).

bench/collectives_back_to_back.py compares the C kernel with a plain C loop inside one Python
process, so both run at the thread level mpi4py asked for: it cannot see what that level costs.
Here the plain loop is a program of its own, compiled with ``mpicc``, started by ``mpiexec -n 2``
and initialised with ``MPI_Init`` (what the standard benchmarks do); ksptrace runs as a user runs
it. Per repetition on every rank: a barrier, a clock read, N calls, a clock read; a repetition's
time is the slower rank's over N, a run's the median over its repetitions. Runs alternate (C,
ksptrace; then ksptrace, C) so that the machine's other load falls on both; per size the median
over pairs of the ratio ksptrace / C, and the thread level each side ran at.

    python bench/collectives_thread_level.py [--pairs 6] [--calls 1000] [--out FILE]
        [--c-init MPI_Init|single|funneled|serialized|multiple]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace.trace import collectives as ctrace

RESULTS = Path(__file__).resolve().parent / "results" / "collectives_thread_level.json"
SIZES = (8, 16, 32, 64, 128, 256, 512, 1024)
REPETITIONS = 20

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* b2b LEVEL CALLS REPS SIZE...: per size, the median over REPS of the slower rank's time per
   call; LEVEL -1: MPI_Init, else MPI_Init_thread at that level. */
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
int main(int argc, char **argv) {
    int rank, level, asked = atoi(argv[1]);
    if (asked < 0)
        MPI_Init(&argc, &argv);
    else
        MPI_Init_thread(&argc, &argv, asked, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Query_thread(&level);
    long calls = atol(argv[2]);
    int reps = atoi(argv[3]);
    double *t = malloc(sizeof(double) * reps);
    if (rank == 0) printf("level %d\n", level);
    for (int k = 4; k < argc; ++k) {
        int count = atoi(argv[k]) / 8;
        double *send = malloc(8 * count), *recv = malloc(8 * count);
        for (int i = 0; i < count; ++i) send[i] = rank + 1;
        for (int r = -3; r < reps; ++r) {  /* 3 warm-up repetitions */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (long i = 0; i < calls; ++i)
                MPI_Allreduce(send, recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            double mine = (MPI_Wtime() - t0) / (double)calls, slowest;
            MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (r >= 0) t[r] = slowest;
        }
        qsort(t, reps, sizeof(double), cmp);
        if (rank == 0) printf("%d %.9e\n", 8 * count, t[reps / 2]);
        free(send); free(recv);
    }
    free(t);
    MPI_Finalize();
    return 0;
}
"""
LEVELS = {0: "single", 1: "funneled", 2: "serialized", 3: "multiple"}


def env() -> dict[str, str]:
    return {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_rmaps_base_oversubscribe": "1", "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1"}


def run_c(program: Path, calls: int, asked: str) -> tuple[dict[int, float], str]:
    code = {v: k for k, v in LEVELS.items()}.get(asked, -1)
    proc = subprocess.run(["mpiexec", "-n", "2", str(program), str(code), str(calls),
                           str(REPETITIONS),
                           *map(str, SIZES)], env=env(), capture_output=True, text=True,
                          check=True, timeout=600)
    lines = proc.stdout.split("\n")
    level = LEVELS.get(int(lines[0].split()[1]), lines[0])
    return {int(a): float(b) for a, b in (ln.split() for ln in lines[1:] if ln.strip())}, level


def run_ksptrace(folder: Path, calls: int) -> tuple[dict[int, float], str]:
    out = folder / "b2b.h5"
    subprocess.run([sys.executable, "-m", "ksptrace", "collectives", "--np", "2", "--mode",
                    "back-to-back", "--calls", str(calls), "--min-bytes", str(SIZES[0]),
                    "--max-bytes", str(SIZES[-1]), "--repetitions", str(REPETITIONS),
                    "--warmup", "3", "--out", str(out), "--overwrite"], env=env(),
                   capture_output=True, text=True, check=True, timeout=600)
    t = ctrace.read(out)
    slowest = t.seconds.max(axis=0)  # [sizes, repetitions]: the slower rank per repetition
    med = {int(m): float(np.median(row)) for m, row in zip(t.message_bytes, slowest,
                                                           strict=True)}
    return med, str(t.attrs.get("mpi_thread_level", "not recorded"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--c-init", choices=("MPI_Init", *LEVELS.values()), default="MPI_Init",
                    help="how the C program starts MPI: MPI_Init (the standard benchmarks), or "
                         "MPI_Init_thread at a level (what that level costs)")
    args = ap.parse_args()
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        raise SystemExit("mpicc not found: the separate C program needs it")
    load_before = os.getloadavg()
    ratios: dict[int, list[float]] = {m: [] for m in SIZES}
    c_us: dict[int, list[float]] = {m: [] for m in SIZES}
    k_us: dict[int, list[float]] = {m: [] for m in SIZES}
    with tempfile.TemporaryDirectory(prefix="ksptrace-b2b-") as tmp:
        folder = Path(tmp)
        (folder / "b2b.c").write_text(PROGRAM)
        subprocess.run([mpicc, "-O2", "-o", str(folder / "b2b"), str(folder / "b2b.c")],
                       check=True, capture_output=True, text=True, timeout=120)
        levels = {}
        for i in range(args.pairs):
            first_c = i % 2 == 0
            for side in (("c", "k") if first_c else ("k", "c")):
                if side == "c":
                    c, levels["c"] = run_c(folder / "b2b", args.calls, args.c_init)
                else:
                    k, levels["ksptrace"] = run_ksptrace(folder, args.calls)
            for m in SIZES:
                ratios[m].append(k[m] / c[m])
                c_us[m].append(c[m] * 1e6)
                k_us[m].append(k[m] * 1e6)
    rows: list[dict[str, Any]] = [{"bytes": m, "c_median_us": float(np.median(c_us[m])),
             "ksptrace_median_us": float(np.median(k_us[m])),
             "ratio_ksptrace_over_c": float(np.median(ratios[m])),
             "ratio_range": [float(min(ratios[m])), float(max(ratios[m]))]} for m in SIZES]
    result = {"pairs": args.pairs, "calls_per_repetition": args.calls, "c_init": args.c_init,
              "repetitions": REPETITIONS, "thread_levels": levels, "sizes": rows,
              "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
              "cpu_count": os.cpu_count(), "python": platform.python_version()}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"thread levels: {levels}")
    for r in rows:
        print(f"{r['bytes']:>6} B  C {r['c_median_us']:.3f} us  ksptrace "
              f"{r['ksptrace_median_us']:.3f} us  ratio {r['ratio_ksptrace_over_c']:.3f} "
              f"[{r['ratio_range'][0]:.3f}, {r['ratio_range'][1]:.3f}]")


if __name__ == "__main__":
    main()
