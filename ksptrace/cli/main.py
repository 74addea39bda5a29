"""The ``ksptrace`` command: a thin dispatcher over one module per subcommand.

Each subcommand module exposes ``register(subparsers) -> None`` and ``main(args) -> int``.
Errors of the KsptraceError hierarchy become one line on stderr and a non-zero exit code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from ksptrace import __version__
from ksptrace.errors import KsptraceError

SUBCOMMANDS: dict[str, str] = {
    "run": "ksptrace.cli.run",
    "show": "ksptrace.cli.show",
    "problems": "ksptrace.cli.problems",
    "demo": "ksptrace.cli.demo",
    "analyze": "ksptrace.cli.analyze",
    "campaign": "ksptrace.cli.campaign",
    "segment": "ksptrace.cli.segment",
    "segment-eval": "ksptrace.cli.segment_eval",
    "decide": "ksptrace.cli.decide",
}
"""Subcommand name -> module. A module that does not exist yet is left out of the parser."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ksptrace",
        description="Per-iteration, per-rank timing traces of PETSc Krylov solvers, "
        "and their analysis.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"ksptrace {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for _name, modname in SUBCOMMANDS.items():
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as exc:
            if exc.name == modname:
                continue
            raise
        mod.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        # Before numpy loads OpenBLAS: threaded BLAS changes solver timings and rounding.
        os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "accepts_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    try:
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


def entry() -> None:
    sys.exit(main())
