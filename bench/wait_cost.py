"""What the MPI wait accounting costs (issue 65): ``ksptrace run`` with it against without.

Three measurements, each its own processes:

1. **Instructions per wrapped reduction** (callgrind, P = 1): a loop of N1 and of N2
   ``MPI_Allreduce`` calls of 8 bytes through mpi4py, with the interposer installed on mpi4py's
   module (as it is on libpetsc's in a run) and without; the difference per call, start-up
   excluded. A GMRES iteration makes two reductions, so twice this over a bare iteration's
   instructions (``bench/results/instructions.json``: 1-D Laplacian, 10^3 unknowns, GMRES +
   Jacobi) is the accounting's share in instructions.
2. **Instructions per iteration of the monitor's copy** (callgrind, P = 1): ``ksptrace run`` at
   10^3 unknowns with ``KSPTRACE_MPI_WAITS=on`` and ``=off``, K1 and K2 iterations (at P = 1
   PETSc's vectors are sequential and no reduction reaches MPI, so this is the monitor's part).
3. **Wall time** at P = 2, 10^3 unknowns per rank, K forced iterations: ``ksptrace run`` with
   and without, interleaved on, off, off, on (then off, on, on, off) so that a linear drift
   cancels; each pair's ratio is the sums' (the trace's ``solve_max``).

    python bench/wait_cost.py [--rounds 6] [--out bench/results/wait_cost.json]

Target: run/bare <= 1.02 at 10^3 unknowns per rank with wait accounting on.

With ``--events`` it measures ``ksptrace run --events`` instead (issue 65's second target,
<= 1.05): instructions per iteration at P = 1 with ``--events`` and without (both with wait
accounting; PETSc's MatMult, PCApply and vector reductions are wrapped at any P), the main
thread's (Open MPI's helper threads poll by the clock: theirs grow with the run's wall time
under valgrind, where a clock read is an emulated system call; every thread's too unless
``--main-only``), added to the
wait accounting's own figure over a bare iteration; and, unless ``--no-wall``, the interleaved
wall time at P = 2 with ``--events`` against without. Written to
``bench/results/events_cost.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.overhead import _env, bootstrap  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "wait_cost.json"
EVENTS_RESULTS = ROOT / "bench" / "results" / "events_cost.json"
BARE = ROOT / "bench" / "results" / "instructions.json"
CALLS = (2_000, 6_000)
ITERATIONS = (1_000, 3_000)
WALL = (1_000, 2, 30_000)  # unknowns per rank, P, K

LOOP = """
import ctypes, sys
import numpy as np
from mpi4py import MPI
from ksptrace.harness.monitoring import mpiwait
mode, n = sys.argv[1], int(sys.argv[2])
if mode == "on":
    clock = ctypes.cast(ctypes.CDLL(MPI.__file__).MPI_Wtime, ctypes.c_void_p).value
    assert not isinstance(mpiwait.install(clock, MPI._sizeof(MPI.Request), "MPI.cpython"), str)
x, y = np.ones(1), np.empty(1)
for _ in range(n):
    MPI.COMM_WORLD.Allreduce(x, y)
