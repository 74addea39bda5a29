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


LOG_EVENT = re.compile(r"^(\w+)\s+(\d+)\s+[\d.]+\s+([\d.]+e[+-]\d+)\s+([\d.]+)\s",
                       re.MULTILINE)
STAGE = re.compile(r"^--- Event Stage \d+: (.*)$", re.MULTILINE)
SETUP_EVENTS = ("KSPSetUp", "PCSetUp")
"""PETSc logs PCSetUp outside KSPSetUp's event, and neither inside itself twice."""


def log_view(stdout: str) -> dict[str, dict[str, tuple[int, float, float]]]:
    """``-log_view``'s event table: per stage (by name), each event's count and the slowest
    and the fastest rank's seconds (its maximum, and the maximum over its max/min ratio)."""
    stages: dict[str, dict[str, tuple[int, float, float]]] = {}
    parts = STAGE.split(stdout)
    for name, text in zip(parts[1::2], parts[2::2], strict=True):
        if name in stages:
            break  # the object table repeats the stages
        stages[name] = {e: (int(c), float(s), float(s) / max(float(r), 1.0))
                        for e, c, s, r in LOG_EVENT.findall(text)}
    return stages


def setup_bounds(stage: dict[str, tuple[int, float, float]]) -> tuple[float, float]:
    """What -log_view says of the slowest rank's set-up (KSPSetUp + PCSetUp) in one stage: at
    least the larger of the fastest ranks' sum and the slowest rank's larger event, at most the
    sum of the slowest ranks' (the events' maxima may be on different ranks); one number on one
    rank."""
    got = [stage.get(e, (0, 0.0, 0.0)) for e in SETUP_EVENTS]
    low = max(sum(g[2] for g in got), max(g[1] for g in got))
    return low, sum(g[1] for g in got)
