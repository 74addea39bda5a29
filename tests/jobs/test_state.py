"""Run status from the output folder: a run whose job died and was resubmitted is running."""

from __future__ import annotations

from pathlib import Path

from ksptrace.jobs import state


def _run(rid: str = "abc123abc123") -> dict[str, object]:
    return {"run_id": rid, "nprocs": 2, "params": {"iterations": 10}, "log": f"logs/{rid}.log"}


def test_a_dead_job_is_failed_until_the_run_is_queued_again(tmp_path: Path) -> None:
    """A node failure kills the batch script before it can mark the run failed: its running
    marker names a job that is gone. Failed, so a resume reruns it; once resubmitted (its new
    task in the queue) it is running, so a second resume does not submit it twice."""
    run = _run()
    state.write_marker(tmp_path, str(run["run_id"]), "running",
                       {"job": "slurm:12_0", "log": "logs/x.log"})
    gone = state.run_status(tmp_path, run, lambda job: False)
    assert (gone.state, gone.detail) == ("failed", "killed (slurm:12_0 is gone)")
    queued = state.run_status(tmp_path, run, lambda job: False, {str(run["run_id"])})
    assert (queued.state, queued.detail) == ("running", "queued")
    alive = state.run_status(tmp_path, run, lambda job: True)
    assert (alive.state, alive.detail) == ("running", "slurm:12_0")


def test_a_walltime_kill_names_pbs_reason_and_its_output_file(tmp_path: Path) -> None:
    """Issue 66: a walltime kill read like a qdel and pointed to an empty log; PBS's reason is
    in the job's output file, logs/<job id>.OU."""
    run = _run()
    job = "14[0].pbshead"
    state.write_marker(tmp_path, str(run["run_id"]), "running",
                       {"job": f"pbs:{job}", "log": "logs/abc123abc123.log"})
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "abc123abc123.log").write_text("")
    qdel = state.run_status(tmp_path, run, lambda j: False)
    assert (qdel.state, qdel.detail) == ("failed", f"killed (pbs:{job} is gone)")
    (tmp_path / "logs" / f"{job}.OU").write_text(
        "ksptrace: task 0 run abc123abc123 -> logs/abc123abc123.log\n"
        "=>> PBS: job killed: walltime 65 exceeded limit 60\n")
    killed = state.run_status(tmp_path, run, lambda j: False)
    assert (killed.state, killed.detail, killed.log) == (
        "failed", "killed by PBS: walltime 65 exceeded limit 60", f"logs/{job}.OU")


def test_a_run_whose_scheduler_cannot_be_asked_is_unknown_not_running(tmp_path: Path) -> None:
    """Issue 66: with the PBS server down, an interrupted run read "running" and a resume
    said "nothing to do"."""
    run = _run()
    state.write_marker(tmp_path, str(run["run_id"]), "running", {"job": "pbs:14[0].pbshead"})
    row = state.run_status(tmp_path, run, lambda j: None)
    assert row.state == "unknown"
    assert row.detail.startswith("pbs:14[0].pbshead: the scheduler cannot be asked whether it "
                                 "still runs")
    assert "unknown" in state.STATES
