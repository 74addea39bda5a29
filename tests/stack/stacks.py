"""The software stacks the tests run on: Debian's PETSc 3.18 (this interpreter), the PyPI
stack that ``scripts/bootstrap.sh --stack pypi`` builds into the user's cache (issue 34), and
the same PETSc built against MPICH in the MPICH stack's venv (``scripts/bootstrap.sh
--mpich-petsc``, issues 64 and 65).

The cache folder follows scripts/stack_pypi.sh: ``$KSPTRACE_STACK_DIR``, else
``${XDG_CACHE_HOME:-~/.cache}/ksptrace/stack-pypi-<PETSc version>``; the MPICH one
scripts/stack_mpich.sh's ``mpich-<version>/venv`` and ``mpich-<version>/petsc-<PETSc
version>``. A stack counts as built once its last step's stamp matches the pins in
scripts/stack-pypi.txt.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PINS = ROOT / "scripts" / "stack-pypi.txt"
BUILD_COMMAND = "make stack-pypi"
MPICH_BUILD_COMMAND = "make stack-mpich-petsc"
MPICH_MPIEXEC = "/usr/bin/mpiexec.mpich"


@dataclass(frozen=True)
class Stack:
    name: str
    python: str
    env: dict[str, str]
    """Variables that select this stack's PETSc (PETSC_DIR; PETSC_ARCH removed where None)."""
    mpiexec: str = "mpiexec"
    """The launcher of this stack's MPI."""

    def environ(self, base: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env.pop("PETSC_ARCH", None)
        env.update(self.env)
        env["PYTHONPATH"] = str(ROOT)  # this checkout, whatever the venv's editable install says
        return env

    def ksptrace(self, *args: str, env: dict[str, str], timeout: float = 240
                 ) -> subprocess.CompletedProcess[str]:
        """``python -m ksptrace ARGS`` with this stack's python, PETSc and (for ``run`` and
        ``collectives``) launcher, on ``env``."""
        launch = ["--mpiexec", self.mpiexec] if args[:1] in (("run",), ("collectives",)) else []
        return subprocess.run([self.python, "-m", "ksptrace", *args, *launch],
                              env=self.environ(env), capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT, check=False)


def pypi_version() -> str:
    for line in PINS.read_text().splitlines():
        if line.startswith("petsc=="):
            return line.split("==", 1)[1].strip()
    raise RuntimeError(f"{PINS} pins no petsc version")


def pypi_folder(index_bits: int = 32) -> Path:
    suffix = "-int64" if index_bits == 64 else ""
    if os.environ.get("KSPTRACE_STACK_DIR") and index_bits == 32:
        return Path(os.environ["KSPTRACE_STACK_DIR"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "ksptrace" / f"stack-pypi-{pypi_version()}{suffix}"


def debian() -> Stack:
    petsc_dir = os.environ.get("PETSC_DIR") or "/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real"
    return Stack("debian", sys.executable, {"PETSC_DIR": petsc_dir})


def pypi(index_bits: int = 32) -> Stack | str:
    """The PyPI stack (with 64-bit indices: ``KSPTRACE_STACK_INDEX=64 make stack-pypi``), or
    why it cannot be used (not built, or built from other pins)."""
    folder = pypi_folder(index_bits)
    command = BUILD_COMMAND if index_bits == 32 else f"KSPTRACE_STACK_INDEX=64 {BUILD_COMMAND}"
    python = folder / "venv" / "bin" / "python"
    stamp = folder / ".done-ksptrace-xarray"
    if not python.exists() or not stamp.exists():
        return (f"the PyPI stack is not built in {folder}; build it with '{command}' "
                "(about 15 minutes on 2 cores, once)")
    if stamp.read_text() != PINS.read_text():
        return (f"the PyPI stack in {folder} was built from other pins than "
                f"scripts/stack-pypi.txt; rebuild it with '{command}'")
    found = glob.glob(str(folder / "venv" / "lib" / "python3*" / "site-packages" / "petsc"))
    if not found:
        return f"the PyPI stack in {folder} has no petsc package; rebuild it with '{command}'"
    name = "pypi" if index_bits == 32 else "pypi-int64"
    return Stack(name, str(python), {"PETSC_DIR": found[0]})


def mpich_folder() -> Path:
    """The MPICH stack's cache folder (``mpich-<version>``, the newest where several are)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    given = os.environ.get("KSPTRACE_MPICH_DIR")
    if given:
        return Path(given)
    found = sorted(cache.glob("ksptrace/mpich-*/venv/bin/python"))
    return found[-1].parents[2] if found else cache / "ksptrace" / "mpich-<version>"


def mpich_petsc() -> tuple[Stack, Path] | str:
    """PETSc and petsc4py on MPICH (``make stack-mpich-petsc``) and the folder of that PETSc
    version's KSP tutorials; or why they cannot be used (not built, built from other pins)."""
    folder = mpich_folder()
    python = folder / "venv" / "bin" / "python"
    built = folder / f"petsc-{pypi_version()}"
    stamp = built / ".done"
    if not python.exists() or not stamp.exists():
        return (f"PETSc on MPICH is not built in {built}; build it with "
                f"'{MPICH_BUILD_COMMAND}' (about 30 minutes on 2 cores, once)")
    if stamp.read_text() != PINS.read_text():
        return (f"PETSc on MPICH in {built} was built from other pins than "
                f"scripts/stack-pypi.txt; rebuild it with '{MPICH_BUILD_COMMAND}'")
    if not os.access(MPICH_MPIEXEC, os.X_OK):
        return f"{MPICH_MPIEXEC} is missing; rebuild with '{MPICH_BUILD_COMMAND}'"
    found = glob.glob(str(folder / "venv" / "lib" / "python3*" / "site-packages" / "petsc"))
    if not found or not (built / "tutorials" / "ex2.c").is_file():
        return f"PETSc on MPICH in {built} is incomplete; rebuild it with '{MPICH_BUILD_COMMAND}'"
    return Stack("mpich", str(python), {"PETSC_DIR": found[0]}, MPICH_MPIEXEC), built / "tutorials"
