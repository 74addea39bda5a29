"""The registry of problems. Pure: it names modules, it does not import PETSc.

Built-in problems are declared in petsc-free ``*_info`` modules. A name that is not built in is
a user problem (``package.module:function``, or an entry point of group ``ksptrace.problems``),
loaded by :mod:`ksptrace.problems.user` on first use and registered under that name.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ksptrace.errors import UsageError
from ksptrace.params import Param
from ksptrace.problems import user

if TYPE_CHECKING:
    from ksptrace.problems.base import ProblemBuilder, ProblemInstance


@dataclass(frozen=True)
class ProblemInfo:
    name: str
    help: str
    module: str
    """Module with a ``build(comm, n, options) -> ProblemInstance`` function (imports PETSc)."""
    params: tuple[Param, ...] = ()
    """Problem-specific parameters; they become CLI flags and trace attributes."""
    function: str = "build"
    """The name of the build function in :attr:`module`."""

    def builder(self) -> ProblemBuilder:
        mod = importlib.import_module(self.module)
        try:
            builder: ProblemBuilder = getattr(mod, self.function)
        except AttributeError:
            raise UsageError(
                f"problem '{self.name}': module '{self.module}' has no function "
                f"'{self.function}'; name the function that builds the problem"
            ) from None
        return builder

    def build(self, comm: Any, n: int, options: Mapping[str, Any]) -> ProblemInstance:
        """Build the problem; a build function that returns no ProblemInstance is refused."""
        from ksptrace.problems.base import ProblemInstance

        instance = self.builder()(comm, n, options)
        if not isinstance(instance, ProblemInstance):
            raise UsageError(
                f"problem '{self.name}': {self.module}.{self.function}() returned "
                f"{type(instance).__name__!r}, not a ksptrace.problems.base.ProblemInstance; "
                "return an instance of a ProblemInstance subclass"
            )
        return instance


PROBLEMS: dict[str, ProblemInfo] = {}


def register(info: ProblemInfo) -> ProblemInfo:
    PROBLEMS[info.name] = info
    return info


def get(name: str) -> ProblemInfo:
    """The problem called ``name``: built in, ``module:function``, or an entry point."""
    _load_builtin()
    if name in PROBLEMS:
        return PROBLEMS[name]
    found = user.from_spec(name) if user.is_spec(name) else user.from_entry_point(name)
    if found is None:
        valid = ", ".join(names())
        raise UsageError(
            f"unknown problem '{name}'; valid problems: {valid}, or your own as "
            "package.module:function"
        )
    return register(found)


def names() -> list[str]:
    """Built-in and loaded problems, and those installed packages declare (not loaded)."""
    _load_builtin()
    return sorted({*PROBLEMS, *user.entry_point_names()})


def all_params() -> list[Param]:
    """Every problem-specific parameter of every registered problem, each name once (user
    problems are registered once named, by :func:`get`)."""
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
