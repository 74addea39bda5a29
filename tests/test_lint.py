"""ruff and mypy are part of the suite: a lint or type error fails the tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e .[test])")
    return found


def test_ruff_clean() -> None:
    proc = subprocess.run([_tool("ruff"), "check", "ksptrace", "tests", "bench"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_clean() -> None:
    proc = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_studies_and_report_never_import_petsc_or_mpi() -> None:
    code = (
        "import sys, pkgutil, importlib, ksptrace.studies as s, ksptrace.report as r\n"
        "for pkg in (s, r):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "import ksptrace.trace.io, ksptrace.trace.frame\n"
        "bad = [m for m in ('petsc4py', 'mpi4py') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