"""


def _callgrind(cmd: list[str], log: Path, main_only: bool = False, **env: str) -> int:
    """The instructions of ``cmd`` under callgrind: every thread's, or with ``main_only`` the
    main thread's (Open MPI's helper threads poll by the clock, so theirs grow with a run's
    wall time under valgrind, which a clock read made by a system call there lengthens)."""
    threads = ["--separate-threads=yes"] if main_only else []
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={log}",
                           "--trace-children=no", *threads, *cmd], env={**_env(), **env},
                          cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} under callgrind failed: {proc.stderr.strip()[-2000:]}")
    log = log.with_name(log.name + "-01") if main_only else log
    found = re.search(r"^(?:summary|totals):\s+(\d+)", log.read_text(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"no instruction total in {log}")
    return int(found.group(1))


def per_call(tmp: Path) -> dict[str, float]:
    """Instructions per Allreduce, with the interposer and without."""
    out = {}
    for mode in ("off", "on"):
        low, high = (_callgrind([sys.executable, "-c", LOOP, mode, str(n)],
                                tmp / f"loop-{mode}-{n}.cg") for n in CALLS)
        out[mode] = (high - low) / (CALLS[1] - CALLS[0])
    return out


def _run(n: int, k: int, out: Path, nprocs: int | None = None, events: bool = False
         ) -> list[str]:
    cmd = [sys.executable, "-m", "ksptrace", "run", "--n", str(n), "--iterations", str(k),
           "--out", str(out), "--overwrite", *(["--events"] if events else [])]
    return cmd if nprocs is None else [*cmd, "--np", str(nprocs)]


def per_iteration_events(tmp: Path, main_only: bool) -> dict[str, float]:
    """Instructions per iteration of ``ksptrace run`` at P = 1 (waits on), with ``--events``
    and without (every thread's, or the main thread's)."""
    out = {}
    for mode in ("off", "on"):
        low, high = (_callgrind(_run(1_000, k, tmp / "t.h5", events=mode == "on"),
                                tmp / f"events-{mode}-{k}.cg", main_only,
                                KSPTRACE_MPI_WAITS="on")
                     for k in ITERATIONS)
        out[mode] = (high - low) / (ITERATIONS[1] - ITERATIONS[0])
    return out


def wall_events(tmp: Path, rounds: int) -> dict[str, Any]:
    """As :func:`wall`, ``--events`` on against off (wait accounting on in both)."""
    from ksptrace.trace.io import read_trace

    per_rank, nprocs, k = WALL
    pairs = []
    for r in range(rounds):
        order = ("on", "off", "off", "on") if r % 2 == 0 else ("off", "on", "on", "off")
        got: dict[str, float] = {"on": 0.0, "off": 0.0}
        for mode in order:
            out = tmp / f"events-{mode}.h5"
            proc = subprocess.run(_run(per_rank * nprocs, k, out, nprocs, mode == "on"),
                                  env={**_env(), "KSPTRACE_MPI_WAITS": "on"}, cwd=ROOT,
                                  capture_output=True, text=True, timeout=600, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"run failed: {proc.stderr.strip()[-2000:]}")
            trace = read_trace(out)
            if (trace.event_seconds is None) != (mode == "off"):
                raise SystemExit(f"--events {mode} but the trace disagrees")
            got[mode] += trace.solve_max
        pairs.append((got["off"], got["on"]))
    ratios = np.array([on / off for off, on in pairs])
    low, high = bootstrap(ratios)
    return {"unknowns_per_rank": per_rank, "nprocs": nprocs, "iterations": k, "rounds": rounds,
            "median_ratio": float(np.median(ratios)), "ci95": [low, high], "pairs": pairs}


def events_main(args: argparse.Namespace) -> int:
    """``--events``: the instructions it adds per iteration, over a bare one with the wait
    accounting's figure (bench/results/wait_cost.json), and its wall time unless --no-wall."""
    started, load_before = time.time(), os.getloadavg()
    waits = json.loads(RESULTS.read_text())
    bare = float(waits["bare_per_iteration"])
    with_waits = float(waits["run_with_waits_over_bare_instructions"]) * bare
    with tempfile.TemporaryDirectory(prefix="ksptrace-eventcost-") as tmp:
        its = per_iteration_events(Path(tmp), main_only=True)
        extra = its["on"] - its["off"]
        print(f"run at P = 1 (waits on), main thread: {its['off']:,.0f} instructions per "
              f"iteration, {its['on']:,.0f} with --events ({extra:+,.1f})", flush=True)
        every = None if args.main_only else per_iteration_events(Path(tmp), main_only=False)
        if every is not None:
            print(f"every thread: {every['off']:,.0f} and {every['on']:,.0f} "
                  f"({every['on'] - every['off']:+,.1f})", flush=True)
        timed = None if args.no_wall else wall_events(Path(tmp), args.rounds)
    estimate = (with_waits + extra) / bare
    print(f"instructions: run --events / bare = {estimate:.4f} (the wait accounting's "
          f"{with_waits / bare:.4f} and --events' {extra:+,.0f} over a bare iteration of "
          f"{bare:,.0f})")
    if timed is not None:
        print(f"wall, P = 2: --events on/off {timed['median_ratio']:.4f} [{timed['ci95'][0]:.4f}, "
              f"{timed['ci95'][1]:.4f}]")
    result = {
        "what": "the cost of ksptrace run --events: instructions per iteration of ksptrace run "
                "with --events and without (callgrind, P = 1, wait accounting on in both; the "
                "main thread's, Open MPI's helper threads polling by the clock), "
                "added to the wait accounting's figure over a bare iteration; and the wall "
                "time with --events against without (P = 2, interleaved), unless skipped",
        "instructions_per_run_iteration_p1_main_thread": its,
        "instructions_per_run_iteration_p1_every_thread": every,
        "events_extra_per_iteration": extra,
        "bare_per_iteration": bare,
        "bare_from": f"{RESULTS.relative_to(ROOT)} ({waits['date_utc']})",
        "run_with_events_over_bare_instructions": estimate, "wall_p2": timed,
        "target": 1.05, "met_instructions": estimate <= 1.05,
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "cpu_count": os.cpu_count(), "minutes": (time.time() - started) / 60,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    out = Path(args.out or EVENTS_RESULTS)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"load {load_before[0]:.2f} -> {result['loadavg_after'][0]:.2f}; {out}")
    return 0


