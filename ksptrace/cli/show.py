"""``ksptrace show TRACE``: a trace's summary."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ksptrace.cli.display import display_line
from ksptrace.errors import TraceError

HEADLINE = ("problem", "n_global", "nnz", "ksp", "pc", "restart", "iterations_done",
            "converged_reason", "nprocs", "n_nodes", "ranks_per_node", "oversubscribed",
            "start_utc", "petsc_version", "mpi_library", "launcher", "launcher_flags",
            "command_line", "petsc_options", "hdf5_path")


HARNESS_ATTRS = frozenset((
    "schema_version", "n", "ksp_requested", "iterations", "warmup", "problem_config", "argv",
    "cpu_count", "monitor_calls", "solution_error", "solve_max", "solve_min", "solve_mean",
    "petsc4py_version", "mpi4py_version", "mpi_standard", "h5py_version", "numpy_version",
    "python_version", "ksptrace_version", "openblas_num_threads", "omp_num_threads",
    "wait_entry_points", "events",
))
"""Attributes every trace has that the summary leaves out (``--all`` prints them).
Attributes outside this set and the headline are the problem's own and are always printed."""


def register(sub: Any) -> None:
    p = sub.add_parser("show", allow_abbrev=False)
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace file(s)")
    p.add_argument("--all", action="store_true", help="print every attribute")
    p.set_defaults(func=main)


COLLECTIVE_HEADLINE = ("operation", "algorithm", "algorithm_name", "segment_bytes",
                       "algorithm_held", "algorithm_ran", "segment_phases", "algorithm_note",
                       "repetitions",
                       "warmup", "nprocs",
                       "oversubscribed", "start_utc", "mpi_library", "launcher",
                       "launcher_flags", "command_line")


def show_collectives(path: str, every: bool) -> None:
    """A collectives trace: its headline attributes and the median call time per size."""
    import numpy as np

    from ksptrace.trace import collectives

    t = collectives.read(path)
    print(f"{path}  (collectives, schema {t.attrs.get('schema_version')})")
    keys = sorted(t.attrs) if every else [k for k in COLLECTIVE_HEADLINE if k in t.attrs]
    width = max(len(k) for k in keys)
    for key in keys:
        print(f"  {key:<{width}}  {t.attrs[key]}")
    calls = t.call_seconds()
    print(f"  {'bytes':>10}  {'median us':>10}  {'min us':>10}  (slowest rank per call)")
    for m, row in zip(t.message_bytes, calls, strict=True):
        print(f"  {int(m):>10}  {np.median(row) * 1e6:>10.2f}  {row.min() * 1e6:>10.2f}")


def main(args: argparse.Namespace) -> int:
    from ksptrace.trace.frame import summary_row  # pandas, h5py: not for --help
    from ksptrace.trace.read import iter_traces

    """Print each trace's summary; a bad trace is named on stderr and the others still shown."""
    from ksptrace.trace.collectives import is_collectives

    bad = 0
    shown = 0
    solver_paths = []
    for path in args.traces:
        if not is_collectives(path):
            solver_paths.append(path)
            continue
        if shown:
            print()
        try:
            show_collectives(path, args.all)
            shown += 1
        except TraceError as exc:
            print(f"ksptrace: error: {exc}", file=sys.stderr)
            bad += 1
    for item in iter_traces(solver_paths):
        if isinstance(item, TraceError):
            print(f"ksptrace: error: {item}", file=sys.stderr)
            bad += 1
            continue
        trace = item
        if shown:
            print()
        shown += 1
        print(f"{trace.path}  (schema {trace.attrs.get('schema_version')})")
        keys = sorted(trace.attrs) if args.all else [
            *[k for k in HEADLINE if k in trace.attrs],
            *sorted(k for k in trace.attrs if k not in HARNESS_ATTRS and k not in HEADLINE),
        ]
        summary = summary_row(trace)
        width = max(len(k) for k in [*keys, *summary])
        for key in keys:
            print(display_line(key, trace.attrs[key], trace.attrs, width))
        for key, value in summary.items():
            if key in keys:
                continue
            print(display_line(key, value, trace.attrs, width))
        if trace.solves is not None:
            _show_solves(trace)
    return TraceError.exit_code if bad else 0


def _show_solves(trace: Any) -> None:
    """One line per solve of a trace of several (``ksptrace.record``)."""
    s = trace.solves
    print(f"  {s.count} solves:  {'solve':>5} {'iterations':>10} {'KSPSolve max':>13}  reason")
    for i in range(s.count):
        print(f"  {'':{len(str(s.count)) + 8}} {i:>5} {int(s.iterations[i]):>10} "
              f"{float(s.seconds[:, i].max()):>13.6g}  {s.reasons[i]}")
