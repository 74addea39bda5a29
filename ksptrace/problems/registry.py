"""The registry of problems. Pure: it names modules, it does not import PETSc.

Built-in problems are declared in petsc-free ``*_info`` modules. A name that is not built in is
a user problem (``package.module:function``, or an entry point of group ``ksptrace.problems``),
loaded by :mod:`ksptrace.problems.user` on first use and registered under that name.
"""

from __future__ import annotations

import contextlib
import importlib

from ksptrace.errors import UsageError
from ksptrace.params import Param
from ksptrace.problems import user
from ksptrace.problems.info import ProblemInfo

__all__ = ["PROBLEMS", "ProblemInfo", "all_params", "get", "names", "register"]

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


def registered() -> list[ProblemInfo]:
    """The built-in problems and those already named (an installed entry point is loaded only
    when it is asked for by name: a broken one must not break ``--help``)."""
    _load_builtin()
    return list(PROBLEMS.values())


def all_params() -> list[Param]:
    """Every problem-specific parameter of every registered problem, each name once (user
    problems are registered once named, by :func:`get`)."""
    _load_builtin()
    seen: dict[str, Param] = {}
    for info in PROBLEMS.values():
        for p in info.params:
            seen.setdefault(p.name, p)
    return list(seen.values())


BUILTIN = {
    "laplace1d": "ksptrace.problems.laplace1d_info:INFO",
    "iceflow": "ksptrace.problems.iceflow_info:INFO",
}
"""Built-in problems, named as entry points name theirs (``module:attribute``): the registry
imports none of its registrants; it loads each declaration by name on first use."""


def _load_builtin() -> None:
    for name, target in BUILTIN.items():
        if name in PROBLEMS:
            continue
        modname, _, attr = target.partition(":")
        with contextlib.suppress(ModuleNotFoundError):
            register(getattr(importlib.import_module(modname), attr))
