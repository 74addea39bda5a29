"""``ksptrace trace [--out DIR] [--depth N] [--ksp-prefix P] [--with-setup] [--events] -- COMMAND``:
trace the Krylov solves of any unmodified PETSc program (C, C++, Fortran, Python).

The command runs with ksptrace's solve hook preloaded (``LD_PRELOAD``, passed on by
``mpiexec`` or ``srun``); afterwards each KSP's recorded solves become one ordinary trace.
By default the program's outermost solves are recorded: set-up solves (multigrid's
eigenvalue estimates) and nested solves (block Jacobi's and multigrid's sub-solves) are
counted and named, not traced. ``--depth N`` records solves down to depth N;
``--with-setup`` adds the set-up solves one level deeper; ``--ksp-prefix P`` records only the
KSPs with options prefix P (at any depth unless --depth is given). Each rank's wait in MPI
reductions per iteration is recorded as by ``ksptrace run``; ``--events`` adds its time in
MatMult, PCApply and the vector reductions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("trace", allow_abbrev=False, description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="traces", metavar="DIR",
                   help="folder for the traces (default: traces)")
    p.add_argument("--depth", type=int, default=None, metavar="N",
                   help="record solves down to depth N (1: the program's outermost solves, "
                   "the default)")
    p.add_argument("--ksp-prefix", default=None, metavar="P",
                   help="record only the KSPs whose options prefix is P")
    p.add_argument("--with-setup", action="store_true",
                   help="also record the set-up solves (eigenvalue estimates inside PCSetUp)")
    p.add_argument("--events", action="store_true",
                   help="also time MatMult, PCApply and the vector reductions (VecMDot, "
                   "VecNorm, VecDot) per iteration and rank (dataset event_seconds)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="the program to run, with its launcher and arguments")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ksptrace.errors import UsageError
    from ksptrace.harness.hook.session import Selection, nothing_traced, run

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if args.depth is not None and args.depth < 1:
        raise UsageError(f"--depth {args.depth}: depths start at 1 (the program's outermost "
                         "solves)")
    got = run(command, Path(args.out), Selection(args.depth, args.ksp_prefix, args.with_setup,
                                                 args.events))
    if got.returncode != 0:
        print(f"ksptrace: error: the command exited with status {got.returncode}; no trace "
              "written", file=sys.stderr)
        return got.returncode
    assert got.assembled is not None
    for note in (*got.assembled.notes, *got.notes):
        print(f"ksptrace trace: note: {note}", file=sys.stderr)
    for path, (_, trace) in zip(got.paths, got.assembled.traces, strict=True):
        s = trace.solves
        its = [] if s is None else s.iterations.tolist()
        print(f"{path}: {trace.attrs.get('ksp')}/{trace.attrs.get('pc')} on {trace.nprocs} "
              f"ranks, {len(its)} solves of {its[:8]}{' ...' if len(its) > 8 else ''} "
              f"iterations, set-up {float(trace.attrs.get('setup_seconds', 0.0)):.3g} s apart",
              file=sys.stderr)  # the program's own output keeps stdout
    for line in got.assembled.left_out:
        print(f"  left out: {line}", file=sys.stderr)
    if not got.paths:
        print(f"ksptrace trace: {nothing_traced(got, args.ksp_prefix)}", file=sys.stderr)
        return 5
    return 0
