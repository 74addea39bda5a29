"""``ksptrace analyze --backend slurm|pbs``: the scripts, and a real run on the local Slurm
(scripts/slurm-local.sh, as the campaign tests use): one array task per trace fills the cache,
and the dependent merge job writes the same report as a local run."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.jobs.analysis import render
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace
from tests.jobs.test_slurm_real import CONF, MAX_ARRAY, ROOT, slurm  # noqa: F401 (fixture)

FAST = ["--candidates", "norm", "--mc-runs", "1", "--no-figures"]


def traces(folder: Path, count: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(count):
        p = folder / f"t{k}.h5"
        write_trace(synthetic_trace(4, 40, 2, ("gmres", "bcgs")[k % 2], seed=k, n=1000 + k), p)
        out.append(str(p))
    return out


def test_arrays_are_split_and_the_merge_runs_the_ordinary_command(tmp_path: Path) -> None:
    names = [f"/data/t{k}.h5" for k in range(5)]
    arrays, merge = render("slurm", tmp_path, names, ["ksptrace", "analyze", "--cache-only"],
                           ["ksptrace", "analyze", "--out", "/r"], "00:10:00", max_array=2)
    assert len(arrays) == 3
    assert "#SBATCH --array=0-1" in arrays[0]
    assert "#SBATCH --array=0-0" in arrays[2]
    assert "line=$(( ${SLURM_ARRAY_TASK_ID} + 5 ))" in arrays[2]
    assert 'exec ksptrace analyze --cache-only "$trace"' in arrays[0]
    assert merge.rstrip().endswith("exec ksptrace analyze --out /r")
    pbs, pbs_merge = render("pbs", tmp_path, names, ["a"], ["m"], "00:10:00", max_array=1000)
    assert "#PBS -J 0-4" in pbs[0]
    assert "${PBS_ARRAY_INDEX}" in pbs[0]
    assert "#PBS -N ksptrace-analyze-merge" in pbs_merge


def test_dry_run_writes_the_jobs_folder_and_submits_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = traces(tmp_path / "t", 3)
    out = tmp_path / "report"
    assert main(["analyze", *paths, "--out", str(out), "--backend", "pbs", "--dry-run",
                 *FAST]) == 0
    jobs = Path(f"{out}.jobs")
    assert (jobs / "traces.txt").read_text().splitlines() == [str(Path(p).resolve())
                                                              for p in paths]
    assert (jobs / "analyze-0.pbs").exists()
    assert (jobs / "merge.pbs").exists()
    assert "nothing submitted" in capsys.readouterr().out
    assert not out.exists()


SITE = """
[campaign]
name = "site"
[sweep]
n = 1000
nprocs = 2
[scheduler]
partition = "debug"
account = "proj42"
sbatch_directives = ["--qos=low"]
pbs_directives = ["-l place=pack"]
"""


@pytest.mark.parametrize(("backend", "lines"), [
    ("slurm", ["#SBATCH --partition=debug", "#SBATCH --account=proj42", "#SBATCH --qos=low"]),
    ("pbs", ["#PBS -q debug", "#PBS -A proj42", "#PBS -l place=pack"]),
])
def test_the_jobs_use_the_campaign_s_scheduler_table(tmp_path: Path, backend: str,
                                                      lines: list[str]) -> None:
    """A site that requires --account refused the analysis jobs, which could not set it."""
    site = tmp_path / "site.toml"
    site.write_text(SITE)
    paths = traces(tmp_path / "t", 2)
    out = tmp_path / "report"
    assert main(["analyze", *paths, "--out", str(out), "--backend", backend, "--dry-run",
                 "--scheduler", str(site), *FAST]) == 0
    suffix = "sbatch" if backend == "slurm" else "pbs"
    for script in (f"analyze-0.{suffix}", f"merge.{suffix}"):
        text = Path(f"{out}.jobs", script).read_text().splitlines()
        assert all(line in text for line in lines), text


@pytest.mark.parametrize(("args", "message"), [
    (["--backend", "slurm", "--no-cache"], "drop --no-cache"),
    (["--cache-only"], "--cache-only needs --cache DIR"),
])
def test_contradictory_requests_are_one_line(tmp_path: Path, args: list[str], message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    paths = traces(tmp_path / "t", 1)
    assert main(["analyze", *paths, "--out", str(tmp_path / "r"), *args, *FAST]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_cache_only_fills_the_cache_without_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = traces(tmp_path / "t", 2)
    cache = tmp_path / "cache"
    assert main(["analyze", *paths, "--cache-only", "--cache", str(cache), "--quiet",
                 *FAST]) == 0
    assert "cached 2 of 2 traces" in capsys.readouterr().out
    assert len(list(cache.glob("*.pkl"))) == 2


def _wait_all(jobs: list[str], env: dict[str, str], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = subprocess.run(["squeue", "-h", "-j", ",".join(jobs), "-o", "%i"], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode == 0 and not proc.stdout.strip():
            return
        time.sleep(0.5)
    pytest.fail(f"jobs {jobs} still queued after {timeout} s")


@pytest.mark.slurm
@pytest.mark.mpi
def test_the_analysis_as_a_slurm_array_and_a_merge_job(
    slurm: dict[str, str],  # noqa: F811
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in {"SLURM_CONF": CONF, "PYTHONPATH": str(ROOT),
                       "KSPTRACE_SLURM_MAX_ARRAY": str(MAX_ARRAY)}.items():
        monkeypatch.setenv(key, value)
    paths = traces(tmp_path / "t", 6)  # 6 > MaxArraySize 4: two arrays
    out = tmp_path / "report"
    assert main(["analyze", *paths, "--out", str(out), "--backend", "slurm",
                 "--walltime", "00:05:00", *FAST]) == 0
    text = capsys.readouterr().out
    assert "submitted 6 trace analyses as array job(s)" in text
    jobs = [j.strip(",") for j in text.split("array job(s) ")[1].split(" and the merge")[0]
            .split()] + [text.split("the merge as job ")[1].split(",")[0]]
    assert len(jobs) == 3
    _wait_all(jobs, slurm)
    logs = Path(f"{out}.jobs") / "logs"
    merge_log = "".join(p.read_text() for p in logs.glob("merge-*.out"))
    assert (out / "report.html").exists(), merge_log
    assert "6 traces analysed" in merge_log
    # every trace was analysed by its array task: the merge found all six in the cache
    assert len(list(Path(f"{out}.cache").glob("*.pkl"))) == 6
    assert len(list(logs.glob("analyze-*.out"))) == 6
    local = tmp_path / "local"
    assert main(["analyze", *paths, "--out", str(local), "--no-cache", "--quiet", *FAST]) == 0
    a = json.loads((out / "summary.json").read_text())
    b = json.loads((local / "summary.json").read_text())
    for s in (a, b):
        s["metadata"].pop("created")
    assert a == b
