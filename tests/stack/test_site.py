"""A site's own PETSc (docs/install.md): a fresh venv over the system's Python packages, that
PETSc's petsc4py, the system's mpi4py, and ``PETSC_DIR`` naming the build. The PyPI stack's
PETSc 3.26.1 stands in for the site's build (skipped with the command that builds it where it
has not been built); Debian's python, numpy, mpi4py and h5py stand in for the site's modules.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.trace.read import read_trace
from tests.conftest import solver_env
from tests.stack import stacks

pytestmark = pytest.mark.usefixtures("require_petsc")


def test_a_site_petsc_named_by_petsc_dir(tmp_path: Path) -> None:
    stack = stacks.pypi()
    if isinstance(stack, str):
        pytest.skip(stack)
    wheels = sorted((stacks.pypi_folder() / "wheels").glob("petsc4py-*.whl"))
    assert wheels, "the PyPI stack keeps its petsc4py wheel in its cache folder"
    venv = tmp_path / "site-venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    str(wheels[-1])], check=True, timeout=300, capture_output=True)
    env = solver_env(PETSC_DIR=stack.env["PETSC_DIR"], PYTHONPATH=str(stacks.ROOT))
    env.pop("PETSC_ARCH", None)
    out = tmp_path / "site.h5"
    done = subprocess.run([python, "-m", "ksptrace", "run", "--np", "2", "--ksp", "gmres",
                           "--n", "2000", "--iterations", "50", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    attrs = read_trace(out).attrs
    assert attrs["petsc_version"] == stacks.pypi_version()
    assert Path(str(attrs["petsc_dir"])).resolve() == Path(stack.env["PETSC_DIR"]).resolve()
    assert attrs["monitor"] == "c"
    import mpi4py
    import numpy

    # the rest of the stack is the system's, as a site's modules would be
    assert (attrs["numpy_version"], attrs["mpi4py_version"]) == (
        numpy.__version__, mpi4py.__version__), sys.executable
