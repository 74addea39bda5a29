"""Finding and starting petsc4py, and the environment solver processes need.

Debian's petsc4py is found only when PETSC_DIR names its PETSc (there is no alternatives link),
so we look in the usual places before giving up with a message that says what to install.
"""

from __future__ import annotations

import glob
import os
import sys
from types import ModuleType

from ksptrace.errors import EnvironmentProblem

SOLVER_ENV: dict[str, str] = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
"""Forced for every solver process: threaded BLAS changes timings and even rounding."""

DEBIAN_PETSC_GLOB = "/usr/lib/petscdir/petsc3.*/x86_64-linux-gnu-real"


def force_solver_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """Set the single-thread variables in ``env`` (default: this process's environment)."""
    target = os.environ if env is None else env
    target.update(SOLVER_ENV)
    return dict(target)


def petsc_dir_candidates() -> list[str]:
    found = []
    if os.environ.get("PETSC_DIR"):
        found.append(os.environ["PETSC_DIR"])
    found.extend(sorted(glob.glob(DEBIAN_PETSC_GLOB), reverse=True))
    return found


def locate_petsc4py(env: dict[str, str] | None = None) -> None:
    """Make ``import petsc4py`` work in this process, and set PETSC_DIR in ``env`` for children."""
    target = os.environ if env is None else env
    try:
        import petsc4py  # noqa: F401
    except ImportError:
        pass
    else:
        return
    for petsc_dir in petsc_dir_candidates():
        site = os.path.join(petsc_dir, "lib", "python3", "dist-packages")
        if os.path.isdir(os.path.join(site, "petsc4py")):
            if site not in sys.path:
                sys.path.append(site)
            target.setdefault("PETSC_DIR", petsc_dir)
            os.environ.setdefault("PETSC_DIR", petsc_dir)
            return
    raise EnvironmentProblem(
        "petsc4py is not importable; on Debian run 'make setup' (apt-get install python3-petsc4py "
        "python3-mpi4py python3-h5py-mpi openmpi-bin), elsewhere set PETSC_DIR or "
        "'pip install petsc petsc4py' (see README)"
    )


def init_petsc(argv: list[str]) -> ModuleType:
    """Initialise petsc4py with the given PETSc options and return the PETSc module."""
    locate_petsc4py()
    import petsc4py

    petsc4py.init([sys.argv[0], *argv])
    from petsc4py import PETSc

    return PETSc
