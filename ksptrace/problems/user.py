"""Problems that live outside ksptrace: ``module:function`` names and installed entry points.

A user problem is found by name, the same way on the command line, in a campaign file and in
the solver processes:

- ``package.module:build`` imports ``package.module`` and takes ``build``, a function
  ``build(comm, n, options) -> ProblemInstance``, or a :class:`ProblemInfo` declaration;
- a plain name not built in is looked up in the entry point group ``ksptrace.problems``, whose
  entries name the same two kinds of object.

A function's parameters are its ``params`` attribute, or else the module's ``PARAMS``; its help
is the first line of its docstring, or else of the module's. The module is imported before
PETSc starts (ksptrace passes PETSc its options first), so it must not start PETSc or MPI itself
when imported: ``from petsc4py import PETSc`` goes inside ``build``. This module is pure.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import re
import sys
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ksptrace.errors import UsageError
from ksptrace.params import Param

if TYPE_CHECKING:
    from ksptrace.problems.info import ProblemInfo

ENTRY_POINT_GROUP = "ksptrace.problems"
SPEC = re.compile(r"(?P<module>[A-Za-z_][\w.]*):(?P<attr>[A-Za-z_]\w*)")
PARAM_TYPES = (int, float, str, bool)

RESERVED: frozenset[str] = frozenset({
    # ksptrace run's own flags and the campaign keys that are not run parameters
    "problem", "n", "ksp", "pc", "iterations", "restart", "warmup", "hdf5_path", "noise",
    "allow_unused_options", "nprocs", "np", "out", "overwrite", "tag", "mpiexec", "help",
    "version", "repetitions",
    # trace attributes every run writes
    "n_global", "nnz", "ksp_requested", "petsc_options", "petsc_options_unused",
    "problem_config", "iterations_done", "petsc_iterations", "monitor_calls", "monitor",
    "reductions_blocking", "reductions_split", "ksp_solves",
    "converged_reason", "solve_max", "solve_min", "solve_mean", "solution_error", "solve",
    "n_nodes", "ranks_per_node", "cpu_count", "oversubscribed", "launcher", "launcher_flags",
    "start_utc", "command_line", "argv", "run_id", "campaign", "campaign_hash",
    "schema_version",
})
"""Names a user problem's parameter may not take: a built-in flag or trace attribute."""


def is_spec(name: str) -> bool:
    """Whether ``name`` is written as ``module:attribute``."""
    return ":" in name


def entry_point_names() -> list[str]:
    return sorted({ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)})


def from_spec(spec: str) -> ProblemInfo:
    """The declaration of the problem ``module:attribute``; UsageError naming what is wrong."""
    match = SPEC.fullmatch(spec.strip())
    if match is None:
        raise UsageError(
            f"problem '{spec}' is not of the form package.module:function; write e.g. "
            "--problem mypackage.poisson:build"
        )
    module = _import(spec, match["module"])
    if not hasattr(module, match["attr"]):
        raise UsageError(
            f"problem '{spec}': module '{match['module']}' has no attribute '{match['attr']}'; "
            "name the function that builds the problem"
        )
    return declaration(spec, module, match["attr"])


def from_entry_point(name: str) -> ProblemInfo | None:
    """The problem an installed package declares under ``name`` in ``ksptrace.problems``."""
    found = [ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
             if ep.name == name]
    if not found:
        return None
    ep = found[0]
    module = _import(f"{name} (entry point {ep.value})", ep.module)
    attr = ep.attr
    if not attr or not hasattr(module, attr):
        raise UsageError(
            f"problem '{name}': entry point {ep.value} names no attribute of module "
            f"'{ep.module}'; fix the package's [project.entry-points.\"{ENTRY_POINT_GROUP}\"]"
        )
    return declaration(name, module, attr)


STARTERS = {"petsc4py.PETSc": ("PETSc", "from petsc4py import PETSc"),
            "mpi4py.MPI": ("MPI", "from mpi4py import MPI")}
"""Modules whose import starts PETSc or MPI: a problem module must not import them at its top,
or ksptrace could give PETSc no options, and mpiexec could not start from that process."""


def _import(what: str, modname: str) -> ModuleType:
    before = {name for name in STARTERS if name in sys.modules}
    try:
        module = importlib.import_module(modname)
    except Exception as exc:  # any failure of foreign code is a bad problem name
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise UsageError(
            f"problem '{what}': module '{modname}' does not import ({type(exc).__name__}: "
            f"{reason}); check the name and that its folder is on PYTHONPATH"
        ) from None
    for name, (started, line) in STARTERS.items():
        if name not in before and name in sys.modules:
            raise UsageError(
                f"problem '{what}': importing module '{modname}' starts {started}, before "
                f"ksptrace can give PETSc its options; move '{line}' into the build function "
                "(see docs/own-solver.md)"
            )
    return module


def declaration(name: str, module: ModuleType, attr: str) -> ProblemInfo:
    """The checked ProblemInfo of ``module.attr`` (a ProblemInfo, or a build function)."""
    from ksptrace.problems.info import ProblemInfo

    target = getattr(module, attr)
    if isinstance(target, ProblemInfo):
        info = dataclasses.replace(target, name=name)
    elif callable(target):
        params = getattr(target, "params", None)
        if params is None:
            params = getattr(module, "PARAMS", ())
        doc = (target.__doc__ or module.__doc__ or "").strip()
        info = ProblemInfo(
            name=name, help=doc.splitlines()[0] if doc else f"user problem {name}",
            module=module.__name__, function=attr, params=_params(name, params),
        )
    else:
        raise UsageError(
            f"problem '{name}': {module.__name__}.{attr} is a {type(target).__name__}, not a "
            "build function or a ProblemInfo; name the function that builds the problem"
        )
    _check_params(name, info.params)
    return info


def _params(name: str, params: Any) -> tuple[Param, ...]:
    if isinstance(params, Param):
        params = (params,)
    if not isinstance(params, Iterable) or isinstance(params, str | bytes):
        raise UsageError(
            f"problem '{name}': its params are a {type(params).__name__}; declare a tuple of "
            "ksptrace.params.Param"
        )
    return tuple(params)


def _check_params(name: str, params: tuple[Param, ...]) -> None:
    seen: set[str] = set()
    for p in params:
        if not isinstance(p, Param):
            raise UsageError(
                f"problem '{name}': parameter {p!r} is not a ksptrace.params.Param; declare "
                "each as Param(name, type, default, help)"
            )
        if p.name in RESERVED:
            raise UsageError(
                f"problem '{name}': parameter '{p.name}' clashes with ksptrace's own "
                f"{p.flag} (a built-in flag or trace attribute); rename it"
            )
        if not re.fullmatch(r"[a-z][a-z0-9_]*", p.name):
            raise UsageError(
                f"problem '{name}': parameter name '{p.name}' must be snake_case (lower-case "
                "letters, digits, _); rename it"
            )
        if p.type not in PARAM_TYPES:
            raise UsageError(
                f"problem '{name}': parameter '{p.name}' has type {p.type!r}; use int, float, "
                "str or bool"
            )
        if p.name in seen:
            raise UsageError(f"problem '{name}': parameter '{p.name}' is declared twice")
        seen.add(p.name)
