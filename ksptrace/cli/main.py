"""The ``ksptrace`` command: a thin dispatcher over one module per subcommand.

Each subcommand module exposes ``register(subparsers) -> None`` and ``main(args) -> int``.
Errors of the KsptraceError hierarchy become one line on stderr and a non-zero exit code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from ksptrace.cli.leave import finish
from ksptrace.cli.signals import sigterm_as_ctrl_c
from ksptrace.errors import KsptraceError
from ksptrace.version import __version__

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("ksptrace.cli.run", "run one instrumented solve and write its trace"),
    "trace": ("ksptrace.cli.trace",
              "trace the Krylov solves of any unmodified PETSc program (C, Fortran, Python)"),
    "show": ("ksptrace.cli.show", "print a trace's summary"),
    "timeline": ("ksptrace.cli.timeline",
                 "write a trace as a Chrome/Perfetto timeline (JSON): ranks, iterations, waits"),
    "problems": ("ksptrace.cli.problems", "list the problems and their parameters"),
    "demo": ("ksptrace.cli.demo", "run the demo campaign, its table, report and segmentation"),
    "analyze": ("ksptrace.cli.analyze",
                "analyse traces: variability statistics, runtime models, figures, HTML report"),
    "campaign": ("ksptrace.cli.campaign",
                 "plan, run and follow sweeps of runs (local, Slurm, PBS)"),
    "segment": ("ksptrace.cli.segment",
                "detect changes of behaviour over process counts and model each segment"),
    "segment-eval": ("ksptrace.cli.segment_eval",
                     "synthetic accuracy of the segmentation detector (noise and point-count "
                     "tables)"),
    "collectives": ("ksptrace.cli.collectives",
                    "time MPI collectives (and forced algorithms) per rank, message size and "
                    "repetition"),
    "reductions": ("ksptrace.cli.reductions",
                   "share of a solver's iteration mean and spread that its global "
                   "reductions explain (PETSc's counts against an allreduce trace)"),
    "decide": ("ksptrace.cli.decide",
               "decision maps: the fastest method over two numeric axes, as quadtrees and code"),
}
"""Subcommand name -> (module, one-line help). Only the module of the subcommand that runs is
imported: ``ksptrace --help`` and ``--version`` load no numpy, scipy, pandas or matplotlib."""


class _HelpFromTable:
    """The subparsers action as a module sees it: ``add_parser`` takes its help from
    ``SUBCOMMANDS``, so each one-line help is written once."""

    def __init__(self, sub: Any) -> None:
        self.sub = sub

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("help", SUBCOMMANDS[name][1])
        text = kwargs.get("description") or kwargs["help"][:1].upper() + kwargs["help"][1:] + "."
        kwargs["description"] = plain(text)
        parser: argparse.ArgumentParser = self.sub.add_parser(name, **kwargs)
        return parser


def plain(text: str) -> str:
    """A module docstring as terminal text: reStructuredText's ``literals`` and :role:`x`
    become plain words."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``command``'s module is imported and registers its arguments, the other
    subcommands are listed by name and help only."""
    parser = argparse.ArgumentParser(
        prog="ksptrace",
        description="Per-iteration, per-rank timing traces of PETSc Krylov solvers, "
        "and their analysis.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"ksptrace {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (modname, text) in SUBCOMMANDS.items():
        if name == command:
            importlib.import_module(modname).register(_HelpFromTable(sub))
        else:
            sub.add_parser(name, help=text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        # Before numpy loads OpenBLAS: threaded BLAS changes solver timings and rounding.
        os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    command = next((a for a in argv if not a.startswith("-")), None)
    try:
        if command == "run":
            _load_problem(argv)
    except KsptraceError as exc:
        print(f"ksptrace: error: {exc}", file=sys.stderr)
        return exc.exit_code
    parser = build_parser(command if command in SUBCOMMANDS else None)
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "accepts_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    try:
        with sigterm_as_ctrl_c():
            code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        # The reader went away (``ksptrace show ... | head``): stop quietly, as a shell tool.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141  # 128 + SIGPIPE
    except KsptraceError as exc:
        print(f"ksptrace: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ksptrace: interrupted", file=sys.stderr)
        return 130


def _load_problem(argv: list[str]) -> None:
    """Load the problem ``--problem`` names before the parser is built, so that a user
    problem's own parameters become flags of ``ksptrace run``."""
    from ksptrace.problems import registry

    name = None
    for i, arg in enumerate(argv):
        if arg == "--problem" and i + 1 < len(argv):
            name = argv[i + 1]
        elif arg.startswith("--problem="):
            name = arg.split("=", 1)[1]
    if name is not None:
        registry.get(name)


def entry() -> None:
    finish(main)
