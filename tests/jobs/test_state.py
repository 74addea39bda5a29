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
