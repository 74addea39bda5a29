"""Starting ``mpiexec`` for ``ksptrace run --np P``: which MPI, which flags, which environment."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

from ksptrace.errors import EnvironmentProblem


@dataclass(frozen=True)
class MpiExec:
    """An ``mpiexec`` and the flags this machine needs for a job of ``nprocs`` ranks."""

    path: str
    flavor: str
    """'openmpi', 'mpich' or 'unknown'."""

    def flags(self, nprocs: int, cpus: int, as_root: bool) -> list[str]:
        flags: list[str] = []
        if self.flavor == "openmpi":
            if as_root:
                flags.append("--allow-run-as-root")
            if nprocs > cpus:
                flags.append("--oversubscribe")
        return flags

    def command(self, nprocs: int, flags: list[str], program: list[str]) -> list[str]:
        return [self.path, *flags, "-n", str(nprocs), *program]


@functools.lru_cache(maxsize=4)
def _flavor(path: str) -> str:
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = (out.stdout + out.stderr).lower()
    if "open mpi" in text or "openrte" in text or "open-mpi" in text:
        return "openmpi"
    if "hydra" in text or "mpich" in text or "intel" in text:
        return "mpich"
    return "unknown"


def find_mpiexec(name: str | None = None) -> MpiExec:
    """The ``mpiexec`` on PATH (or ``$KSPTRACE_MPIEXEC``), with its flavour detected."""
    wanted = name or os.environ.get("KSPTRACE_MPIEXEC") or "mpiexec"
    path = shutil.which(wanted)
    if path is None:
        raise EnvironmentProblem(
            f"'{wanted}' not found on PATH; install openmpi-bin (Debian) or load your MPI "
            "module, or run under your own mpiexec/srun without --np"
        )
    return MpiExec(path, _flavor(path))


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
