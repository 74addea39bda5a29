"""``ksptrace reductions``: the share of a solver's iteration time its global reductions explain."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ksptrace.errors import UsageError
from ksptrace.inputs import read_bounded

LOG_VIEW_BYTES = 64 << 20
"""A -log_view output is kilobytes; a larger file is not one."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "reductions",
        description="For a solver trace and a collectives trace (allreduce) at the same P on "
        "the same machine: the share of the mean and of the variance of an iteration that the "
        "global reductions explain, as PETSc counted them (the trace's counts, or -log_view).",
        allow_abbrev=False)
    p.add_argument("solver", help="solver trace (ksptrace run)")
    p.add_argument("collectives", help="collectives trace of allreduce (or iallreduce)")
    p.add_argument("--log-view", default=None,
                   help="the solve's -log_view output file (default: the counts the trace "
                        "holds; traces of ksptrace run hold them)")
    p.add_argument("--bytes", type=int, default=8,
                   help="message size of the solver's reductions (default 8: one double)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    import numpy as np  # not for --help

    from ksptrace.studies.collectives.reductions import (
        count_from_attrs,
        count_reductions,
        reduction_share,
    )
    from ksptrace.trace import collectives
    from ksptrace.trace.io import read_trace

    solver = read_trace(args.solver)
    coll = collectives.read(args.collectives)
    if coll.operation not in ("allreduce", "iallreduce", "iallreduce_overlap"):
        raise UsageError(f"{args.collectives} times {coll.operation}; give an allreduce, "
                         "iallreduce or iallreduce_overlap trace")
    if coll.nprocs != solver.nprocs:
        raise UsageError(f"the solver ran on P={solver.nprocs} and the allreduce on "
                         f"P={coll.nprocs}; measure the allreduce at the same P")
    sizes = list(coll.message_bytes)
    if args.bytes not in sizes:
        raise UsageError(f"{args.collectives} has no {args.bytes}-byte size; it has "
                         f"{', '.join(map(str, sizes))}")
    if args.log_view is None:
        counted = count_from_attrs(solver.attrs)
    else:
        text = read_bounded(args.log_view, LOG_VIEW_BYTES, "--log-view").decode(errors="replace")
        iterations = int(solver.attrs.get("petsc_iterations", solver.iterations) or
                         solver.iterations)
        solves = solver.solves.count if solver.solves is not None else 1
        counted = count_reductions(text, iterations, solves, bool(solver.attrs.get("warmup")))
    per = counted.per_iteration
    print(counted.describe())
    j = sizes.index(args.bytes)
    calls = coll.call_seconds()[j]
    if coll.compute_seconds is not None:  # overlapped: only what the compute did not hide
        calls = np.maximum(coll.seconds[:, j] - coll.compute_seconds[:, j], 0.0).max(axis=0)
        print(f"{args.collectives}: overlapped with {coll.attrs.get('compute_seconds_target')} s "
              "of compute; counting each reduction's exposed time (overlapped - compute)")
    share = reduction_share(solver.iteration_seconds, calls, per,
                            str(solver.attrs.get("ksp", "")))
    if set(solver.hostnames) != set(coll.hostnames):
        print("ksptrace: warning: the two traces come from different hosts; the shares "
              "compare different machines", file=sys.stderr)
    print(f"{solver.attrs.get('ksp')} P={solver.nprocs}: {share.describe()}")
    print(f"mean_share={share.mean_share:.4f} spread_share={share.spread_share:.4f} "
          f"reductions_per_iteration={share.reductions_per_iteration:.3f} "
          f"iteration_median_us={float(np.median(solver.iteration_seconds.max(axis=0))) * 1e6:.2f}")
    return 0
