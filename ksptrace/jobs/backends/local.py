"""The local backend: runs one after the other on this machine, through the harness's mpiexec."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence

from ksptrace.errors import CampaignError, EnvironmentProblem, Interrupted
from ksptrace.harness.launching.lifeline import TOKEN_ENV, Supervised
from ksptrace.harness.launching.mpienv import without_mpi_runtime
from ksptrace.harness.petsc.petscenv import force_solver_env, locate_petsc4py
from ksptrace.jobs import state
from ksptrace.jobs.backends.base import Backend, Progress, Script
from ksptrace.jobs.script import TaskFlavour, render_script
from ksptrace.jobs.spec import SCRIPTS_DIR, CampaignSpec, RunSpec

FLAVOUR = TaskFlavour(
    index_expr='${1:?usage: bash SCRIPT TASK_INDEX}',
    job_expr="local:$(hostname):$$",
    workdir_expr='"$(dirname "$0")/../.."',
)


class LocalBackend(Backend):
    name = "local"
    default_launcher = "local-mpiexec"

    def adapt(self, spec: CampaignSpec) -> CampaignSpec:
        """Without ``ksptrace`` on PATH (a venv not activated), run this Python's ksptrace."""
        if spec.command == ("ksptrace",) and shutil.which("ksptrace") is None:
            return dataclasses.replace(spec, command=(sys.executable, "-m", "ksptrace"))
        return spec

    def check(self, spec: CampaignSpec, runs: Sequence[RunSpec], dry_run: bool) -> None:
        if shutil.which("mpiexec") is None and not os.environ.get("KSPTRACE_MPIEXEC"):
            raise EnvironmentProblem("mpiexec not found on PATH; install openmpi-bin or mpich")
        super().check(spec, runs, dry_run)
        cores = os.cpu_count() or 1
        widest = max((r.nprocs for r in runs), default=0)
        if widest > cores and not spec.oversubscribe:
            raise CampaignError(
                f"{spec.source}: a run needs P={widest} ranks but this machine has {cores} cores; "
                "lower nprocs or set oversubscribe = true in [campaign]")
        if dry_run:
            return
        if shutil.which(spec.command[0]) is None:
            raise EnvironmentProblem(
                f"campaign command '{spec.command[0]}' not found; install ksptrace or set "
                "command = 'python3 -m ksptrace' in [campaign]")

    def render(self, spec: CampaignSpec, runs: Sequence[RunSpec]) -> list[Script]:
        text = render_script(spec, runs, self.launcher(spec), [], FLAVOUR)
        return [Script(f"{SCRIPTS_DIR}/local/{spec.name}.sh", text, tuple(runs))]

    def submit(self, spec: CampaignSpec, scripts: Sequence[Script],
               progress: Progress | None = None) -> list[str]:
        from ksptrace.harness.config.provenance import LAUNCH_ENV  # numpy: not for --help

        env = without_mpi_runtime()
        locate_petsc4py(env)
        force_solver_env(env)
        env[LAUNCH_ENV] = json.dumps({
            "launcher": f"{self.launcher(spec).name} (ksptrace campaign, local backend)",
            "command_line": shlex.join(["ksptrace", "campaign", "run", spec.source,
                                        "--backend", self.name])})
        if self.lock is not None:  # proof, to a runner that finds the lock stale, of our solves
            env[TOKEN_ENV] = self.lock.token
        total = sum(len(s.runs) for s in scripts)
        done = 0
        start = time.monotonic()
        lock = self.lock
        for script in scripts:
            for index, run in enumerate(script.runs):
                state.remove_stale_temporaries(spec.output, run.run_id)
                state.clear_marker(spec.output, run.run_id, "interrupted")
                supervised = Supervised()
                rc, _ = supervised.run(
                    ["bash", str(spec.output / script.path), str(index)], env,
                    stdout=subprocess.DEVNULL,
                    on_start=None if lock is None else lock.record_solve,
                    timeout=spec.scheduler.walltime_seconds,
                )
                if lock is not None:
                    lock.record_solve(None)
                if supervised.interrupted:
                    self._mark_interrupted(spec, run)
                    raise Interrupted(
                        f"campaign {spec.name} interrupted: run {run.run_id} was stopped and "
                        "marked interrupted; rerun the same command to resume"
                    )
                problem = (f"ran past its walltime of {spec.scheduler.walltime_seconds} s "
                           "([scheduler] walltime) and was killed; rerun the same command to "
                           "retry it" if supervised.timed_out else
                           state.check_trace(spec.output, run.run_id, run.nprocs,
                                             run.expected_iterations,
                                             run.kind) if rc == 0 else None)
                if supervised.timed_out:  # killed before its script could say so
                    with contextlib.suppress(OSError):
                        state.remove_stale_temporaries(spec.output, run.run_id)
                        state.clear_marker(spec.output, run.run_id, "running")
                if problem is not None:
                    with contextlib.suppress(OSError):  # a full disk: status says "missing"
                        state.write_marker(spec.output, run.run_id, "failed",
                                           {"job": "local", "rc": rc, "log": run.log,
                                            "reason": problem})
                ok = rc == 0 and problem is None
                done += 1
                if progress is not None:
                    progress(done, total, run, ok, time.monotonic() - start)
        return []

    @staticmethod
    def _mark_interrupted(spec: CampaignSpec, run: RunSpec) -> None:
        """The stopped run is neither done nor failed: a resume reruns it."""
        with contextlib.suppress(OSError):
            state.remove_stale_temporaries(spec.output, run.run_id)
            state.clear_marker(spec.output, run.run_id, "running")
            state.clear_marker(spec.output, run.run_id, "failed")
            state.write_marker(spec.output, run.run_id, "interrupted",
                               {"job": "local", "log": run.log})

    def alive(self, job: str) -> bool | None:
        return state.local_alive(job)
