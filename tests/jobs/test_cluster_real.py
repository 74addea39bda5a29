"""A real 2-node Slurm on this machine (scripts/cluster-local.sh): each node its own network
namespace, hostname and core. Campaigns across nodes, their traces and analysis, and a node
that dies in the middle of a job.

The module starts the cluster once and stops it at the end, then checks that nothing is left:
no namespace, no bridge, no daemon. Where the cluster cannot run (not root, no network
namespaces, no cgroup filesystem) the tests skip with the script's reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from ksptrace.cli.main import main
from ksptrace.trace.read import read_trace
from tests.jobs.local_network import network_leftovers, run_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "cluster-local.sh"
CLUSTER_DIR = "/tmp/ksptrace-cluster"
CANNOT_RUN = 3
FAIL_BOUND_S = 60.0
"""A job that loses a node must end within this (SlurmdTimeout is 10 s; it took 18.8 s)."""

pytestmark = [pytest.mark.slurm, pytest.mark.mpi, pytest.mark.cluster]


def _script(*args: str, env: dict[str, str] | None = None, timeout: float = 300
            ) -> subprocess.CompletedProcess[str]:
    return run_script(SCRIPT, *args, env=env, timeout=timeout)


def leftovers() -> list[str]:
    """Anything of the cluster's still on the machine: namespaces, links, processes."""
    found = network_leftovers("ksptrace-node", "kspbr0", "kspveth")
    procs = subprocess.run(["pgrep", "-af", CLUSTER_DIR], capture_output=True, text=True,
                           check=False)
    found += [f"process {ln}" for ln in procs.stdout.splitlines() if "pgrep" not in ln]
    return found


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, str]]:
    """The cluster's client environment (SLURM_CONF, Open MPI's TCP/vader settings)."""
    if os.geteuid() != 0:
        pytest.skip("the local cluster needs root (network namespaces, a bridge)")
    was_up = "slurmctld running (" in _script("status").stdout
    proc = _script("start", "--nodes", "2")
    if proc.returncode != 0:
        _script("stop")
        why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        why = why.removeprefix("cluster-local: error: ")
        if proc.returncode == CANNOT_RUN:
            pytest.skip(f"the local cluster cannot run here: {why}")
        pytest.fail(f"scripts/cluster-local.sh start failed (exit {proc.returncode}): {why}")
    env = dict(os.environ)
    for line in _script("env").stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})
    yield env
    if not was_up:
        stop = _script("stop")
        assert stop.returncode == 0, stop.stderr
        assert leftovers() == []


@pytest.fixture
def client(cluster: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for key, value in cluster.items():
        monkeypatch.setenv(key, value)
    return cluster


CAMPAIGN = """
[campaign]
name = "{name}"
output = "out"
command = '{python} -m ksptrace'

[sweep]
ksp = "gmres"
nprocs = {nprocs}
n = 20000
iterations = {iterations}

[scheduler]
walltime = "00:05:00"
nodes = 2
ranks_per_node = {per_node}
exclusive = false
max_parallel = 1
"""


def _submit(tmp_path: Path, name: str, nprocs: str, iterations: int, per_node: int = 2
            ) -> tuple[Path, Path, str]:
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(name=name, python=sys.executable, nprocs=nprocs,
                                    iterations=iterations, per_node=per_node))
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    out = tmp_path / "out"
    subs = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    return path, out, str(subs[-1]["job_id"])


def _gone(job: str, env: dict[str, str], timeout: float = 180) -> float:
    """Seconds until the job has left the queue."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        proc = subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True,
                              text=True, check=False)
        if not proc.stdout.strip():
            return time.monotonic() - start
        time.sleep(0.25)
    pytest.fail(f"job {job} still in the queue after {timeout} s")


def test_a_two_node_job_array_is_traced_and_analysed_across_nodes(
        client: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """P = 2, 4, 8 on 2 nodes of one core each (1, 2, 4 ranks per node): one job array."""
    _, out, job = _submit(tmp_path, "twonode", "[2, 4, 8]", 300, per_node=4)
    _gone(job, client)
    assert main(["campaign", "status", str(out)]) == 0
    assert "3 runs: 3 done" in capsys.readouterr().out
    traces = sorted((out / "traces").glob("*.h5"))
    by_p = {t.nprocs: t for t in map(read_trace, traces)}
    assert sorted(by_p) == [2, 4, 8]
    for nprocs, t in by_p.items():
        half = nprocs // 2
        assert list(t.node_ids) == [0] * half + [1] * half
        assert t.hostnames == ("node1",) * half + ("node2",) * half
        assert t.attrs["n_nodes"] == 2
        assert t.attrs["ranks_per_node"] == half
        assert str(t.attrs["slurm_array_job_id"]) == job
        # Each node is one core: two or more ranks on it are oversubscribed, and flagged.
        assert bool(t.attrs["oversubscribed"]) == (half > 1)

    report = tmp_path / "report"
    assert main(["analyze", *map(str, traces), "--out", str(report), "--quiet"]) == 0
    summary = json.loads((report / "summary.json").read_text())
    assert sorted((t["nprocs"], t["n_nodes"], t["independent_units"])
                  for t in summary["traces"]) == [(2, 2, 2.0), (4, 2, 2.0), (8, 2, 2.0)]
    table = pd.read_csv(report / "variability.csv")
    assert list(table["N"]) == [2.0, 2.0, 2.0]
    assert table["var_between_all_k_s2"].notna().all()
    assert (table["var_between_all_k_s2"] > 0).all()
    assert table["mean_var_within_all_k_s2"].notna().all()
    for run_page in sorted((report / "runs").glob("run-*.html")):  # each run's own page
        html = run_page.read_text()
        assert "Within- and between-node variance" in html
        assert "one node: no between-node variance" not in html


def _wait_for_a_rank_on_node2() -> None:
    """Until a ksptrace rank runs in node2's namespace, then 2 s more (it is solving)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pids = subprocess.run(["ip", "netns", "pids", "ksptrace-node2"], capture_output=True,
                              text=True, check=False).stdout.split()
        if any("ksptrace" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")
               for p in pids if Path(f"/proc/{p}/cmdline").exists()):
            break
        time.sleep(0.2)
    else:
        pytest.fail("the job's rank never started on node2")
    time.sleep(2)


