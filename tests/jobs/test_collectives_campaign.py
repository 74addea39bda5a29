"""Campaigns of collectives runs: sweep keys, run ids, scripts, a real local run and resume."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.errors import CampaignError
from ksptrace.jobs.backends import get_backend
from ksptrace.jobs.campaign_file import load_campaign_file
from ksptrace.jobs.expand import build_spec, check_algorithms, load_spec
from ksptrace.trace import collectives as ctrace

CAMPAIGN = """
[campaign]
name = "coll"
kind = "collectives"
output = "out"
oversubscribe = true

[sweep]
op = "allreduce"
algorithm = {algorithms}
nprocs = [2, 4]
max_bytes = "64"
repetitions = 2
warmup = 1
"""


def _file(write: Callable[[str], Path], algorithms: str = '["ring", "recursive_doubling"]'
          ) -> Path:
    return write(CAMPAIGN.format(algorithms=algorithms))


def test_expansion_and_scripts(write_campaign: Callable[[str], Path]) -> None:
    spec = load_spec(_file(write_campaign))
    assert [(r.param("algorithm"), r.nprocs) for r in spec.runs] == [
        ("ring", 2), ("ring", 4), ("recursive_doubling", 2), ("recursive_doubling", 4)]
    assert {r.kind for r in spec.runs} == {"collectives"}
    again = load_spec(_file(write_campaign))
    assert [r.run_id for r in again.runs] == [r.run_id for r in spec.runs]  # stable ids
    spec = dataclasses.replace(spec, scheduler=dataclasses.replace(spec.scheduler,
                                                                   partition="debug"))
    (script,) = get_backend("slurm").render(spec, spec.runs[:1])
    assert (f"collectives --op allreduce --algorithm ring --segment-bytes 0 --min-bytes 1 "
            f"--max-bytes 64 --per-octave 0 --repetitions 2 --warmup 1 --compute-us 100.0 "
            f"--test-calls 0 --mode per-call --calls 100 --out traces/{spec.runs[0].run_id}.h5 "
            "--overwrite") in script.text


def test_bad_keys_and_algorithms(write_campaign: Callable[[str], Path]) -> None:
    path = write_campaign(CAMPAIGN.format(algorithms='"ring"') + 'ksp = "gmres"\n')
    with pytest.raises(CampaignError, match=r"unknown key in \[sweep\] 'ksp'"):
        load_campaign_file(path)
    path = _file(write_campaign, '["ring", "nosuch"]')
    cf = load_campaign_file(path)
    with pytest.raises(CampaignError, match=r"campaign.toml:\d+: run \w+ \(allreduce nosuch "
                                            r"P=2 .*unknown MPICH allreduce algorithm"):
        check_algorithms(cf, build_spec(cf), library="mpich")  # rendered as MPICH's CVARs
    with pytest.raises(CampaignError, match="unknown Open MPI allreduce algorithm 'nosuch'"):
        load_spec(path)  # this machine's Open MPI, through ompi_info


@pytest.mark.mpi
def test_local_run_and_resume(write_campaign: Callable[[str], Path],
                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(write_campaign, '"ring"')
    assert main(["campaign", "run", "--backend", "local", str(path)]) == 0
    traces = sorted((path.parent / "out" / "traces").glob("*.h5"))
    assert len(traces) == 2
    spec = load_spec(path)
    for run in spec.runs:
        t = ctrace.read(path.parent / "out" / run.trace)
        assert t.attrs["run_id"] == run.run_id
        assert t.nprocs == run.nprocs
        assert t.attrs["algorithm_name"] == run.param("algorithm")
        assert t.attrs["campaign"] == "coll"
    traces[0].unlink()
    capsys.readouterr()
    assert main(["campaign", "run", "--backend", "local", str(path)]) == 0
    assert "(1 runs)" in capsys.readouterr().out  # only the missing run again
    assert main(["campaign", "status", str(path.parent / "out")]) == 0
    assert "2 done" in capsys.readouterr().out


@pytest.mark.mpi
def test_a_failing_run_is_recorded_failed(write_campaign: Callable[[str], Path],
                                          capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_campaign(CAMPAIGN.format(algorithms='"ring"').replace("[2, 4]", "2"))
    monkeypatch.setenv("KSPTRACE_FAULT", "wrong-result-on-rank-1")
    assert main(["campaign", "run", "--backend", "local", str(path)]) == 1
    out = capsys.readouterr().out
    assert "0 done, 0 running, 1 failed" in out
    (log,) = (path.parent / "out" / "logs").glob("*.log")
    assert ("ksptrace: error: allreduce (ring) at 1 B on rank 1: injected wrong result"
            in log.read_text())
    assert not list((path.parent / "out" / "traces").glob("*.h5"))


@pytest.mark.mpi
def test_killed_then_resumed(tmp_path: Path) -> None:
    import subprocess

    from ksptrace.jobs import state
    from ksptrace.jobs.backends import alive_any
    from tests.conftest import ROOT, solver_env
    from tests.jobs.conftest import kill_mid_campaign

    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(algorithms='["ring", "recursive_doubling"]')
                    .replace('max_bytes = "64"', 'max_bytes = "1M"')
                    .replace("repetitions = 2", "repetitions = 10"))
    spec = load_spec(path)
    cmd = [sys.executable, "-m", "ksptrace", "campaign", "run", str(path), "--backend", "local"]
    # a run takes seconds (mpiexec, 10 timed calls per size up to 1 MiB): a kill at most 1 s
    # into a run leaves at least one of the 4 runs to the resume
    kill_mid_campaign(cmd, spec.output, (0.0, 1.0, 0.5))
    for trace in (spec.output / "traces").glob("*.h5"):
        ctrace.read(trace)  # whatever exists is complete
    statuses = state.statuses(spec.output, state.run_dicts(spec), alive_any)
    assert sum(s.state == "done" for s in statuses) < len(spec.runs), "killed too late"
    final = subprocess.run(cmd, env=solver_env(), cwd=ROOT, capture_output=True, text=True,
                           timeout=300, check=False)
    assert final.returncode == 0, final.stdout + final.stderr
    names = sorted(p.name for p in (spec.output / "traces").iterdir())
    assert names == sorted(f"{r.run_id}.h5" for r in spec.runs)
    for r in spec.runs:
        assert ctrace.read(spec.output / r.trace).attrs["run_id"] == r.run_id


def test_timing_mode_keeps_earlier_run_ids() -> None:
    """--mode and --calls (issue 54) came after campaigns existed: at their defaults they stay
    out of a run's id, so a resumed campaign finds its traces (this id is from before them)."""
    from ksptrace.collectives.params import COLLECTIVE_PARAMS
    from ksptrace.jobs.expand import run_id

    params = {p.name: p.default for p in COLLECTIVE_PARAMS} | {"kind": "collectives"}
    assert run_id(params, 2, 0, ()) == "e88cb7a6167c"
    assert run_id(params | {"mode": "back-to-back"}, 2, 0, ()) != "e88cb7a6167c"
