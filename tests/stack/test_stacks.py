"""What must hold on every software stack (issue 34): Debian's PETSc 3.18, which this suite runs
on, the PyPI stack where it has been built (``make stack-pypi``; skipped with that command
otherwise), and the PyPI stack's PETSc on MPICH (``make stack-mpich-petsc``, which ``make test``
builds).

- ksptrace's residual history equals a bare petsc4py solve of ex23 on the same stack, bit for
  bit, for gmres, pgmres, bcgs and pipebcgs at P = 1 and 2 (also on a PyPI build with 64-bit
  indices where ``KSPTRACE_STACK_INDEX=64 make stack-pypi`` built one);
- the trace names its stack (PETSc version, MPI library, monitor), and the C monitor stamped it;
- ex48 (iceflow) has the same rows and nonzeros on both stacks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ksptrace.trace.read import read_trace
from tests.conftest import solver_env
from tests.stack import stacks

KSPS = ("gmres", "pgmres", "bcgs", "pipebcgs")
N, K = 2000, 150
BARE = Path(__file__).with_name("bare_solve.py")

pytestmark = pytest.mark.usefixtures("require_petsc")


def _stack(name: str) -> stacks.Stack:
    if name == "debian":
        return stacks.debian()
    if name == "mpich":
        on_mpich = stacks.mpich_petsc()
        if isinstance(on_mpich, str):
            pytest.skip(on_mpich)
        return on_mpich[0]
    found = stacks.pypi(64 if name == "pypi-int64" else 32)
    if isinstance(found, str):
        pytest.skip(found)
    return found


def _run(stack: stacks.Stack, args: list[str], timeout: float = 300) -> str:
    env = stack.environ(solver_env())
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=stacks.ROOT, check=False)
    assert proc.returncode == 0, f"{' '.join(args)} failed on {stack.name}:\n{proc.stderr[-3000:]}"
    return proc.stdout


def _mpiexec(stack: stacks.Stack, nprocs: int) -> list[str]:
    found = shutil.which(stack.mpiexec)
    assert found, f"{stack.mpiexec} is not on PATH"
    return [found, "-n", str(nprocs)]


@pytest.mark.parametrize("nprocs", [1, 2])
@pytest.mark.parametrize("name", ["debian", "pypi", "pypi-int64", "mpich"])
def test_residual_histories_equal_a_bare_petsc4py_solve(
    name: str, nprocs: int, tmp_path: Path
) -> None:
    stack = _stack(name)
    bare = json.loads(_run(stack, [*_mpiexec(stack, nprocs), stack.python, str(BARE), str(N),
                                   str(K), *KSPS]).strip().splitlines()[-1])
    for ksp in KSPS:
        out = tmp_path / f"{ksp}.h5"
        _run(stack, [stack.python, "-m", "ksptrace", "run", "--np", str(nprocs), "--ksp", ksp,
                     "--n", str(N), "--iterations", str(K), "--out", str(out),
                     "--mpiexec", stack.mpiexec])
        trace = read_trace(out)
        expected = np.array([float.fromhex(v) for v in bare["histories"][ksp]])
        assert trace.residual_norms.shape == expected.shape, ksp
        assert np.array_equal(trace.residual_norms, expected), (
            f"{ksp} at P = {nprocs} on {name}: first difference at iteration "
            f"{int(np.argmax(trace.residual_norms != expected))}")
        assert str(trace.attrs["petsc_version"]).startswith(bare["petsc"]), trace.attrs
        assert trace.attrs["monitor"] == "c", f"{ksp} on {name}: {trace.attrs['monitor']}"
        assert trace.attrs["petsc_int_bytes"] == (8 if name == "pypi-int64" else 4)
        assert ("MPICH" in str(trace.attrs["mpi_library"])) == (name == "mpich"), trace.attrs


ICEFLOW = ["--problem", "iceflow", "--mx", "6", "--my", "6", "--mz", "3", "--iterations", "20"]


def test_iceflow_has_the_same_rows_and_nonzeros_on_both_stacks(tmp_path: Path) -> None:
    shapes = {}
    for name in ("debian", "pypi"):
        stack = _stack(name)
        out = tmp_path / f"{name}.h5"
        _run(stack, [stack.python, "-m", "ksptrace", "run", "--np", "2", "--ksp", "bcgs", *ICEFLOW,
                     "--out", str(out)])
        attrs = read_trace(out).attrs
        shapes[name] = (int(attrs["n_global"]), int(attrs["nnz"]))
    assert shapes["debian"] == shapes["pypi"], shapes
