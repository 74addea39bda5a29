"""PETSc's KSP and PC type names, so that a campaign is checked where PETSc is not installed.

The two tables below are those of PETSc 3.18 (Debian bookworm's petsc4py 3.18.5). They were
generated, not typed: ``PETSC_DIR=/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real
python -m ksptrace.harness.petsc.petsc_types`` prints them from the installed petsc4py
(``PETSc.KSP.Type`` and ``PETSc.PC.Type``); paste its output here when moving to another PETSc.
A test checks that they still equal petsc4py's when petsc4py 3.18 is importable.

A newer PETSc may know more types, so :func:`current` prefers the installed petsc4py's lists
and falls back to these. It asks petsc4py in a child process, because importing
``petsc4py.PETSc`` initialises MPI, which a login node or a plain ``campaign plan`` must not do.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass

from ksptrace.errors import EnvironmentProblem
from ksptrace.harness.petsc.petscenv import force_solver_env, locate_petsc4py

GENERATED_FOR = (3, 18)
"""The PETSc major and minor version the built-in tables come from."""

KSP_TYPES: frozenset[str] = frozenset({
    "bcgs", "bcgsl", "bicg", "cg", "cgls", "cgne", "cgs", "chebyshev", "cr", "dgmres", "fbcgs",
    "fbcgsr", "fcg", "fetidp", "fgmres", "gcr", "gltr", "gmres", "groppcg", "hpddm", "ibcgs",
    "lcd", "lgmres", "lsqr", "minres", "nash", "none", "pgmres", "pipebcgs", "pipecg",
    "pipecg2", "pipecgrr", "pipecr", "pipefcg", "pipefgmres", "pipegcr", "pipelcg", "pipeprcg",
    "preonly", "python", "qcg", "qmrcgs", "richardson", "stcg", "symmlq", "tcqmr", "tfqmr",
    "tsirm"
})
PC_TYPES: frozenset[str] = frozenset({
    "asm", "bddc", "bfbt", "bjacobi", "cholesky", "chowiluviennacl", "composite", "cp",
    "deflation", "eisenstat", "exotic", "fieldsplit", "galerkin", "gamg", "gasm", "h2opus",
    "hmg", "hpddm", "hypre", "icc", "ilu", "jacobi", "kaczmarz", "ksp", "lmvm", "lsc", "lu",
    "mat", "mg", "ml", "nn", "none", "parms", "patch", "pbjacobi", "pfmg", "python", "qr",
    "redistribute", "redundant", "rowscalingviennacl", "saviennacl", "shell", "sor", "spai",
    "svd", "syspfmg", "telescope", "tfs", "vpbjacobi"
})

SOURCE_ENV = "KSPTRACE_PETSC_TYPES"
"""Set to ``builtin`` to skip asking the installed petsc4py (offline checks, fast tests)."""
QUERY_TIMEOUT = 30.0
"""Seconds the child that asks petsc4py may take (it starts PETSc and MPI: about 1 s)."""

_QUERY = """
import json
from petsc4py import PETSc
def names(cls):
    return sorted({v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, str)})
print(json.dumps({"version": list(PETSc.Sys.getVersion()), "ksp": names(PETSc.KSP.Type),
                  "pc": names(PETSc.PC.Type)}))
"""


@dataclass(frozen=True)
class PetscTypes:
    """The KSP and PC type names a campaign is checked against, and where they come from."""

    source: str
    """E.g. ``PETSc 3.18 (ksptrace's built-in list)`` or ``PETSc 3.21.0 (installed petsc4py)``."""
    ksp: frozenset[str]
    pc: frozenset[str]


BUILTIN = PetscTypes(
    f"PETSc {GENERATED_FOR[0]}.{GENERATED_FOR[1]} (ksptrace's built-in list)", KSP_TYPES, PC_TYPES)


def parse_query(stdout: str) -> PetscTypes | None:
    """The lists printed by the child, or None when its output is not what it should be."""
    try:
        doc = json.loads(stdout.strip().splitlines()[-1])
        version = ".".join(str(int(v)) for v in doc["version"])
        ksp = frozenset(str(n) for n in doc["ksp"])
        pc = frozenset(str(n) for n in doc["pc"])
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    if not ksp or not pc:
        return None
    return PetscTypes(f"PETSc {version} (installed petsc4py)", ksp, pc)


@functools.cache
def installed() -> PetscTypes | None:
    """The installed petsc4py's lists, or None when petsc4py cannot be found or started."""
    env = dict(os.environ)
    try:
        locate_petsc4py(env)
    except EnvironmentProblem:
        return None
    force_solver_env(env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    try:
        proc = subprocess.run([sys.executable, "-c", _QUERY], env=env, capture_output=True,
                              text=True, timeout=QUERY_TIMEOUT, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_query(proc.stdout) if proc.returncode == 0 else None


def current() -> PetscTypes:
    """The installed petsc4py's lists when it answers, else the built-in PETSc 3.18 lists."""
    if os.environ.get(SOURCE_ENV, "").strip().lower() == "builtin":
        return BUILTIN
    return installed() or BUILTIN


def _table(name: str, values: list[str]) -> str:
    body = ", ".join(f'"{v}"' for v in values)
    lines = textwrap.fill(body, 96, initial_indent="    ", subsequent_indent="    ")
    return f"{name}: frozenset[str] = frozenset({{\n{lines}\n}})"


def main() -> int:
    """Print the two tables of this module from the petsc4py this Python can find."""
    types = installed()
    if types is None:
        print("ksptrace: error: petsc4py cannot be imported or started; set PETSC_DIR to the "
              "PETSc whose type names you want", file=sys.stderr)
        return 3
    print(f"# {types.source}")
    print(_table("KSP_TYPES", sorted(types.ksp)))
    print(_table("PC_TYPES", sorted(types.pc)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
