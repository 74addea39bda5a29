"""The registry of problems. Pure: it names modules, it does not import PETSc."""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ksptrace.errors import UsageError
from ksptrace.params import Param

if TYPE_CHECKING:
    from ksptrace.problems.base import ProblemBuilder


@dataclass(frozen=True)
class ProblemInfo:
    name: str
    help: str
    module: str
    """Module with a ``build(comm, n, options) -> ProblemInstance`` function (imports PETSc)."""
    params: tuple[Param, ...] = ()
    """Problem-specific parameters; they become CLI flags and trace attributes."""

    def builder(self) -> ProblemBuilder:
        mod = importlib.import_module(self.module)
        builder: ProblemBuilder = mod.build
        return builder


PROBLEMS: dict[str, ProblemInfo] = {}


def register(info: ProblemInfo) -> ProblemInfo:
    PROBLEMS[info.name] = info
    return info


def get(name: str) -> ProblemInfo:
    _load_builtin()
    try:
        return PROBLEMS[name]
    except KeyError:
        valid = ", ".join(sorted(PROBLEMS))
        raise UsageError(f"unknown problem '{name}'; valid problems: {valid}") from None


def names() -> list[str]:
    _load_builtin()
    return sorted(PROBLEMS)


def all_params() -> list[Param]:
    """Every problem-specific parameter of every problem, each name once."""
    _load_builtin()
    seen: dict[str, Param] = {}
    for info in PROBLEMS.values():
        for p in info.params:
            seen.setdefault(p.name, p)
    return list(seen.values())


def _load_builtin() -> None:
    # Declarations live in petsc-free modules; importing them registers the problems.
    importlib.import_module("ksptrace.problems.laplace1d_info")
    with contextlib.suppress(ModuleNotFoundError):
        importlib.import_module("ksptrace.problems.iceflow_info")
