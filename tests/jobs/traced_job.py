"""``ksptrace trace -- srun ... ./ex2`` as a user types it inside a Slurm batch job, and what
must hold of the result: shared by the one-node (scripts/slurm-local.sh) and the two-node
(scripts/cluster-local.sh) tests.

The job script runs ``ksptrace trace`` once; ``srun`` inside it starts PETSc's ex2, unmodified,
with the hook preloaded through ``srun --export=ALL,LD_PRELOAD=...``. ex2's own ``-ksp_monitor``
lines go to the job's stdout and ``trace``'s summary to its stderr, so the two are compared
line for line."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from ksptrace.trace.model import Trace
from ksptrace.trace.read import read_trace
from tests.harness.hook import tutorials

ROOT = Path(__file__).resolve().parents[2]
EX2_ARGS = ("-m", "24", "-n", "24", "-ksp_type", "gmres", "-pc_type", "jacobi",
            "-ksp_monitor")


@dataclass(frozen=True)
class TracedJob:
    job_id: str
    folder: Path
    """The job's folder: job.sh, job.out, job.err, rc and out/ (the traces)."""

    @property
    def out(self) -> Path:
        return self.folder / "out"

    def text(self, name: str) -> str:
        path = self.folder / name
        return path.read_text() if path.exists() else f"(no {name})"


def submit(env: dict[str, str], folder: Path, ex2: Path, nodes: int, srun: list[str]
           ) -> TracedJob:
    """Submit the job: ``ksptrace trace --out out -- srun --mpi=pmix SRUN... ex2 EX2_ARGS``
    with two tasks on ``nodes`` nodes; its exit status is written to ``rc``."""
    trace = [sys.executable, "-m", "ksptrace", "trace", "--out", str(folder / "out"), "--",
             "srun", "--mpi=pmix", *srun, str(ex2), *EX2_ARGS]
    script = folder / "job.sh"
    script.write_text("#!/bin/bash\n"
                      f"cd {shlex.quote(str(folder))}\n"
                      f"{shlex.join(trace)}\n"
                      f"echo $? > {shlex.quote(str(folder / 'rc'))}\n")
    proc = subprocess.run(
        ["sbatch", "--parsable", "--job-name", "trace-ex2", "--ntasks", "2", "--nodes",
         str(nodes), "--time", "00:05:00", "--output", str(folder / "job.out"),
         "--error", str(folder / "job.err"), str(script)],
        env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, check=False,
        timeout=60)
    assert proc.returncode == 0, proc.stderr
    return TracedJob(proc.stdout.strip().split(";")[0], folder)


def wait(job: TracedJob, env: dict[str, str], timeout: float = 240) -> None:
    """Until the job has left the queue (a state, not a guess of its duration)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = subprocess.run(["squeue", "-h", "-j", job.job_id], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode == 0 and not proc.stdout.strip():
            return
        time.sleep(0.5)
    pytest.fail(f"job {job.job_id} still in the queue after {timeout} s: "
                f"{job.text('job.err')[-2000:]}")


def check(job: TracedJob) -> Trace:
    """The job's one trace, checked against ex2's own monitor and the launch it went through;
    nothing of the hook's left in ``out``."""
    err = job.text("job.err")
    assert job.text("rc").strip() == "0", err[-3000:]
    paths = sorted(job.out.iterdir())
    assert [p.suffix for p in paths] == [".h5"], paths  # no raw folder, no private copy
    trace = read_trace(paths[0])
    printed = tutorials.monitor_solves(job.text("job.out"))
    assert len(printed) == 1, job.text("job.out")
    assert trace.solves is not None
    assert trace.solves.iterations.tolist() == [len(printed[0]) - 1]
    assert trace.solves.petsc_iterations.tolist() == [len(printed[0]) - 1]
    assert len(printed[0]) > 10  # a real solve, not a converged start
    np.testing.assert_allclose(trace.residual_norms, printed[0], rtol=5e-12)
    assert trace.nprocs == 2
    assert trace.attrs["problem"] == "ex2"
    assert trace.attrs["ksp"] == "gmres"
    assert trace.attrs["launcher"] == "srun"
    flags = str(trace.attrs["launcher_flags"])
    assert flags.startswith("--export=ALL,LD_PRELOAD="), flags
    assert "KSPTRACE_HOOK_DIR=" in flags
    assert str(trace.attrs["command_line"]).startswith("srun --mpi=pmix ")
    assert str(trace.attrs["slurm_job_id"]) == job.job_id
    assert "foreign_cpu_share" not in trace.attrs
    assert "the machine's load was not measured (srun's ranks" in err
    assert f"{paths[0]}: gmres/jacobi on 2 ranks, 1 solves of" in err
    assert trace.timing_fault() is None
    assert (trace.solves.seconds > 0).all()
    return trace


def no_process_of(ex2: Path) -> list[str]:
    """Processes still running ``ex2`` (none once its job has left the queue)."""
    proc = subprocess.run(["pgrep", "-af", str(ex2)], capture_output=True, text=True,
                          check=False)
    return [ln for ln in proc.stdout.splitlines() if "pgrep" not in ln]


def build_ex2(folder: Path) -> Path:
    why = tutorials.missing()
    if why is not None:
        pytest.fail(why)
    return tutorials.build("ex2", folder)
