"""Offline analysis needs neither PETSc nor MPI (docs/install.md, "Offline analysis only"):
``show`` and ``analyze`` of a trace in a process where petsc4py and mpi4py cannot be imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "studies" / "variability" / "golden" / "gmres-p2-n10000.h5"
BLOCKED = """
import sys
sys.modules["petsc4py"] = None  # import petsc4py now raises ImportError, as with no PETSc
sys.modules["mpi4py"] = None
from ksptrace.cli.main import entry
sys.argv = ["ksptrace", *sys.argv[1:]]
try:
    entry()
finally:
    assert "petsc4py" not in {m.split(".")[0] for m in sys.modules if sys.modules[m] is not None}
"""


def _ksptrace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCKED, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, check=False)


def test_show_and_analyze_without_petsc_or_mpi(tmp_path: Path) -> None:
    shown = _ksptrace("show", str(TRACE))
    assert shown.returncode == 0, shown.stderr
    assert "gmres" in shown.stdout
    out = tmp_path / "report"
    done = _ksptrace("analyze", str(TRACE), "--no-figures", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert (out / "index.html").exists() or any(out.iterdir())


def test_the_blocker_blocks(tmp_path: Path) -> None:
    """The same process cannot start a run: the test above really ran without PETSc."""
    ran = _ksptrace("run", "--n", "100", "--iterations", "5", "--out", str(tmp_path / "x.h5"))
    assert ran.returncode != 0
    assert "petsc4py" in ran.stderr
