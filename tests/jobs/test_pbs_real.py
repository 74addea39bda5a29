"""A real OpenPBS on this machine (scripts/pbs-local.sh), not a mock: qsub, qstat, qdel.

The module starts PBS once with two nodes (each MoM its own network namespace, hostname and
core), runs campaigns and analysis arrays through it, and ends by stopping it and checking that
nothing is left: no daemon, no postgres, no namespace, no link, no listening port. PBS is built
from the vendored source on first use (a few minutes, once per machine; scripts/bootstrap.sh
--test builds it beforehand). Where PBS cannot run (not root, no network namespaces, PostgreSQL
missing, the source not found) the tests skip with the script's reason."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.jobs.backends.pbs import job_states, live
from ksptrace.trace.read import read_trace
from tests.jobs.local_network import network_leftovers, run_script
from tests.jobs.test_analysis_jobs import FAST, traces

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "pbs-local.sh"
INSTANCE = f"t{os.getpid() % 10**6}"
"""The suite's own local PBS (issue 66: the default instance is a user's, never stopped here)."""
OWN = {"KSPTRACE_PBS_INSTANCE": INSTANCE, "KSPTRACE_PBS_NET": f"10.78.{100 + os.getpid() % 100}"}
OTHER = {"KSPTRACE_PBS_INSTANCE": INSTANCE + "b",
         "KSPTRACE_PBS_NET": f"10.78.{200 + os.getpid() % 50}"}
PBS_HOME = f"/var/spool/pbs-ksptrace-{INSTANCE}"
CANNOT_RUN = 3

pytestmark = [pytest.mark.pbs, pytest.mark.mpi]


def _script(*args: str, env: dict[str, str] | None = None, timeout: float = 300,
            instance: dict[str, str] = OWN) -> subprocess.CompletedProcess[str]:
    return run_script(SCRIPT, *args, env={**(env or os.environ), **instance}, timeout=timeout)


def leftovers(instance: dict[str, str] = OWN) -> list[str]:
    """Anything of this instance of the local PBS still on this machine: namespaces, links,
    processes (a daemon or client started with its conf, or its PostgreSQL, whose data lie in
    its PBS_HOME), ports. Another instance (a user's) is not looked at."""
    name = instance["KSPTRACE_PBS_INSTANCE"]
    found = network_leftovers(f"ksptrace-pbsi-{name}-", f"kspb-{name}:", f"kspv{name}")
    conf = f"PBS_CONF_FILE=/tmp/ksptrace-pbs-{name}/".encode()
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            env = (proc / "environ").read_bytes()
        except OSError:
            continue
        if f"/var/spool/pbs-ksptrace-{name}/" in cmd or conf in env:
            found.append(f"process {proc.name}: {cmd.strip()}")
    return found


@pytest.fixture(scope="module")
def pbs() -> Iterator[dict[str, str]]:
    """The environment of PBS's clients (the wrappers first on PATH, Open MPI's settings)."""
    if os.geteuid() != 0:
        pytest.skip("the local PBS needs root (network namespaces, setuid pbs_iff)")
    proc = _script("start", "--nodes", "2", timeout=3600)  # builds PBS on first use, once
    if proc.returncode != 0:
        _script("stop")
        why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        why = why.removeprefix("pbs-local: error: ")
        if proc.returncode == CANNOT_RUN:
            pytest.skip(f"the local PBS cannot run here: {why}")
        pytest.fail(f"scripts/pbs-local.sh start failed (exit {proc.returncode}): {why}")
    env = dict(os.environ)
    for line in _script("env").stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value.replace("$PATH", os.environ["PATH"])
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})
    yield env
    _script("stop")  # test_stop_leaves_nothing has stopped it already, unless it failed first
    for instance in (OWN, OTHER):  # this run's instances are its own: no folder is left
        name = instance["KSPTRACE_PBS_INSTANCE"]
        if not leftovers(instance):
            shutil.rmtree(f"/tmp/ksptrace-pbs-{name}", ignore_errors=True)
            shutil.rmtree(f"/var/spool/pbs-ksptrace-{name}", ignore_errors=True)


