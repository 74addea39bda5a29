"""The committed rendered example campaign is what the code renders, and the README's dry runs
leave the clone as it was (issue 31)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT, solver_env

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not found")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("render_examples",
                                                  ROOT / "scripts" / "render_examples.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_rendered_campaign_is_up_to_date() -> None:
    proc = subprocess.run([sys.executable, "scripts/render_examples.py", "--check"], cwd=ROOT,
                          env=solver_env(), capture_output=True, text=True, check=False,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_a_stale_rendered_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    render = _script()
    committed = tmp_path / "committed"
    shutil.copytree(render.RENDERED, committed)
    script = next(committed.rglob("*.sbatch"))
    script.write_text(script.read_text().replace("#SBATCH", "#SBATCH ", 1))
    monkeypatch.setattr(render, "RENDERED", committed)
    fresh = tmp_path / "fresh"
    render.render(fresh)
    assert render.stale(fresh) == [script.relative_to(committed).as_posix()]


def _status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--", "examples", "README.md"],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("backend", ["slurm", "pbs"])
def test_the_readme_dry_runs_change_no_committed_file(tmp_path: Path, backend: str) -> None:
    before = _status()
    made = ROOT / "examples" / "runs" / "paper-theta"
    existed = made.exists()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ksptrace", "campaign", "run",
             str(ROOT / "examples" / "paper-theta.toml"), "--backend", backend, "--dry-run"],
            cwd=tmp_path, env=solver_env(), capture_output=True, text=True, check=False,
            timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert _status() == before
        assert (made / "manifest.json").is_file()
    finally:
        if not existed:
            shutil.rmtree(made, ignore_errors=True)
