"""A real Slurm on localhost (scripts/slurm-local.sh), not a mock: submit, wait, check traces.

The cluster runs with MaxArraySize=4, so that a campaign split into arrays of at most 4 tasks
is tested against Slurm's own limit. Where Slurm cannot run (no packages and not root, no
cgroup filesystem, a daemon that will not start) the tests skip with the script's reason, and
the script has stopped whatever it started."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.trace import collectives as ctrace
from ksptrace.trace.read import read_trace

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "slurm-local.sh"
CONF = "/tmp/ksptrace-slurm/slurm.conf"
MAX_ARRAY = 4
"""Slurm's MaxArraySize in these tests: array indices 0-3 only."""
CANNOT_RUN = 3
"""slurm-local.sh's exit code when Slurm cannot run on this machine."""

pytestmark = [pytest.mark.slurm, pytest.mark.mpi]


def _up(env: dict[str, str]) -> bool:
    if shutil.which("scontrol") is None:
        return False
    proc = subprocess.run(["scontrol", "ping"], env=env, capture_output=True, text=True,
                          check=False)
    return "is UP" in proc.stdout


def start_local_slurm(env: dict[str, str]) -> str | None:
    """Start (or reconfigure) the local Slurm; the reason it cannot run here, or None.

    A daemon that exits at start-up is given a second start: once in a full suite run,
    slurmctld died at start-up without a word right after other tests had stopped theirs, and
    started at once when asked again."""
    why = _start_once(env)
    if why is not None and "exited at start-up" in why:
        time.sleep(2.0)
        why = _start_once(env)
    return why


def _start_once(env: dict[str, str]) -> str | None:
    """One start. A failed start is followed by 'stop', so no daemon is left behind even if the
    script's own clean-up was cut short; any failure other than 'cannot run here' fails the
    test."""
    try:
        proc = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True,
                              text=True, check=False, timeout=600)
    except subprocess.TimeoutExpired:
        proc = None
    if proc is not None and proc.returncode == 0:
        return None
    subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, check=False,
                   timeout=60)
    if proc is None:
        pytest.fail("scripts/slurm-local.sh start took more than 600 s")
    lines = [ln for ln in proc.stderr.strip().splitlines() if "error:" in ln]
    why = (lines or proc.stderr.strip().splitlines() or ["no message"])[-1]
    why = why.removeprefix("slurm-local: error: ")
    if proc.returncode == CANNOT_RUN:
        return why
    pytest.fail(f"scripts/slurm-local.sh start failed (exit {proc.returncode}): {why}")


@pytest.fixture(scope="module")
def slurm() -> Iterator[dict[str, str]]:
    env = {**os.environ, "SLURM_CONF": CONF, "KSPTRACE_SLURM_MAX_ARRAY": str(MAX_ARRAY)}
    was_up = _up(env)
    why = start_local_slurm(env)  # idempotent; restarts our daemons if the config changed
    if why is not None:
        pytest.skip(f"Slurm cannot run here: {why}")
    yield env
    if not was_up:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, check=False)


CAMPAIGN = """
[campaign]
name = "slurmtest"
output = "out"
command = '{python} -m ksptrace'

[sweep]
ksp = "gmres"
nprocs = [1, 2, 4]
n = 4000
iterations = 40

[scheduler]
walltime = "00:05:00"
ranks_per_node = 4
exclusive = false
"""


