"""Byte-flip fuzz of every command that reads traces (issue 27): one byte of a valid solver,
collectives or record trace flipped, then ``show``, ``analyze``, ``decide`` and ``reductions``
run on the mutants beside an intact trace of each kind.

Each command runs over a batch of mutants in one process, so a mutant that crashed or hung
HDF5 in the parent would end the whole command by a signal, or stall it: the run counts
commands ended by a signal, commands over the time limit, and batches whose intact traces were
not analysed or shown; and single-file reads the probe stopped at its 20 s limit (a file that
hangs HDF5 is one of those, its command goes on). Targets: 0, 0, 0 and 0.

    python bench/fuzz_read.py --mutants 2000          # results in bench/results/fuzz_read.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ksptrace.studies.collectives.synthetic import allreduce_traces
from ksptrace.trace import collectives
from ksptrace.trace.model import Solves, Trace
from ksptrace.trace.probe import PROBE_SECONDS
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 120.0
"""A command over one batch must end within this (each file's reader has 20 s)."""


def record_trace() -> Trace:
    """A trace of five solves, as ``ksptrace.record`` writes them."""
    lengths = [6, 4, 5, 3, 7]
    rng = np.random.default_rng(3)
    offsets = np.concatenate([[0], np.cumsum([k + 1 for k in lengths])])
    stamps = np.cumsum(rng.uniform(1e-3, 2e-3, (2, offsets[-1])), axis=1)
    seconds = rng.uniform(0.01, 0.02, (2, len(lengths)))
    solves = Solves(offsets, seconds, ("CONVERGED_RTOL",) * len(lengths), np.array(lengths))
    return Trace(stamps, np.arange(offsets[-1], dtype=float), np.zeros(2, int), ("a", "b"),
                 seconds.sum(axis=1), {"problem": "loop", "ksp": "cg", "solves": 5}, None,
                 solves=solves)


def originals(folder: Path) -> dict[str, Path]:
    coll = allreduce_traces(nprocs=(2,), algorithms=("ring",), sizes=(8, 64),
                            repetitions=3)[0]
    return {
        "solver": write_trace(synthetic_trace(2, 30, 1, "cg", seed=1), folder / "solver.h5"),
        "collectives": collectives.write(coll, folder / "collectives.h5"),
        "record": write_trace(record_trace(), folder / "record.h5"),
    }


def mutate(source: bytes, rng: np.random.Generator) -> tuple[bytes, int]:
    data = bytearray(source)
    at = int(rng.integers(len(data)))
    data[at] ^= int(rng.integers(1, 256))
    return bytes(data), at


def run(argv: list[str]) -> tuple[int | None, float, str]:
    """Exit code (None: over the limit), seconds, and stdout+stderr of ``ksptrace ARGV``."""
    started = time.monotonic()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    try:
        done = subprocess.run([sys.executable, "-m", "ksptrace", *argv], capture_output=True,
                              text=True, timeout=LIMIT, env=env, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - started, ""
    return done.returncode, time.monotonic() - started, done.stdout + done.stderr


def _analysed(report: Path, trace: Path) -> bool:
    try:
        summary = json.loads((report / "summary.json").read_text())
    except (OSError, ValueError):
        return False
    return any(t.get("trace") == str(trace) for t in summary.get("traces", []))


def fuzz(mutants: int, batch: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    counts = {"mutants": 0, "commands": 0, "signal": 0, "hang": 0, "good_lost": 0,
              "other_exit": 0, "file_reads_stopped": 0}
    slowest = 0.0
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ksptrace-fuzz-") as tmp:
        base = Path(tmp)
        good = originals(base)
        sources = {k: p.read_bytes() for k, p in good.items()}
        kinds = list(sources)
        made = 0
        while made < mutants:
            folder = base / f"batch{made}"
            folder.mkdir()
            files = []
            for i in range(min(batch, mutants - made)):
                kind = kinds[(made + i) % len(kinds)]
                data, _ = mutate(sources[kind], rng)
                f = folder / f"{kind}-{i:03d}.h5"
                f.write_bytes(data)
                files.append(f)
            made += len(files)
            counts["mutants"] = made
            mutated = [str(f) for f in files]
            commands = [
                (["show", *mutated, str(good["solver"])], str(good["solver"])),
                (["analyze", *mutated, str(good["solver"]), "--no-figures", "--quiet",
                  "--no-cache", "--candidates", "norm", "--mc-runs", "1",
                  "--out", str(folder / "report")], "REPORT"),
                (["decide", *mutated, str(good["solver"]), "--out", str(folder / "decide"),
                  "--quiet"], None),
            ]
            commands += [(["reductions", f, str(good["collectives"])], None)
                         for f in mutated[:3]]
            commands += [(["reductions", str(good["solver"]), f], None) for f in mutated[:3]]
            for argv, must_see in commands:
                code, took, out = run(argv)
                counts["commands"] += 1
                slowest = max(slowest, took)
                counts["file_reads_stopped"] += out.count("did not finish within")
                if code is None:
                    counts["hang"] += 1
                    failures.append(f"hang: {' '.join(argv[:2])} in {folder.name}")
                elif code < 0 or code >= 128:
                    counts["signal"] += 1
                    failures.append(f"exit {code}: {' '.join(argv[:2])} in {folder.name}")
                elif code not in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9):
                    counts["other_exit"] += 1
                elif must_see == "REPORT" and not _analysed(folder / "report", good["solver"]):
                    counts["good_lost"] += 1
                    failures.append(f"intact trace not analysed: {argv[0]} in {folder.name}")
                elif must_see not in (None, "REPORT") and must_see not in out:
                    counts["good_lost"] += 1
                    failures.append(f"intact trace not shown: {argv[0]} in {folder.name}")
    return {"counts": counts, "failures": failures[:20], "seed": seed, "batch": batch,
            "slowest_command_seconds": round(slowest, 1),
            "file_read_limit_seconds": PROBE_SECONDS}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "fuzz_read.json"))
    args = ap.parse_args()
    started = time.monotonic()
    result = fuzz(args.mutants, args.batch, args.seed)
    result["seconds"] = round(time.monotonic() - started, 1)
    result["load_average"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    c = result["counts"]
    assert isinstance(c, dict)
    print(f"{c['mutants']} mutants, {c['commands']} commands: {c['signal']} ended by a signal, "
          f"{c['hang']} over {LIMIT:.0f} s, {c['good_lost']} lost an intact trace "
          f"({result['seconds']} s)")
    return 0 if c["signal"] == c["hang"] == c["good_lost"] == c["other_exit"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