def per_iteration(tmp: Path) -> dict[str, float]:
    """Instructions per iteration of ``ksptrace run`` at P = 1, waits on and off."""
    out = {}
    for mode in ("off", "on"):
        low, high = (_callgrind(_run(1_000, k, tmp / "t.h5"), tmp / f"run-{mode}-{k}.cg",
                                KSPTRACE_MPI_WAITS=mode) for k in ITERATIONS)
        out[mode] = (high - low) / (ITERATIONS[1] - ITERATIONS[0])
    return out


def wall(tmp: Path, rounds: int) -> dict[str, Any]:
    from ksptrace.trace.io import read_trace

    per_rank, nprocs, k = WALL
    pairs = []
    for r in range(rounds):
        order = ("on", "off", "off", "on") if r % 2 == 0 else ("off", "on", "on", "off")
        got: dict[str, float] = {"on": 0.0, "off": 0.0}
        for mode in order:
            out = tmp / f"wall-{mode}.h5"
            proc = subprocess.run(_run(per_rank * nprocs, k, out, nprocs),
                                  env={**_env(), "KSPTRACE_MPI_WAITS": mode}, cwd=ROOT,
                                  capture_output=True, text=True, timeout=600, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"run failed: {proc.stderr.strip()[-2000:]}")
            trace = read_trace(out)
            if (trace.wait_seconds is None) != (mode == "off"):
                raise SystemExit(f"KSPTRACE_MPI_WAITS={mode} but the trace disagrees")
            got[mode] += trace.solve_max
        pairs.append((got["off"], got["on"]))
    ratios = np.array([on / off for off, on in pairs])
    low, high = bootstrap(ratios)
    return {"unknowns_per_rank": per_rank, "nprocs": nprocs, "iterations": k, "rounds": rounds,
            "median_ratio": float(np.median(ratios)), "ci95": [low, high],
            "us_per_iteration": float(np.median([(on - off) / 2 / k * 1e6
                                                 for off, on in pairs])),
            "pairs": pairs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--out", default=None, help=f"default {RESULTS.relative_to(ROOT)}, with "
                    f"--events {EVENTS_RESULTS.relative_to(ROOT)}")
    ap.add_argument("--events", action="store_true", help="measure run --events instead")
    ap.add_argument("--no-wall", action="store_true", help="with --events: instructions only")
    ap.add_argument("--main-only", action="store_true",
                    help="with --events: the main thread's instructions only, not every thread's")
    args = ap.parse_args()
    if args.events:
        return events_main(args)
    args.out = args.out or str(RESULTS)
    started, load_before = time.time(), os.getloadavg()
    bare_case = json.loads(BARE.read_text())["cases"][0]
    bare = float(bare_case["per_iteration"]["bare"])
    run_off = float(bare_case["per_iteration"]["run"])
    with tempfile.TemporaryDirectory(prefix="ksptrace-waitcost-") as tmp:
        calls = per_call(Path(tmp))
        extra_call = calls["on"] - calls["off"]
        print(f"Allreduce: {calls['off']:,.0f} instructions, {calls['on']:,.0f} wrapped "
              f"({extra_call:+,.0f})", flush=True)
        its = per_iteration(Path(tmp))
        extra_monitor = its["on"] - its["off"]
        print(f"run at P = 1: {its['off']:,.0f} instructions per iteration, {its['on']:,.0f} "
              f"with waits ({extra_monitor:+,.1f})", flush=True)
        timed = wall(Path(tmp), args.rounds)
    estimate = (run_off + 2 * extra_call + extra_monitor) / bare
    print(f"instructions: run with waits / bare = {estimate:.4f} (2 wrapped reductions and the "
          f"monitor's copy over a bare iteration of {bare:,.0f})")
    print(f"wall, P = 2: on/off {timed['median_ratio']:.4f} [{timed['ci95'][0]:.4f}, "
          f"{timed['ci95'][1]:.4f}], {timed['us_per_iteration']:+.3f} us/iteration")
    result = {
        "what": "the cost of MPI wait accounting: instructions per wrapped Allreduce and per "
                "iteration of ksptrace run (callgrind, P = 1), and ksptrace run's wall time "
                "with it against without (P = 2, interleaved)",
        "instructions_per_allreduce": calls, "instructions_per_run_iteration_p1": its,
        "bare_per_iteration": bare, "run_off_per_iteration": run_off,
        "bare_from": f"{BARE.relative_to(ROOT)} ({json.loads(BARE.read_text())['date_utc']})",
        "run_with_waits_over_bare_instructions": estimate, "wall_p2": timed,
        "target": 1.02, "met_instructions": estimate <= 1.02,
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "cpu_count": os.cpu_count(), "minutes": (time.time() - started) / 60,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"load {load_before[0]:.2f} -> {result['loadavg_after'][0]:.2f}; {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
