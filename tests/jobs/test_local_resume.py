"""The local backend with a fast fake harness: resume, retry, corruption, and kills."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ksptrace.jobs import state
from ksptrace.jobs.backends import alive_any, get_backend
from ksptrace.jobs.expand import load_spec
from ksptrace.jobs.runner import run_campaign
from ksptrace.jobs.spec import CampaignSpec
from ksptrace.trace.read import read_trace

Write = Callable[..., Path]
Text = Callable[..., str]


def calls(log: Path) -> list[str]:
    return [line.split()[0] for line in log.read_text().splitlines()]


def states(spec: CampaignSpec) -> dict[str, str]:
    return {s.run_id: s.state for s in state.statuses(spec.output, state.run_dicts(spec),
                                                      alive_any)}


def test_runs_everything_then_skips_what_is_done(
        local_campaign: Text, write_campaign: Write, fake_env: Path) -> None:
    spec = load_spec(write_campaign(local_campaign()))
    seen: list[tuple[int, int, bool]] = []
    outcome = run_campaign(spec, get_backend("local"),
                           progress=lambda d, t, r, ok, s: seen.append((d, t, ok)))
    assert len(outcome.pending) == 4
    assert seen == [(1, 4, True), (2, 4, True), (3, 4, True), (4, 4, True)]
    assert sorted(calls(fake_env)) == sorted(r.run_id for r in spec.runs)
    for r in spec.runs:
        trace = read_trace(spec.output / r.trace)
        assert trace.attrs["run_id"] == r.run_id
        assert trace.attrs["campaign_hash"] == spec.campaign_hash
        assert trace.nprocs == r.nprocs
    assert set(states(spec).values()) == {"done"}

    again = run_campaign(spec, get_backend("local"))
    assert again.pending == ()
    assert again.skipped == 4
    assert len(calls(fake_env)) == 4


def test_failed_run_is_reported_then_retried(
        local_campaign: Text, write_campaign: Write, fake_env: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_spec(write_campaign(local_campaign()))
    bad = spec.runs[1].run_id
    monkeypatch.setenv("FAKE_FAIL", bad)
    run_campaign(spec, get_backend("local"))
    st = states(spec)
    assert st.pop(bad) == "failed"
    assert set(st.values()) == {"done"}
    failure = state.run_status(spec.output, state.run_dicts(spec)[1], alive_any)
    assert failure.log == spec.runs[1].log
    assert "fake failure" in (spec.output / spec.runs[1].log).read_text()

    monkeypatch.delenv("FAKE_FAIL")
    outcome = run_campaign(spec, get_backend("local"))
    assert [r.run_id for r in outcome.pending] == [bad]
    assert calls(fake_env).count(bad) == 2
    assert set(states(spec).values()) == {"done"}
    assert not (spec.output / "state" / f"{bad}.failed").exists()


def test_corrupt_or_foreign_trace_is_rerun(
        local_campaign: Text, write_campaign: Write, fake_env: Path) -> None:
    spec = load_spec(write_campaign(local_campaign()))
    run_campaign(spec, get_backend("local"))
    a, b = spec.runs[0], spec.runs[2]
    (spec.output / a.trace).write_bytes(b"\x89HDF\r\n truncated")
    os.replace(spec.output / spec.runs[3].trace, spec.output / b.trace)  # another run's trace
    st = states(spec)
    assert st[a.run_id] == "failed"
    assert st[b.run_id] == "failed"
    assert st[spec.runs[3].run_id] == "missing"
    outcome = run_campaign(spec, get_backend("local"))
    assert {r.run_id for r in outcome.pending} == {a.run_id, b.run_id, spec.runs[3].run_id}
    assert set(states(spec).values()) == {"done"}


def test_stale_running_marker_of_a_dead_process_is_retried(
        local_campaign: Text, write_campaign: Write, fake_env: Path) -> None:
    spec = load_spec(write_campaign(local_campaign()))
    dead = subprocess.Popen(["true"])
    dead.wait()
    state.write_marker(spec.output, spec.runs[0].run_id, "running",
                       {"job": f"local:{os.uname().nodename}:{dead.pid}", "log": "logs/x"})
    alive_marker = f"local:{os.uname().nodename}:{os.getpid()}"
    state.write_marker(spec.output, spec.runs[1].run_id, "running", {"job": alive_marker})
    st = states(spec)
    assert st[spec.runs[0].run_id] == "failed"
    assert st[spec.runs[1].run_id] == "running"
    outcome = run_campaign(spec, get_backend("local"))
    assert spec.runs[1].run_id not in {r.run_id for r in outcome.pending}
    assert spec.runs[0].run_id in {r.run_id for r in outcome.pending}


def _campaign_cmd(path: Path) -> list[str]:
    return [sys.executable, "-m", "ksptrace", "campaign", "run", str(path), "--backend", "local"]


def test_killed_at_random_moments_then_rerun_completes(
        local_campaign: Text, write_campaign: Write, fake_env: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_campaign(local_campaign(runs_ksp='["gmres", "bcgs", "cg"]', nprocs="[1, 2, 3]"))
    spec = load_spec(path)
    monkeypatch.setenv("FAKE_SLEEP", "0.3")  # the fake holds its temporary file this long
    rng = random.Random(5)
    for _ in range(4):
        proc = subprocess.Popen(_campaign_cmd(path), start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 1.0))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for trace in (spec.output / "traces").glob("*.h5"):  # never a corrupt trace
            read_trace(trace)
    done_before = sum(v == "done" for v in states(spec).values())
    assert done_before < len(spec.runs), "the kills came too late to test anything"
    final = subprocess.run(_campaign_cmd(path), capture_output=True, text=True, check=False)
    assert final.returncode == 0, final.stdout + final.stderr
    assert set(states(spec).values()) == {"done"}
    traces = sorted(p.name for p in (spec.output / "traces").iterdir())
    assert traces == sorted(f"{r.run_id}.h5" for r in spec.runs)  # no duplicates, no leftovers
    assert not list((spec.output / "state").iterdir())


def test_a_run_past_its_walltime_is_killed_marked_failed_and_rerun(
        local_campaign: Text, write_campaign: Write, fake_env: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A local run that never ends (an mpiexec hung at start-up did, once, in the suite) is
    killed at the [scheduler] walltime with its whole group, marked failed with the reason, and
    the same command reruns it."""
    text = local_campaign(runs_ksp='["gmres"]', nprocs="[1]").replace(
        "[scheduler]\n", '[scheduler]\nwalltime = "00:00:02"\n')
    spec = load_spec(write_campaign(text))
    monkeypatch.setenv("FAKE_SLEEP", "600")
    start = time.monotonic()
    run_campaign(spec, get_backend("local"))
    assert time.monotonic() - start < 120  # not the fake's 600 s
    assert set(states(spec).values()) == {"failed"}
    markers = "".join(p.read_text() for p in (spec.output / "state").iterdir())
    assert "ran past its walltime of 2 s" in markers
    left = subprocess.run(["pgrep", "-f", "fake_ksptrace.py"], capture_output=True, text=True,
                          check=False).stdout.split()
    assert left == []  # the fake and its group are gone
    monkeypatch.setenv("FAKE_SLEEP", "0")
    run_campaign(spec, get_backend("local"))
    assert set(states(spec).values()) == {"done"}
