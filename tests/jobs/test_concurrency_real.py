"""Real processes: two runners on one campaign, runners and launchers killed, Ctrl-C.

The first and third tests use the fast fake harness (tests/data/jobs/fake_ksptrace.py); the
kill tests run real solves under mpiexec, because what matters there is what mpiexec and the
ranks do when their launcher dies.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ksptrace.cli.campaign import status
from ksptrace.harness.launching.lifeline import LAUNCHER_ENV
from ksptrace.jobs import state
from ksptrace.jobs.backends import alive_any
from ksptrace.jobs.expand import load_spec
from ksptrace.jobs.runlock import LOCK
from ksptrace.trace.read import read_trace
from tests.conftest import ROOT, ctrl_c_able, solver_env

Text = Callable[..., str]
Write = Callable[..., Path]


def _campaign_cmd(path: Path) -> list[str]:
    return [sys.executable, "-m", "ksptrace", "campaign", "run", str(path), "--backend", "local"]


def _with_launcher(ident: str) -> list[int]:
    """Pids of processes whose environment names ``ident`` as their launcher."""
    needle = f"{LAUNCHER_ENV}={ident}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_two_runners_started_together_run_each_solve_once(
        local_campaign: Text, write_campaign: Write, fake_env: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_campaign(local_campaign(runs_ksp='["gmres", "bcgs", "cg"]', nprocs="[1, 2]"))
    spec = load_spec(path)
    # The first run of whichever runner takes the lock waits at a gate the test opens only once
    # the other runner has ended: however late that one starts, it meets the lock (a 6 s window
    # of 1 s runs was missed once, on a quiet machine).
    gate = path.parent / "gate"
    monkeypatch.setenv("FAKE_GATE", str(gate))
    procs = [subprocess.Popen(_campaign_cmd(path), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    deadline = time.monotonic() + 120
    while all(p.poll() is None for p in procs):
        assert time.monotonic() < deadline, "neither runner ended within 120 s"
        time.sleep(0.05)
    gate.touch()
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    codes = sorted(r[0] for r in results)
    assert codes[0] == 0, results
    refused = [r for r in results if r[0] != 0]
    assert len(refused) == 1, results  # they started together: the second one is refused
    err_lines = refused[0][2].strip().splitlines()
    assert len(err_lines) == 1
    assert "is being run by pid" in err_lines[0]
    assert "since" in err_lines[0]
    calls = fake_env.read_text().split("\n")[:-1]
    launched = [c.split()[0] for c in calls]
    assert sorted(launched) == sorted(r.run_id for r in spec.runs)  # each exactly once
    rows = state.statuses(spec.output, state.run_dicts(spec), alive_any)
    assert {r.state for r in rows} == {"done"}
    assert not list((spec.output / "state").iterdir())  # no FAILED marker beside a trace
    assert not (spec.output / LOCK).exists()


def test_ctrl_c_stops_the_campaign_marks_the_run_interrupted_and_resume_reruns_it(
        local_campaign: Text, write_campaign: Write, fake_env: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_campaign(local_campaign())
    spec = load_spec(path)
    monkeypatch.setenv("FAKE_SLEEP", "60")  # the signal lands mid-run however loaded we are
    proc = subprocess.Popen(_campaign_cmd(path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_able)
    deadline = time.monotonic() + 60
    while not fake_env.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "interrupted" in err
    assert "1 interrupted" in out  # what stands is printed
    assert len(fake_env.read_text().splitlines()) == 1  # no other run was launched
    rows = {r.run_id: r.state for r in state.statuses(spec.output, state.run_dicts(spec),
                                                      alive_any)}
    assert sorted(rows.values()).count("interrupted") == 1
    assert not list((spec.output / "traces").glob(".*tmp*"))
    monkeypatch.setenv("FAKE_SLEEP", "0")
    again = subprocess.run(_campaign_cmd(path), capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert {r.state for r in state.statuses(spec.output, state.run_dicts(spec),
                                            alive_any)} == {"done"}


def test_a_finished_local_run_is_non_zero_unless_every_run_is_done(
        local_campaign: Text, write_campaign: Write, fake_env: Path, tmp_path: Path) -> None:
    spec = load_spec(write_campaign(local_campaign()))
    spec.output.mkdir()
    state.write_manifest(spec)  # the manifest alone: no trace, no marker (markers unwritable)
    out = tmp_path / "status.txt"
    with out.open("w") as f:
        assert status(spec.output, f) == 0  # 'campaign status': nothing failed
        assert status(spec.output, f, require_done=True) == 1  # a run's end: 4 missing
    assert "0 done" in out.read_text()


@pytest.mark.parametrize("manifest", ["[]", '{"campaign": "x", "runs": 3}',
                                      '{"campaign": "x", "runs": [{"run_id": "a"}]}', "7"])
def test_a_manifest_of_the_wrong_shape_is_one_line(tmp_path: Path, manifest: str) -> None:
    (tmp_path / "manifest.json").write_text(manifest)
    proc = subprocess.run([sys.executable, "-m", "ksptrace", "campaign", "status",
                           str(tmp_path)], capture_output=True, text=True, check=False,
                          cwd=ROOT)
    assert proc.returncode == 7
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "not a campaign manifest" in lines[0]


def _real_campaign(tmp_path: Path) -> Path:
    path = tmp_path / "real.toml"
    path.write_text(f"""
