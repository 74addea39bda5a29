"""ruff and mypy are part of the suite: a lint or type error fails the tests."""

from __future__ import annotations

import os
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
    proc = subprocess.run([_tool("ruff"), "check", "ksptrace", "tests", "bench", "conftest.py"],
                          cwd=ROOT,
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


def _lint_imports(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_tool("lint-imports"), "--no-cache"], cwd=cwd, capture_output=True,
                          text=True, check=False, env=env)


def test_import_contracts_hold() -> None:
    """The layers of pyproject.toml's [tool.importlinter] (docs/architecture.md)."""
    proc = _lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


@pytest.mark.parametrize(("module", "imports", "contract"), [
    ("harness/launching/_probe_import.py", "from ksptrace.harness.hook import session",
     "The harness"),
    ("harness/_probe_import.py", "from ksptrace.studies.variability.stats import ks",
     "never import"),
    ("studies/variability/_probe_import.py", "from ksptrace.studies.decisions import maps",
     "Studies build on"),
    ("trace/_probe_import.py", "from ksptrace.cli import main", "cli -> jobs"),
    ("report/_probe_import.py", "from ksptrace.studies.variability.run.pipeline import analyse",
     "public surface"),
])
def test_import_contracts_catch_a_wrong_import(tmp_path: Path, module: str, imports: str,
                                               contract: str) -> None:
    """The same contracts on a copy of the package with one forbidden import added fail."""
    shutil.copytree(ROOT / "ksptrace", tmp_path / "ksptrace",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "ksptrace" / module).write_text(f'"""A forbidden import."""\n\n{imports}\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = _lint_imports(tmp_path, env)
    assert proc.returncode != 0, proc.stdout
    broken = proc.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, proc.stdout
    assert "_probe_import" in broken, proc.stdout


MAX_LINES = 400
LONG_MODULES: dict[str, str] = {}
"""Modules allowed above MAX_LINES, each with why. A module that shrinks below leaves the list."""


def test_modules_stay_short() -> None:
    sizes = {p.relative_to(ROOT / "ksptrace").as_posix(): len(p.read_text().splitlines())
             for p in (ROOT / "ksptrace").rglob("*.py")}
    too_long = {m: n for m, n in sizes.items() if n > MAX_LINES and m not in LONG_MODULES}
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}; split them by concern"
    stale = [m for m in LONG_MODULES if sizes.get(m, 0) <= MAX_LINES]
    assert not stale, f"no longer over {MAX_LINES} lines, remove from LONG_MODULES: {stale}"


def test_the_package_map_in_the_docs_is_the_code_s() -> None:
    proc = subprocess.run([sys.executable, "scripts/package_map.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("package", ["variability", "collectives", "decisions", "segmentation"])
def test_each_public_study_name_resolves_and_is_listed(package: str) -> None:
    """A study's public surface is lazy: each name listed in PUBLIC is in __all__ and resolves
    to the object of the module it names (a typo would only fail when the report asks)."""
    import importlib

    pkg = importlib.import_module(f"ksptrace.studies.{package}")
    assert sorted(pkg.__all__) == sorted(pkg.PUBLIC)
    for name, (module, attr) in pkg.PUBLIC.items():
        real = getattr(importlib.import_module(f"ksptrace.studies.{package}.{module}"), attr)
        assert getattr(pkg, name) is real
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = pkg.nope


def test_importing_one_study_module_does_not_import_the_study() -> None:
    """``ksptrace analyze --help`` needs the options, not matplotlib."""
    code = ("import sys; import ksptrace.studies.variability.run.options, "
            "ksptrace.studies.decisions.grouping; print('matplotlib' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    assert proc.stdout.strip() == "False", proc.stderr


def test_the_readme_stays_short() -> None:
    """At most 150 lines, and none over 120 characters outside code blocks (issue 31): the
    reference lives in docs/."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail to docs/"
    in_code = False
    for number, line in enumerate(lines, start=1):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code:
            assert len(line) <= 120, f"README.md:{number} has {len(line)} characters"


def test_the_harness_is_in_subpackages_under_its_contract() -> None:
    """Every module of ksptrace/harness/ is in a subpackage, and every subpackage is a layer of
    the harness-layers contract: a module elsewhere would escape the contract."""
    import tomllib

    harness = ROOT / "ksptrace" / "harness"
    top = sorted(p.name for p in harness.glob("*.py"))
    assert top == ["__init__.py"], f"{top}: put each module in the subpackage of its job"
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (layers,) = [c["layers"] for c in config["tool"]["importlinter"]["contracts"]
                 if c["id"] == "harness-layers"]
    named = {name.strip() for layer in layers for name in layer.split("|")}
    assert named == {p.parent.name for p in harness.glob("*/__init__.py")}
