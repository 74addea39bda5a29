"""PETSc's own tutorials, built unmodified from Debian's examples package in a temporary folder
(never in the clone): the programs ``ksptrace trace`` is tested and benchmarked on."""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
from pathlib import Path

EXAMPLES = Path("/usr/share/petsc/3.18/share/petsc/examples/src")
SOURCES = {
    "ex2": "ksp/ksp/tutorials/ex2.c",
    "ex45": "ksp/ksp/tutorials/ex45.c",
    "ex56": "ksp/ksp/tutorials/ex56.c",
    "ex19": "snes/tutorials/ex19.c",
    "ex2f": "ksp/ksp/tutorials/ex2f.F90",
}
PACKAGES = "libpetsc3.18-dev-examples libpetsc-real3.18-dev gfortran"
MONITOR_LINE = re.compile(r"^\s*(\d+) KSP Residual norm\s+(\S+)\s*$", re.MULTILINE)


def petsc_dir() -> Path | None:
    """Debian's real PETSc 3.18 with its headers (libpetsc-real3.18-dev), or None."""
    for found in sorted(glob.glob("/usr/lib/petscdir/petsc3.18/*-real"), reverse=True):
        if (Path(found) / "include" / "petsc.h").is_file():
            return Path(found)
    return None


def missing() -> str | None:
    """Why the tutorials cannot be built here, or None."""
    if petsc_dir() is None or not all((EXAMPLES / s).is_file() for s in SOURCES.values()):
        return (f"PETSc's tutorials or headers are not installed: apt-get install {PACKAGES} "
                "(scripts/bootstrap.sh --test does)")
    if shutil.which("mpicc") is None or shutil.which("mpif90") is None:
        return "mpicc or mpif90 missing: apt-get install libopenmpi-dev gfortran"
    return None


def build(name: str, folder: Path) -> Path:
    """The tutorial ``name`` compiled in ``folder`` (as PETSc's makefiles would, with the
    Fortran compiler's free-form line length lifted as PETSc's FC_FLAGS do)."""
    pdir = petsc_dir()
    assert pdir is not None
    source = EXAMPLES / SOURCES[name]
    fortran = source.suffix == ".F90"
    cmd = ["mpif90", "-ffree-line-length-none", "-cpp"] if fortran else ["mpicc"]
    out = folder / name
    subprocess.run([*cmd, "-O1", f"-I{pdir}/include", str(source), "-o", str(out),
                    f"-L{pdir}/lib", "-lpetsc_real", "-lm", f"-Wl,-rpath,{pdir}/lib"],
                   check=True, capture_output=True, text=True, timeout=300, cwd=folder)
    return out


def monitor_solves(stdout: str) -> list[list[float]]:
    """The residual norms ``-ksp_monitor`` printed, one list per solve (its count restarts)."""
    solves: list[list[float]] = []
    for number, norm in MONITOR_LINE.findall(stdout):
        if int(number) == 0 or not solves:
            solves.append([])
        solves[-1].append(float(norm))
    return solves


LOG_EVENT = re.compile(r"^(\w+)\s+(\d+)\s+[\d.]+\s+([\d.]+e[+-]\d+)\s", re.MULTILINE)


STAGE = re.compile(r"^--- Event Stage \d+: (.*)$", re.MULTILINE)


def log_view(stdout: str) -> dict[str, dict[str, tuple[int, float]]]:
    """``-log_view``'s event table: per stage (by name), each event's count and the slowest
    rank's seconds."""
    stages: dict[str, dict[str, tuple[int, float]]] = {}
    parts = STAGE.split(stdout)
    for name, text in zip(parts[1::2], parts[2::2], strict=True):
        if name in stages:
            break  # the object table repeats the stages
        stages[name] = {e: (int(c), float(s)) for e, c, s in LOG_EVENT.findall(text)}
    return stages


def setup_seconds(stage: dict[str, tuple[int, float]]) -> float:
    """The set-up ``-log_view`` timed in one stage: its KSPSetUp and PCSetUp events (PETSc
    logs PCSetUp outside KSPSetUp's event, and neither inside itself twice)."""
    return sum(stage.get(e, (0, 0.0))[1] for e in ("KSPSetUp", "PCSetUp"))