[campaign]
name = "real"
output = "{tmp_path / 'out'}"
[sweep]
problem = "laplace1d"
ksp = ["gmres", "bcgs"]
nprocs = 2
n = 200000
iterations = 4000
""")
    return path


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.usefixtures("require_petsc")
def test_a_runner_killed_then_resumed_at_once_leaves_no_double_run(tmp_path: Path) -> None:
    path = _real_campaign(tmp_path)
    spec = load_spec(path)
    env = solver_env(PYTHONPATH=str(ROOT))
    first = subprocess.Popen(_campaign_cmd(path), env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, cwd=ROOT)
    lock = spec.output / LOCK
    deadline = time.monotonic() + 120
    held: dict[str, object] = {}
    while time.monotonic() < deadline:  # wait until the first solve runs
        if lock.exists():
            held = json.loads(lock.read_text() or "{}")
            if held.get("solve_pgid"):
                break
        time.sleep(0.1)
    assert held.get("solve_pgid"), "the first runner never started a solve"
    time.sleep(1.0)  # mid-solve: mpiexec and its ranks are running
    old = str(held["identity"])
    assert _with_launcher(old), "the solve's processes should name their launcher"
    first.send_signal(signal.SIGKILL)
    first.wait()
    second = subprocess.Popen(_campaign_cmd(path), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the resume takes the lock over...
        now = json.loads(lock.read_text() or "{}") if lock.exists() else {}
        if now.get("identity") not in (None, old):
            break
        time.sleep(0.05)
    time.sleep(0.5)
    # ...and by then nothing of the dead runner's solve is left to run beside its own.
    assert _with_launcher(old) == []
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, out + err
    traces = sorted((spec.output / "traces").iterdir())
    assert [p.name for p in traces] == sorted(f"{r.run_id}.h5" for r in spec.runs)
    for p in traces:
        assert read_trace(p).attr("run_id") == p.stem


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.usefixtures("require_petsc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killed_ksptrace_run_leaves_no_solve_and_no_trace(tmp_path: Path, sig: int) -> None:
    env = solver_env()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ksptrace", "run", "--np", "2", "--n", "200000",
         "--iterations", "20000", "--out", str(tmp_path)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    ident = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and ident is None:
        time.sleep(0.2)
        try:
            stat = Path(f"/proc/{proc.pid}/stat").read_text()
        except OSError:
            break
        candidate = f"{proc.pid}:{stat.rpartition(')')[2].split()[19]}"
        if len(_with_launcher(candidate)) >= 3:  # mpiexec and two ranks
            ident = candidate
    assert ident is not None, "the solve never started"
    time.sleep(1.0)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if sig == signal.SIGTERM:
        assert proc.returncode == 130
        assert "interrupted" in err
    deadline = time.monotonic() + 15
    while _with_launcher(ident) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _with_launcher(ident) == []  # mpiexec and every rank are gone
    time.sleep(3)
    assert list(tmp_path.iterdir()) == []  # no trace, no temporary file
