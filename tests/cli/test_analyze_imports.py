"""``ksptrace analyze --no-figures`` never imports matplotlib (issue 35: 0.3 s of every run
without figures went to importing it); with figures it does, so the check can fail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace
from tests.conftest import ROOT

FAST = ["--candidates", "johnsonsu,norm", "--fit-size", "500", "--mc-runs", "2"]
PROBE = """
import sys
from ksptrace.cli.main import main
code = main(sys.argv[1:])
print(code, ",".join(sorted(m for m in ("matplotlib", "PIL") if m in sys.modules)))
"""


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Two solvers at two P and two n: the report has decision maps as well as runs."""
    folder = tmp_path_factory.mktemp("campaign")
    paths = []
    for i, (ksp, nprocs, n) in enumerate((k, p, n) for k in ("gmres", "bcgs")
                                         for p in (2, 4) for n in (10_000, 20_000)):
        path = folder / f"{ksp}-p{nprocs}-n{n}.h5"
        write_trace(synthetic_trace(nprocs, 60, 2, ksp, seed=i, n=n), path)
        paths.append(str(path))
    return paths


@pytest.mark.parametrize("figures", [False, True], ids=["no-figures", "figures"])
def test_matplotlib_is_imported_only_to_draw(campaign: list[str], tmp_path: Path,
                                             figures: bool) -> None:
    args = ["analyze", *campaign, "--out", str(tmp_path / "r"), "--no-cache", "--quiet", *FAST,
            *([] if figures else ["--no-figures"])]
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True,
                          text=True, check=False, timeout=300)
    code, _, loaded = proc.stdout.strip().splitlines()[-1].partition(" ")
    assert code == "0", proc.stderr
    pages = "".join(p.read_text() for p in (tmp_path / "r").rglob("*.html"))
    assert 'id="decision-1"' in pages  # a decision map was made (its figures drawn or not)
    assert loaded == ("PIL,matplotlib" if figures else ""), loaded


TQDM_PROBE = PROBE.replace('("matplotlib", "PIL")', '("tqdm",)')


def test_tqdm_is_not_imported_without_a_terminal(campaign: list[str], tmp_path: Path) -> None:
    """No progress bar (--quiet, or a log): no tqdm import (20 ms of start-up on the PyPI
    stack); tests/cli/test_progress.py checks that a bar imports it."""
    args = ["analyze", *campaign[:2], "--out", str(tmp_path / "r"), "--no-cache", *FAST,
            "--no-figures"]
    for quiet in ([], ["--quiet"]):
        proc = subprocess.run([sys.executable, "-c", TQDM_PROBE, *args, *quiet], cwd=ROOT,
                              capture_output=True, text=True, check=False, timeout=300)
        code, _, loaded = proc.stdout.strip().splitlines()[-1].partition(" ")
        assert code == "0", proc.stderr
        assert loaded == "", (quiet, loaded)
        args[args.index("--out") + 1] = str(tmp_path / "r2")


PANDAS_PROBE = PROBE.replace('("matplotlib", "PIL")', '("pandas",)')


def _loaded(args: list[str]) -> str:
    proc = subprocess.run([sys.executable, "-c", PANDAS_PROBE, *args], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=300)
    code, _, loaded = proc.stdout.strip().splitlines()[-1].partition(" ")
    assert code == "0", proc.stderr
    return loaded


def test_pandas_is_imported_only_for_a_decision_map(campaign: list[str], tmp_path: Path) -> None:
    """Runs at one P (the demo's) write their tables without pandas (0.15 s of a demo
    analysis, issue 35); a campaign with a decision map still builds its frames with it."""
    one_p = [p for p in campaign if "-p2-" in p]
    common = ["--no-cache", "--quiet", *FAST, "--no-figures"]
    assert _loaded(["analyze", *one_p, "--out", str(tmp_path / "a"), *common]) == ""
    assert (tmp_path / "a" / "variability.csv").read_text().count("\n") == len(one_p) + 1
    assert _loaded(["analyze", *campaign, "--out", str(tmp_path / "b"), *common]) == "pandas"
