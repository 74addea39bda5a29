"""Values that would hang, exhaust memory or crash a run are refused in one line before anything
starts (issue 27): heavy-tailed noise, huge counts, deep or endless input files, huge --np,
long names that file systems and rasterisers cannot hold."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ksptrace import escape
from ksptrace.cli.main import main
from ksptrace.cli.run import MAX_RANKS_PER_CORE, failure_reason, output_path
from ksptrace.noise.draw import detours
from ksptrace.noise.spec import MAX_DETOUR_SECONDS, canonical, parse
from tests.conftest import ROOT, solver_env


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1, err
    assert err[0].startswith("ksptrace: error: "), err
    return err[0]


@pytest.mark.parametrize(("spec", "says"), [
    ("pareto:scale=1ms,shape=0.5,p=0.1", "one detour in a thousand"),
    ("pareto:scale=1us,shape=1,p=0.5", "no finite mean"),
    ("lognormal:median=1s,sigma=3,p=0.01", "one detour in a thousand"),
    ("exponential:scale=2s,p=1", "one detour in a thousand"),
    ("fixed:value=5s,p=0.5", "expected detour per iteration and rank is 2.5 s"),
])
def test_unbounded_noise_is_refused(spec: str, says: str, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--n", "100", "--iterations", "5", "--noise", spec,
                 "--out", str(tmp_path)])
    assert code != 0
    assert says in error_line(capsys)
    assert list(tmp_path.iterdir()) == []


def test_bounded_noise_is_kept() -> None:
    assert canonical("pareto:scale=1us,shape=1.5,p=0.1").startswith("pareto:")
    assert canonical("fixed:value=5s,p=0.1").startswith("fixed:")


def test_drawn_detours_are_capped() -> None:
    # a heavy tail that analysis may model still draws, rarely, one huge detour: cut to the cap
    spec = parse("pareto:scale=1ms,shape=0.2,p=1")
    sizes = detours(spec, 0, 20000)
    assert sizes.max() == MAX_DETOUR_SECONDS
    assert np.isfinite(sizes).all()


@pytest.mark.parametrize(("args", "says"), [
    (["--iterations", "3000000000"], "--iterations must be <= 1e+08"),
    (["--n", "3000000000"], "32-bit"),
    (["--restart", "1000000"], "--restart must be <= 10000"),
    (["--np", "100000"], "at most"),
])
def test_huge_run_values_are_refused(args: list[str], says: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--n", "100", "--iterations", "5", *args, "--out", str(tmp_path)]) != 0
    assert says in error_line(capsys)
    assert list(tmp_path.iterdir()) == []


def test_np_bound_scales_with_cores() -> None:
    assert MAX_RANKS_PER_CORE * (os.cpu_count() or 1) < 100000


@pytest.mark.parametrize(("args", "says"), [
    (["--compute-us", "1e12"], "must be <="),
    (["--compute-us", "nan"], "finite"),
    (["--repetitions", "100000000"], "must be <="),
])
def test_huge_collectives_values_are_refused(args: list[str], says: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collectives", *args, "--out", str(tmp_path)]) != 0
    assert says in error_line(capsys)
    assert list(tmp_path.iterdir()) == []


CAMPAIGN = """
[campaign]
name = "b"
output = "out"
[sweep]
nprocs = 1
n = 1000
iterations = {iterations}
"""


def test_campaign_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(iterations="1000000000000"))
    assert main(["campaign", "plan", str(path)]) != 0
    assert "must be <=" in error_line(capsys)
    path.write_text(CAMPAIGN.format(iterations=10) + 'noise = "pareto:scale=1ms,shape=0.5,p=1"\n')
    assert main(["campaign", "plan", str(path)]) != 0
    assert "one detour in a thousand" in error_line(capsys)


def test_deeply_nested_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert main(["campaign", "plan", str(path)]) != 0
    line = error_line(capsys)
    assert "nested too deeply" in line or "not a valid" in line.lower() or "toml" in line.lower()


def test_campaign_file_that_is_a_fifo(tmp_path: Path) -> None:
    # a FIFO with no writer would block a plain open-and-read forever: run in a child with a
    # timeout, so a regression fails instead of hanging the suite
    fifo = tmp_path / "c.toml"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "ksptrace", "campaign", "plan", str(fifo)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=solver_env(), check=False)
    assert proc.returncode != 0
    assert "not a regular file" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_huge_campaign_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.toml"
    path.write_bytes(b"# " + b"x" * (5 << 20) + b"\n")
    assert main(["campaign", "plan", str(path)]) != 0
    assert "more than the" in error_line(capsys)


def test_long_tag_is_a_bounded_name(tmp_path: Path) -> None:
    run = {"problem": "ex23", "ksp": "gmres", "pc": "jacobi", "n": 1000, "iterations": 5,
           "noise": "none", "restart": None}
    one = output_path(str(tmp_path), run, 2, "t" * 5000)
    two = output_path(str(tmp_path), run, 2, "t" * 4999)
    assert len(one.name.encode()) <= 255
    assert one != two
    one.write_bytes(b"")  # the file system takes the name
    assert escape.bounded_stem("short") == "short"


def test_failure_reason() -> None:
    notice = ("-" * 70 + "\nPrimary job  terminated normally, but 1 process returned\n"
              "mpiexec noticed that process rank 1 with PID 4242 on node box exited on "
              "signal 9 (Killed).\n" + "-" * 70 + "\n")
    said = failure_reason(137, notice)
    assert "rank 1 on box was killed by signal 9 (Killed)" in said
    assert "out of memory" in said
    assert "SIGSEGV" in failure_reason(128 + signal.SIGSEGV, "")
    assert failure_reason(1, "real cause\n" + "-" * 40 + "\n") == \
        "mpiexec failed (exit 1): real cause"


def test_log_view_that_is_a_device_or_too_big(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``reductions --log-view /dev/zero`` grew to 24 GB before the OOM killer (issue 27)."""
    from ksptrace.studies.collectives.synthetic import allreduce_traces
    from ksptrace.trace import collectives as ctrace
    from ksptrace.trace.io import write_trace
    from ksptrace.trace.synthetic import synthetic_trace

    solver = write_trace(synthetic_trace(nprocs=2, iterations=50, ranks_per_node=2, seed=3),
                         tmp_path / "s.h5")
    (c,) = allreduce_traces(nprocs=(2,), algorithms=("recursive_doubling",), sizes=(8, 64))
    coll = ctrace.write(c, tmp_path / "c.h5")
    assert main(["reductions", str(solver), str(coll), "--log-view", "/dev/zero"]) != 0
    assert "is not a regular file" in error_line(capsys)
    big = tmp_path / "log.txt"
    with big.open("wb") as f:
        f.truncate(100 << 20)  # sparse: 100 MiB of nothing
    assert main(["reductions", str(solver), str(coll), "--log-view", str(big)]) != 0
    assert "more than the" in error_line(capsys)
