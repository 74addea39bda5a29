"""The software stacks the tests run on: Debian's PETSc 3.18 (this interpreter) and the PyPI
stack that ``scripts/bootstrap.sh --stack pypi`` builds into the user's cache (issue 34).

The cache folder follows scripts/stack_pypi.sh: ``$KSPTRACE_STACK_DIR``, else
``${XDG_CACHE_HOME:-~/.cache}/ksptrace/stack-pypi-<PETSc version>``. The stack counts as built
once its last step's stamp matches the pins in scripts/stack-pypi.txt.
"""

from __future__ import annotations

import glob
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PINS = ROOT / "scripts" / "stack-pypi.txt"
BUILD_COMMAND = "make stack-pypi"


@dataclass(frozen=True)
class Stack:
    name: str
    python: str
    env: dict[str, str]
    """Variables that select this stack's PETSc (PETSC_DIR; PETSC_ARCH removed where None)."""

    def environ(self, base: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env.pop("PETSC_ARCH", None)
        env.update(self.env)
        env["PYTHONPATH"] = str(ROOT)  # this checkout, whatever the venv's editable install says
        return env


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