def _resume_completes(path: Path, out: Path, client: dict[str, str],
                      capsys: pytest.CaptureFixture[str]) -> None:
    """A resume of the campaign submits the failed run again and it ends done, on both nodes."""
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    subs = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    assert len(subs) == 2
    _gone(str(subs[-1]["job_id"]), client)
    capsys.readouterr()
    assert main(["campaign", "status", str(out)]) == 0
    assert "1 runs: 1 done" in capsys.readouterr().out
    (trace,) = map(read_trace, (out / "traces").glob("*.h5"))
    assert trace.hostnames == ("node1", "node2")
    assert str(trace.attrs["slurm_array_job_id"]) == str(subs[-1]["job_id"])


def test_a_node_that_dies_fails_the_run_and_a_resume_reruns_it(
        client: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Crash node2 (every process in its namespace killed: slurmd, slurmstepd, its ranks)
    while a 2-node solve runs. The job ends within FAIL_BOUND_S, the run is failed (not done),
    no trace is published; once the node is back, a resume reruns it to a valid trace."""
    path, out, job = _submit(tmp_path, "nodefail", "2", 30000)
    _wait_for_a_rank_on_node2()
    crash = _script("kill-node", "node2", env=client)
    assert crash.returncode == 0, crash.stderr
    took = _gone(job, client)
    with capsys.disabled():
        print(f"\nthe job ended {took:.1f} s after node2 died", file=sys.stderr)
    assert took < FAIL_BOUND_S
    capsys.readouterr()
    assert main(["campaign", "status", str(out)]) == 1  # 1: some runs failed
    status = capsys.readouterr().out
    assert "1 runs: 0 done, 0 running, 1 failed" in status, status
    assert list((out / "traces").glob("*.h5")) == []
    sinfo = subprocess.run(["sinfo", "-h", "-n", "node2", "-o", "%T"], env=client,
                           capture_output=True, text=True, check=False).stdout
    assert sinfo.strip().startswith("down"), sinfo

    # A slurmd that exits at start-up is started twice more, then its reason is the error; the
    # failed start stops only what it started (node1 and slurmctld stay up).
    bad = tmp_path / "bad.conf"
    bad.write_text("ThisIsNotASlurmOption=1\n")
    refused = _script("start", "--nodes", "2",
                      env={**client, "KSPTRACE_CLUSTER_SLURMD_CONF": str(bad)})
    assert refused.returncode == CANNOT_RUN, refused.stderr
    again = ("slurmd of node2 exited at start-up (slurmd: fatal: Unable to process configuration "
             "file); starting it again")
    assert refused.stderr.count(again) == 2, refused.stderr
    assert refused.stderr.strip().endswith(
        "slurmd of node2 exited at start-up (3 tries): slurmd: fatal: Unable to process "
        "configuration file"), refused.stderr
    status = _script("status", env=client).stdout
    assert "slurmctld running (" in status, status
    assert "slurmd of node1 running (" in status, status
    assert "slurmd of node2 running" not in status, status

    back = _script("start", "--nodes", "2", env=client)
    assert back.returncode == 0, back.stderr
    _resume_completes(path, out, client, capsys)


def test_a_node_cut_off_the_network_fails_the_run_and_comes_back(
        client: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Take node2's link down while a 2-node solve runs (its processes live on, unreachable).
    The job ends within FAIL_BOUND_S, the run is failed with no trace; once the link is up,
    node2 registers again by itself (ReturnToService=2) and a resume completes the run."""
    path, out, job = _submit(tmp_path, "linkcut", "2", 30000)
    _wait_for_a_rank_on_node2()
    cut = _script("cut-link", "node2", env=client)
    assert cut.returncode == 0, cut.stderr
    try:
        took = _gone(job, client)
        with capsys.disabled():
            print(f"\nthe job ended {took:.1f} s after node2 was cut off", file=sys.stderr)
        assert took < FAIL_BOUND_S
        capsys.readouterr()
        assert main(["campaign", "status", str(out)]) == 1
        status = capsys.readouterr().out
        assert "1 runs: 0 done, 0 running, 1 failed" in status, status
        assert list((out / "traces").glob("*.h5")) == []
    finally:
        back = _script("restore-link", "node2", env=client)
        assert back.returncode == 0, back.stderr
    deadline = time.monotonic() + 120
    state = ""
    while time.monotonic() < deadline:
        state = subprocess.run(["sinfo", "-h", "-n", "node2", "-o", "%T"], env=client,
                               capture_output=True, text=True, check=False).stdout.strip()
        if state in ("idle", "mixed", "allocated"):
            break
        time.sleep(0.5)
    assert state == "idle", f"node2 is {state!r} two minutes after its link came back"
    _resume_completes(path, out, client, capsys)


def test_open_mpi_needs_tcp_between_the_nodes(client: dict[str, str]) -> None:
    """The nodes share no memory as far as Open MPI knows: with shared memory only (vader) a
    2-node job cannot start; with the cluster's settings (TCP over the bridge) it runs."""
    probe = [sys.executable, "-c", "from mpi4py import MPI; c = MPI.COMM_WORLD; "
             "print(c.allreduce(1), MPI.Get_processor_name())"]
    srun = ["srun", "--mpi=pmix", "-N2", "--ntasks-per-node=1", *probe]
    ok = subprocess.run(srun, env=client, capture_output=True, text=True, check=False,
                        timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert sorted(ok.stdout.split()) == ["2", "2", "node1", "node2"]
    shm_only = subprocess.run(srun, env={**client, "OMPI_MCA_btl": "self,vader"},
                              capture_output=True, text=True, check=False, timeout=120)
    assert shm_only.returncode != 0


def test_no_cgroup_filesystem_is_a_reason_to_skip(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the local cluster needs root")
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\ntmpfs /sys/fs/cgroup tmpfs rw 0 0\n")
    env = {**os.environ, "KSPTRACE_CLUSTER_DIR": str(tmp_path / "c"),
           "KSPTRACE_CLUSTER_MOUNTS": str(mounts), "KSPTRACE_CLUSTER_PORT": "6937"}
    proc = _script("start", env=env)
    assert proc.returncode == CANNOT_RUN
    assert proc.stderr.strip() == (f"cluster-local: error: no cgroup filesystem in {mounts}: "
                                   "slurmd of Slurm 22.05 cannot start")
    assert not (tmp_path / "c").exists()


PROGRAM_CAMPAIGN = """
[campaign]
name = "progtwonode"
kind = "program"
output = "out"
command = '{python} -m ksptrace'

[program]
command = ["{ex2}", "-m", "16", "-n", "16", "-ksp_type", "cg"]

[sweep]
nprocs = 2

[scheduler]
walltime = "00:05:00"
nodes = 2
ranks_per_node = 1
exclusive = false
"""


def test_a_program_campaign_runs_across_two_nodes(
        client: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PETSc's ex2, unmodified, traced by a program campaign with one rank on each node."""
    from tests.harness.hook import tutorials

    why = tutorials.missing()
    if why is not None:
        pytest.fail(why)
    path = tmp_path / "c.toml"
    path.write_text(PROGRAM_CAMPAIGN.format(python=sys.executable,
                                            ex2=tutorials.build("ex2", tmp_path)))
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    out = tmp_path / "out"
    (sub,) = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    _gone(str(sub["job_id"]), client)
    capsys.readouterr()
    assert main(["campaign", "status", str(out)]) == 0
    assert "1 runs: 1 done" in capsys.readouterr().out
    (trace,) = map(read_trace, (out / "traces").glob("*/*.h5"))
    assert trace.hostnames == ("node1", "node2")
    assert list(trace.node_ids) == [0, 1]
    assert str(trace.attrs["slurm_array_job_id"]) == str(sub["job_id"])


def test_trace_runs_ex2_under_srun_across_two_nodes(
        client: dict[str, str], tmp_path: Path) -> None:
    """``ksptrace trace -- srun --mpi=pmix -N2 --ntasks-per-node=1 ./ex2 -ksp_monitor`` in a job
    script: one rank on each node, the hook preloaded on both through srun, the raw records
    written on the shared file system; counts and norms are ex2's monitor's (issue 64)."""
    from tests.jobs import traced_job

    ex2 = traced_job.build_ex2(tmp_path)
    job = traced_job.submit(client, tmp_path, ex2, 2, ["-N2", "--ntasks-per-node=1"])
    traced_job.wait(job, client)
    trace = traced_job.check(job)
    assert trace.hostnames == ("node1", "node2")
    assert list(trace.node_ids) == [0, 1]
    assert traced_job.no_process_of(ex2) == []