def _wait(job: str, env: dict[str, str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = subprocess.run(["squeue", "-h", "-j", job, "-o", "%i %T"], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode == 0 and not proc.stdout.strip():
            return
        time.sleep(0.5)
    pytest.fail(f"job {job} still in the queue after {timeout} s")


def test_campaign_as_a_job_array(slurm: dict[str, str], tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in {"SLURM_CONF": CONF, "OMPI_ALLOW_RUN_AS_ROOT": "1",
                       "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OPENBLAS_NUM_THREADS": "1",
                       "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}.items():
        monkeypatch.setenv(key, value)
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(python=sys.executable))
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    out = tmp_path / "out"
    subs = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    assert len(subs) == 1, "P in {1, 2, 4} on one node is one job array"
    job = subs[0]["job_id"]
    assert job.isdigit()
    assert f"job(s) {job}" in capsys.readouterr().out
    _wait(job, slurm)

    assert main(["campaign", "status", str(out)]) == 0, capsys.readouterr().out
    assert "3 runs: 3 done" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    by_id = {r["run_id"]: r for r in manifest["runs"]}
    for task, run_id in enumerate(subs[0]["runs"]):
        trace = read_trace(out / by_id[run_id]["trace"])
        assert trace.nprocs == by_id[run_id]["nprocs"]
        assert str(trace.attrs["slurm_array_job_id"]) == job
        assert str(trace.attrs["slurm_array_task_id"]) == str(task)
        assert trace.attrs["run_id"] == run_id
        assert trace.attrs["campaign_hash"] == manifest["campaign_hash"]
    assert sorted(p.name for p in (out / "logs").glob("slurmtest-*.out")) == sorted(
        f"slurmtest-{job}_{i}.out" for i in range(3))

    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_impossible_request_fails_at_submit(slurm: dict[str, str], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SLURM_CONF", CONF)
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(python=sys.executable).replace("ranks_per_node = 4",
                                                                    "ranks_per_node = 64"))
    path.write_text(path.read_text().replace("nprocs = [1, 2, 4]", "nprocs = 64"))
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 7
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "sbatch rejected" in err[0]
    assert not (tmp_path / "out").exists()


SPLIT = """
[campaign]
name = "split"
output = "out"
command = '{python} -m ksptrace'

[sweep]
ksp = ["gmres", "cg"]
n = [1000, 1100, 1200]
nprocs = 1
iterations = 10

[scheduler]
walltime = "00:05:00"
exclusive = false
max_array_size = {max_array_size}
"""


def test_a_campaign_split_to_fit_maxarraysize(slurm: dict[str, str], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Six runs, MaxArraySize=4: one array of 0-5 is refused by Slurm itself; split into arrays
    of at most 4 (0-3 and 0-1), all six complete."""
    for key, value in {"SLURM_CONF": CONF, "OMPI_ALLOW_RUN_AS_ROOT": "1",
                       "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OPENBLAS_NUM_THREADS": "1",
                       "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}.items():
        monkeypatch.setenv(key, value)
    config = subprocess.run(["scontrol", "show", "config"], env=slurm, capture_output=True,
                            text=True, check=True).stdout
    assert re.search(rf"^MaxArraySize\s*=\s*{MAX_ARRAY}$", config, re.MULTILINE), config

    whole = tmp_path / "whole.toml"
    whole.write_text(SPLIT.format(python=sys.executable, max_array_size=1000))
    whole.write_text(whole.read_text().replace('output = "out"', 'output = "whole"'))
    assert main(["campaign", "run", str(whole), "--backend", "slurm"]) == 7
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "sbatch rejected scripts/slurm/split-N1.sbatch" in err[0]

    path = tmp_path / "c.toml"
    path.write_text(SPLIT.format(python=sys.executable, max_array_size=MAX_ARRAY))
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    out = tmp_path / "out"
    subs = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    assert [s["script"] for s in subs] == ["scripts/slurm/split-N1-1.sbatch",
                                           "scripts/slurm/split-N1-2.sbatch"]
    assert [len(s["runs"]) for s in subs] == [4, 2]
    capsys.readouterr()
    for sub in subs:
        _wait(sub["job_id"], slurm)
    assert main(["campaign", "status", str(out)]) == 0, capsys.readouterr().out
    assert "6 runs: 6 done" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    by_id = {r["run_id"]: r for r in manifest["runs"]}
    for sub in subs:
        for task, run_id in enumerate(sub["runs"]):
            trace = read_trace(out / by_id[run_id]["trace"])
            assert str(trace.attrs["slurm_array_job_id"]) == sub["job_id"]
            assert str(trace.attrs["slurm_array_task_id"]) == str(task)
            assert trace.attrs["run_id"] == run_id


# --- the fixture's start and clean-up paths (their own cluster folder and ports) --------------

def _leftovers(folder: Path) -> list[str]:
    proc = subprocess.run(["pgrep", "-af", str(folder)], capture_output=True, text=True,
                          check=False)
    return [line for line in proc.stdout.splitlines() if "pgrep" not in line]


def test_slurmd_failing_to_start_leaves_no_daemon(tmp_path: Path) -> None:
    """slurmd given a bad configuration exits at once: the script stops the slurmctld (and the
    munged) it started, exits 3 with slurmd's reason, and the fixture would skip."""
    if shutil.which("slurmctld") is None and not os.path.exists("/usr/sbin/slurmctld"):
        pytest.skip("Slurm is not installed (scripts/slurm-local.sh start installs it)")
    folder = tmp_path / "cluster"
    bad = tmp_path / "bad.conf"
    bad.write_text("ThisIsNotASlurmOption=1\n")
    env = {**os.environ, "KSPTRACE_SLURM_DIR": str(folder), "KSPTRACE_SLURM_PORT": "6917",
           "SLURM_CONF": str(folder / "slurm.conf"), "KSPTRACE_SLURMD_CONF": str(bad)}
    try:
        proc = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True,
                              text=True, check=False, timeout=120)
        assert proc.returncode == CANNOT_RUN, proc.stdout + proc.stderr
        assert "slurm-local: error: slurmd exited at start-up: slurmd: fatal: Unable to process "\
               "configuration file" in proc.stderr
        assert "stopped slurmctld" in proc.stderr
        assert _leftovers(folder) == []
        assert list((folder / "pids").iterdir()) == []
        assert start_local_slurm(env) == ("slurmd exited at start-up: slurmd: fatal: Unable to "
                                          "process configuration file")
        assert _leftovers(folder) == []
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, check=False)


def test_no_cgroup_filesystem_is_a_reason_to_skip(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\ntmpfs /sys/fs/cgroup tmpfs rw 0 0\n")
    folder = tmp_path / "cluster"
    env = {**os.environ, "KSPTRACE_SLURM_DIR": str(folder), "KSPTRACE_SLURM_PORT": "6927",
           "KSPTRACE_SLURM_MOUNTS": str(mounts)}
    try:
        assert start_local_slurm(env) == (f"no cgroup filesystem in {mounts}: slurmd of Slurm "
                                          "22.05 cannot start")
        assert not folder.exists()
        assert _leftovers(folder) == []
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, check=False)


COLLECTIVES_CAMPAIGN = """
[campaign]
name = "slurmcoll"
kind = "collectives"
output = "out"
command = '{python} -m ksptrace'

[sweep]
op = "allreduce"
algorithm = ["ring", "recursive_doubling"]
nprocs = 2
max_bytes = "256"
repetitions = 3

[scheduler]
walltime = "00:05:00"
ranks_per_node = 4
exclusive = false
"""


def test_collectives_campaign_on_slurm(slurm: dict[str, str], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in {"SLURM_CONF": CONF, "OMPI_ALLOW_RUN_AS_ROOT": "1",
                       "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "PYTHONPATH": str(ROOT)}.items():
        monkeypatch.setenv(key, value)
    path = tmp_path / "c.toml"
    path.write_text(COLLECTIVES_CAMPAIGN.format(python=sys.executable))
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    out = tmp_path / "out"
    (sub,) = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    _wait(sub["job_id"], slurm)
    capsys.readouterr()
    assert main(["campaign", "status", str(out)]) == 0, capsys.readouterr().out
    assert "2 runs: 2 done" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    for task, run in enumerate(manifest["runs"]):
        t = ctrace.read(out / run["trace"])
        assert t.attrs["run_id"] == run["run_id"]
        assert t.attrs["algorithm_name"] == run["params"]["algorithm"]
        assert str(t.attrs["slurm_job_id"]).isdigit()
        assert json.loads(str(t.attrs["algorithm_held"]))[
            "coll_tuned_allreduce_algorithm"] == {"ring": 4, "recursive_doubling": 3}[
            run["params"]["algorithm"]]
        assert task == run["index"]


def test_a_campaign_submitted_after_mpi_init_runs_its_concurrent_tasks(
        slurm: dict[str, str], tmp_path: Path) -> None:
    """A process that initialised MPI (a notebook, a test suite) carries its runtime's PMIx
    identity in its C environment. Exported into the job by sbatch, it gave both concurrent
    array tasks one Open MPI job id and the same shared-memory segments: SIGSEGV in both."""
    path = tmp_path / "c.toml"
    path.write_text(COLLECTIVES_CAMPAIGN.format(python=sys.executable))
    env = {**os.environ, "SLURM_CONF": CONF, "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "PYTHONPATH": str(ROOT)}
    submit = ("import sys\nfrom mpi4py import MPI\nfrom ksptrace.cli.main import main\n"
              f"sys.exit(main(['campaign', 'run', {str(path)!r}, '--backend', 'slurm']))")
    proc = subprocess.run([sys.executable, "-c", submit], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    (sub,) = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    _wait(sub["job_id"], slurm)
    status = subprocess.run([sys.executable, "-m", "ksptrace", "campaign", "status", str(out)],
                            env=env, capture_output=True, text=True, timeout=60, check=False)
    assert "2 runs: 2 done" in status.stdout, status.stdout + status.stderr


PROGRAM_CAMPAIGN = """
[campaign]
name = "progtest"
kind = "program"
output = "out"
command = '{python} -m ksptrace'

[program]
command = ["{ex2}", "-m", "12", "-n", "12", "-ksp_type", "{{ksp}}"]

[sweep]
nprocs = [1, 2]
ksp = "cg"

[scheduler]
walltime = "00:05:00"
ranks_per_node = 2
exclusive = false
"""


def test_program_campaign_on_slurm(slurm: dict[str, str], tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """PETSc's ex2, unmodified, traced under srun at P = 1 and 2 as a job array."""
    from tests.harness.hook import tutorials

    why = tutorials.missing()
    if why is not None:
        pytest.fail(why)
    ex2 = tutorials.build("ex2", tmp_path)
    for key, value in {"SLURM_CONF": CONF, "OMPI_ALLOW_RUN_AS_ROOT": "1",
                       "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OPENBLAS_NUM_THREADS": "1",
                       "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}.items():
        monkeypatch.setenv(key, value)
    path = tmp_path / "c.toml"
    path.write_text(PROGRAM_CAMPAIGN.format(python=sys.executable, ex2=ex2))
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    out = tmp_path / "out"
    (sub,) = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    _wait(sub["job_id"], slurm)
    capsys.readouterr()
    assert main(["campaign", "status", str(out)]) == 0, capsys.readouterr().out
    assert "2 runs: 2 done" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    for task, run_id in enumerate(sub["runs"]):
        run = next(r for r in manifest["runs"] if r["run_id"] == run_id)
        (trace_path,) = (out / run["trace"]).glob("*.h5")
        trace = read_trace(trace_path)
        assert trace.nprocs == run["nprocs"]
        assert trace.attrs["run_id"] == run_id
        assert trace.attrs["launcher"] == "srun"
        assert str(trace.attrs["slurm_array_job_id"]) == sub["job_id"]
        assert str(trace.attrs["slurm_array_task_id"]) == str(task)
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_trace_runs_ex2_under_srun_in_a_batch_job(slurm: dict[str, str], tmp_path: Path) -> None:
    """``ksptrace trace -- srun --mpi=pmix -n 2 ./ex2 -ksp_monitor`` typed in a job script, as a
    user would: the hook reaches both ranks through srun, and the trace's iterations and norms
    are those ex2's own monitor printed (issue 64)."""
    from tests.jobs import traced_job

    ex2 = traced_job.build_ex2(tmp_path)
    env = {**slurm, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    job = traced_job.submit(env, tmp_path, ex2, 1, ["-n", "2"])
    traced_job.wait(job, env)
    trace = traced_job.check(job)
    assert len(set(trace.hostnames)) == 1
    assert traced_job.no_process_of(ex2) == []


def test_sigkill_of_trace_under_srun_leaves_no_job_and_no_rank(slurm: dict[str, str],
                                                               tmp_path: Path) -> None:
    """``ksptrace trace -- srun ...`` run outside a job (srun makes the allocation) and killed
    with SIGKILL mid-solve: the guard gives srun SIGTERM and a grace, so srun ends its step and
    gives its allocation back. Killed outright, srun left the job running empty, its time limit
    UNLIMITED here (issue 64)."""
    from tests.jobs import traced_job

    ex2 = traced_job.build_ex2(tmp_path)
    name = f"ksptrace-kill-{os.getpid()}"
    out = tmp_path / "out"
    env = {**slurm, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "ksptrace", "trace", "--out", str(out), "--", "srun",
           "--mpi=pmix", "-n", "2", f"--job-name={name}", str(ex2), "-m", "400", "-n", "400",
           "-pc_type", "jacobi", "-ksp_rtol", "1e-14", "-ksp_max_it", "1000000"]

    def queued() -> str:
        return subprocess.run(["squeue", "-h", "-n", name], env=env, capture_output=True,
                              text=True, check=False).stdout.strip()

    def until(check: Callable[[], object], seconds: float) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if check():
                return True
            time.sleep(0.2)
        return False

    trace = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert until(lambda: list(out.glob(".ksptrace-hook-*/rank-*")), 120), \
            "the ranks never started solving"
        assert queued(), "srun made no job"
        os.kill(trace.pid, signal.SIGKILL)
        trace.wait()
        assert until(lambda: not queued() and not traced_job.no_process_of(ex2), 60), \
            f"left: job {queued()!r}, ranks {traced_job.no_process_of(ex2)}"
        assert until(lambda: not out.exists(), 30), list(out.iterdir())
    finally:
        subprocess.run(["scancel", "-n", name], env=env, capture_output=True, check=False)
        with contextlib.suppress(ProcessLookupError):
            os.kill(trace.pid, signal.SIGKILL)
        trace.wait()