@pytest.fixture
def client(pbs: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for key, value in pbs.items():
        monkeypatch.setenv(key, value)
    return pbs


def _gone(job: str, timeout: float = 300) -> float:
    """Seconds until PBS no longer holds the job (or any of its subjobs) waiting or running."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        states = job_states(job)
        assert states is not None, f"qstat cannot tell about {job}"
        if not any(live(s) for s in states.values()):
            return time.monotonic() - start
        time.sleep(0.5)
    pytest.fail(f"job {job} still queued or running after {timeout} s")


CAMPAIGN = """
[campaign]
name = "{name}"
output = "out"

[sweep]
ksp = {ksp}
nprocs = {nprocs}
n = 4000
iterations = {iterations}

[scheduler]
walltime = "00:05:00"
exclusive = false
{extra}
"""


def _submit(tmp_path: Path, name: str, ksp: str = '"gmres"', nprocs: str = "1",
            iterations: int = 40, extra: str = "") -> tuple[Path, Path, str]:
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(name=name, ksp=ksp, nprocs=nprocs, iterations=iterations,
                                    extra=extra))  # the default command (issue 66)
    assert main(["campaign", "run", str(path), "--backend", "pbs"]) == 0
    out = tmp_path / "out"
    subs = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    return path, out, str(subs[-1]["job_id"])


def test_a_four_run_campaign_through_qsub_j(client: dict[str, str], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    start = time.monotonic()
    path, out, job = _submit(tmp_path, "pbsfour", '["gmres", "cg"]', "[1, 2]",
                             extra="ranks_per_node = 2")
    assert job.split(".")[0].endswith("[]"), f"{job} is not an array job"
    script = (out / "scripts" / "pbs" / "pbsfour-N1.pbs").read_text()
    assert "#PBS -J 0-3" in script
    assert "#PBS -l select=1:ncpus=2:mpiprocs=2" in script
    _gone(job)
    took = time.monotonic() - start
    with capsys.disabled():
        print(f"\n4 runs through PBS: {took:.1f} s from qsub to the last subjob's end",
              file=sys.stderr)
    capsys.readouterr()
    assert main(["campaign", "status", str(out)]) == 0
    assert "4 runs: 4 done" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    by_id = {r["run_id"]: r for r in manifest["runs"]}
    sub = json.loads((out / "submissions.jsonl").read_text())
    for index, run_id in enumerate(sub["runs"]):
        trace = read_trace(out / by_id[run_id]["trace"])
        assert trace.nprocs == by_id[run_id]["nprocs"]
        assert str(trace.attrs["pbs_array_id"]) == job
        assert str(trace.attrs["pbs_array_index"]) == str(index)
        assert str(trace.attrs["pbs_jobid"]) == job.replace("[]", f"[{index}]")
        assert trace.attrs["run_id"] == run_id
    # PBS's own log of each subjob (-o logs/ -j oe): <subjob id>.OU
    assert sorted(p.name for p in (out / "logs").glob("*.OU")) == sorted(
        f"{job.replace('[]', f'[{i}]')}.OU" for i in range(4))
    assert main(["campaign", "run", str(path), "--backend", "pbs"]) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_a_job_killed_with_qdel_is_resumed(client: dict[str, str], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    # Long enough to be caught running on an idle machine: 20,000 iterations took 0.74 s
    # there, and the job had ended before qdel once; 200,000 take about 7 s.
    path, out, job = _submit(tmp_path, "pbskill", iterations=200_000)
    deadline = time.monotonic() + 180
    while not list((out / "state").glob("*.running")):  # the job has started its run
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.2)
    capsys.readouterr()
    assert main(["campaign", "status", str(out)]) == 0
    assert "1 runs: 0 done, 1 running" in capsys.readouterr().out
    qdel = subprocess.run(["qdel", job], capture_output=True, text=True, check=False)
    assert qdel.returncode == 0, qdel.stderr
    _gone(job)
    assert main(["campaign", "status", str(out)]) == 1
    status = capsys.readouterr().out
    assert "1 runs: 0 done, 0 running, 1 failed" in status, status
    assert f"killed (pbs:{job} is gone)" in status, status
    assert list((out / "traces").glob("*.h5")) == []
    # the job's TMPDIR, which qdel may leave behind (with job history on, the MoM sometimes
    # removes it), is the instance's (stop empties it), never /var/tmp/pbs.<job id> (issue 66)
    assert not Path(f"/var/tmp/pbs.{job}").exists()

    assert main(["campaign", "run", str(path), "--backend", "pbs"]) == 0
    subs = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    assert len(subs) == 2
    assert subs[1]["runs"] == subs[0]["runs"]
    _gone(str(subs[1]["job_id"]), timeout=600)
    capsys.readouterr()
    assert main(["campaign", "status", str(out)]) == 0
    assert "1 runs: 1 done" in capsys.readouterr().out
    (trace,) = map(read_trace, (out / "traces").glob("*.h5"))
    assert str(trace.attrs["pbs_jobid"]) == subs[1]["job_id"]


def test_the_analysis_as_a_pbs_array_and_a_merge_job(
        client: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = traces(tmp_path / "t", 3)
    out = tmp_path / "report"
    assert main(["analyze", *paths, "--out", str(out), "--backend", "pbs",
                 "--walltime", "00:05:00", *FAST]) == 0
    text = capsys.readouterr().out
    assert "submitted 3 trace analyses as array job(s)" in text
    array = text.split("array job(s) ")[1].split(" and the merge")[0].strip(" ,")
    merge = text.split("the merge as job ")[1].split(",")[0].strip()
    assert array.split(".")[0].endswith("[]")
    depend = subprocess.run(["qstat", "-f", "-F", "json", merge], capture_output=True,
                            text=True, check=False)
    if depend.returncode == 0:  # still waiting for the array: it says on what
        held = json.loads(depend.stdout)["Jobs"][merge]
        assert f"afterany:{array}" in held.get("depend", ""), held
    _gone(array)
    _gone(merge)
    logs = Path(f"{out}.jobs") / "logs"
    merge_log = (logs / f"{merge}.OU").read_text()
    assert (out / "report.html").exists(), merge_log
    assert "3 traces analysed" in merge_log
    assert len(list(Path(f"{out}.cache").glob("*.pkl"))) == 3  # by the array's subjobs
    local = tmp_path / "local"
    assert main(["analyze", *paths, "--out", str(local), "--no-cache", "--quiet", *FAST]) == 0
    a = json.loads((out / "summary.json").read_text())
    b = json.loads((local / "summary.json").read_text())
    for s in (a, b):
        s["metadata"].pop("created")
    assert a == b


def test_a_two_node_run_spans_both_moms(client: dict[str, str], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    start = time.monotonic()
    _, out, job = _submit(tmp_path, "pbstwo", nprocs="2", iterations=200,
                          extra="nodes = 2\nranks_per_node = 1")
    script = (out / "scripts" / "pbs" / "pbstwo-N2-R1.pbs").read_text()
    assert "#PBS -l select=2:ncpus=1:mpiprocs=1" in script
    _gone(job)
    with capsys.disabled():
        print(f"\na 2-node run through PBS: {time.monotonic() - start:.1f} s", file=sys.stderr)
    capsys.readouterr()
    assert main(["campaign", "status", str(out)]) == 0, capsys.readouterr().out
    (trace,) = map(read_trace, (out / "traces").glob("*.h5"))
    assert trace.hostnames == ("pbsnode1", "pbsnode2")
    assert trace.attrs["n_nodes"] == 2
    assert str(trace.attrs["pbs_jobid"]) == job


def test_a_failed_start_of_another_instance_leaves_nothing_and_this_one_running(
        client: dict[str, str]) -> None:
    """A second instance beside this one (issue 66: the names were fixed, so one instance's
    failed start tore down another's): its start fails after its network and head are up (qmgr
    refuses a bad ncpus), says why in one line, exits 3 ("cannot run here"), stops what it
    started, and this instance's nodes stay free."""
    proc = _script("start", env={**os.environ, "KSPTRACE_PBS_CPUS": "many"}, instance=OTHER)
    assert proc.returncode == CANNOT_RUN, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert errors == ["pbs-local: error: qmgr -c 'set node pbsnode1 resources_available.ncpus = "
                      "many' failed: Illegal attribute or resource value "
                      "resources_available.ncpus"], proc.stderr
    assert leftovers(OTHER) == []
    assert _script("stop", instance=OTHER).returncode == 0  # another's stop: not ours either
    nodes = subprocess.run(["pbsnodes", "-a"], env=client, capture_output=True, text=True,
                           check=False, timeout=120)
    assert nodes.stdout.count("state = free") == 2, nodes.stdout + nodes.stderr


def test_a_second_instance_runs_beside_and_a_smaller_restart_leaves_no_node_down(
        client: dict[str, str]) -> None:
    """Two local PBS at once (issue 66), and a 1-node start after a 2-node one: pbsnode2,
    kept in the datastore, stayed down, and a 2-node campaign waited forever."""
    for nodes in ("2", "1"):
        proc = _script("start", "--nodes", nodes, instance=OTHER, timeout=600)
        assert proc.returncode == 0, proc.stderr
    env = dict(os.environ)
    for line in _script("env", instance=OTHER).stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value.replace("$PATH", os.environ["PATH"])
    try:
        other = subprocess.run(["pbsnodes", "-a"], env=env, capture_output=True, text=True,
                               check=False, timeout=120)
        assert [ln for ln in other.stdout.splitlines() if ln.startswith("pbsnode")] == \
            ["pbsnode1"], other.stdout + other.stderr
        assert "state = free" in other.stdout
        ours = subprocess.run(["pbsnodes", "-a"], env=client, capture_output=True, text=True,
                              check=False, timeout=120)
        assert ours.stdout.count("state = free") == 2, ours.stdout + ours.stderr
    finally:
        assert _script("stop", instance=OTHER).returncode == 0
    assert leftovers(OTHER) == []


def test_stop_leaves_nothing(pbs: dict[str, str]) -> None:
    """Last in the module: no daemon, postgres, namespace, link or port is left."""
    assert leftovers() != []  # the check sees a running PBS
    jobtmp = Path(f"/tmp/ksptrace-pbs-{INSTANCE}/jobtmp")  # the jobs' TMPDIR (issue 66: a
    assert jobtmp.is_dir()  # qdel left /var/tmp/pbs.<job id>)
    stop = _script("stop")
    assert stop.returncode == 0, stop.stderr
    assert leftovers() == []
    assert list(jobtmp.iterdir()) == []


def test_the_run_folder_is_never_reached_through_a_link(tmp_path: Path) -> None:
    """Issue 66: as root, a symbolic link planted at the run folder was followed ([ -O ]
    follows links), its target chmod 755'd and filled with conf files PBS sources as shell."""
    if os.geteuid() != 0:
        pytest.skip("pbs-local.sh start needs root")
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    planted = tmp_path / "run"
    planted.symlink_to(target)
    proc = _script("start", env={**os.environ, "KSPTRACE_PBS_DIR": str(planted)},
                   instance={**OTHER, "KSPTRACE_PBS_INSTANCE": INSTANCE + "c"})
    assert proc.returncode == 1, proc.stderr
    assert f"pbs-local: error: {planted} is not a folder of root that only it can write" \
        in proc.stderr
    assert list(target.iterdir()) == []
    assert target.stat().st_mode & 0o777 == 0o700
    assert leftovers({"KSPTRACE_PBS_INSTANCE": INSTANCE + "c"}) == []


def test_a_world_writable_pbs_home_is_refused_before_anything_starts(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("pbs-local.sh start needs root")
    home = tmp_path / "open" / "pbs"
    home.parent.mkdir()
    home.parent.chmod(0o777)
    proc = _script("start", env={**os.environ, "KSPTRACE_PBS_HOME": str(home)},
                   instance=OTHER)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        f"pbs-local: error: {home.parent} is world-writable: pbs_mom refuses a PBS_HOME under "
        "it; set KSPTRACE_PBS_HOME to a private path such as /var/spool/pbs-ksptrace")
    assert not home.exists()
