"""ksptrace's own small PETSc program (``laplace1d.c`` beside this file), built in a temporary
folder against the PETSc that this Python's petsc4py uses: Debian's 3.18 in the project's venv,
the PyPI ``petsc`` package's in the PyPI stack's (``make test-stack``), which ships no
tutorials of its own. Compiler and library are the ones that PETSc's configure recorded."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("laplace1d.c")


def petsc_dir() -> Path:
    """``$PETSC_DIR/$PETSC_ARCH`` of this Python's petsc4py (its own record, not the
    environment's, so the program links the library the Python programs load)."""
    import petsc4py

    config = petsc4py.get_config()
    return Path(config["PETSC_DIR"]) / config.get("PETSC_ARCH", "")


def variables(pdir: Path) -> dict[str, str]:
    """PETSc's ``petscvariables``: what its configure found (compiler, library names)."""
    found: dict[str, str] = {}
    for line in (pdir / "lib" / "petsc" / "conf" / "petscvariables").read_text().splitlines():
        name, eq, value = line.partition(" = ")
        if eq:
            found[name.strip()] = value.strip()
    return found


def version(pdir: Path) -> str:
    """The version in ``petscversion.h``, as ``PetscGetVersion`` prints it (``3.26.1``)."""
    text = (pdir / "include" / "petscversion.h").read_text()
    parts = [re.search(rf"#define PETSC_VERSION_{p}\s+(\d+)", text) for p in
             ("MAJOR", "MINOR", "SUBMINOR")]
    return ".".join(m.group(1) if m else "?" for m in parts)


def int_bytes(pdir: Path) -> int:
    """PetscInt's size in this build: 8 where its ``petscconf.h`` says 64-bit indices
    (``KSPTRACE_STACK_INDEX=64 make stack-pypi``), else 4."""
    conf = (pdir / "include" / "petscconf.h").read_text()
    return 8 if re.search(r"#define PETSC_USE_64BIT_INDICES 1", conf) else 4


def missing(pdir: Path) -> str | None:
    """Why the program cannot be built against ``pdir``, or None."""
    if not (pdir / "include" / "petsc.h").is_file():
        return (f"no PETSc headers in {pdir}: on Debian apt-get install libpetsc-real3.18-dev "
                "(scripts/bootstrap.sh --test does)")
    conf = pdir / "lib" / "petsc" / "conf" / "petscvariables"
    if not conf.is_file():
        return f"no {conf}: not a PETSc installation"
    compiler = variables(pdir).get("PCC") or variables(pdir).get("CC", "")
    if shutil.which(compiler) is None:
        return f"PETSc's C compiler {compiler!r} is not on PATH (Debian: libopenmpi-dev)"
    return None


def build(folder: Path, pdir: Path) -> Path:
    """``laplace1d`` compiled in ``folder`` against ``pdir``, with an rpath to its library."""
    conf = variables(pdir)
    compiler = conf.get("PCC") or conf["CC"]
    libs = conf["PETSC_LIB_BASIC"].split()  # -lpetsc (PyPI) or -lpetsc_real (Debian)
    out = folder / "laplace1d"
    subprocess.run([compiler, "-O1", f"-I{pdir}/include", str(SOURCE), "-o", str(out),
                    f"-L{pdir}/lib", *libs, "-lm", f"-Wl,-rpath,{pdir}/lib"],
                   check=True, capture_output=True, text=True, timeout=300, cwd=folder)
    return out
