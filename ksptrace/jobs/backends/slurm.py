"""The Slurm backend: job arrays per node count, a task per run, sbatch --parsable.

An array holds at most ``max_array_size`` tasks (Slurm refuses indices at or above its
MaxArraySize, 1001 by default), so a larger group of runs becomes several scripts, each an array
numbered from 0 whose header names its offset in the group."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from itertools import groupby
from pathlib import Path

from ksptrace.errors import CampaignError
from ksptrace.harness.launching.mpienv import without_mpi_runtime
from ksptrace.jobs import state
from ksptrace.jobs.backends.base import Backend, Progress, Script, SubmissionRejected
from ksptrace.jobs.schema import format_walltime
from ksptrace.jobs.script import TaskFlavour, render_script
from ksptrace.jobs.spec import LOGS_DIR, SCRIPTS_DIR, CampaignSpec, RunSpec

FLAVOUR = TaskFlavour(
    index_expr="${SLURM_ARRAY_TASK_ID:?submit this script with sbatch, it is a job array}",
    job_expr="slurm:${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-}}_${SLURM_ARRAY_TASK_ID:-}",
    workdir_expr='"${SLURM_SUBMIT_DIR:-.}"',
)


def shape(spec: CampaignSpec, nprocs: int) -> tuple[int, int]:
    """(nodes, ranks per node) of a run's allocation. Ranks per node is 0 without the ``nodes``
    key (the array asks for its widest run's), and ``ranks_per_node`` when that is set."""
    s = spec.scheduler
    if s.node_count is None:
        return s.nodes(nprocs), 0
    return s.node_count, s.ranks_per_node or s.ranks_per_node_for(nprocs)


def by_nodes(spec: CampaignSpec, runs: Sequence[RunSpec]
             ) -> list[tuple[tuple[int, int], list[RunSpec]]]:
    """Runs grouped by allocation shape (an array's tasks share one): by node count, and with
    the ``nodes`` key also by ranks per node, so that every node of a run holds its share."""
    ordered = sorted(runs, key=lambda r: (shape(spec, r.nprocs), r.index))
    return [(k, list(g)) for k, g in groupby(ordered, key=lambda r: shape(spec, r.nprocs))]


def split(spec: CampaignSpec, runs: Sequence[RunSpec]
          ) -> list[tuple[int, list[RunSpec], tuple[int, int, int] | None, str]]:
    """(nodes, runs, part, file name suffix) of each array: by shape, then in chunks of at most
    ``max_array_size``; ``part`` (offset, number, parts) is None for a whole group."""
    out: list[tuple[int, list[RunSpec], tuple[int, int, int] | None, str]] = []
    size = spec.scheduler.max_array_size
    for (nodes, per_node), group in by_nodes(spec, runs):
        base = f"-N{nodes}" + (f"-R{per_node}" if per_node else "")
        chunks = spec.scheduler.chunks(group)
        if len(chunks) == 1:
            out.append((nodes, group, None, base))
            continue
        width = len(str(len(chunks)))
        for number, chunk in enumerate(chunks, start=1):
            out.append((nodes, chunk, ((number - 1) * size, number, len(chunks)),
                        f"{base}-{number:0{width}d}"))
    return out


def parse_job_id(stdout: str) -> str:
    """``sbatch --parsable`` prints ``id`` or ``id;cluster``; anything else is an error."""
    job = stdout.strip().split(";")[0].strip()
    if not re.fullmatch(r"\d+", job):
        raise CampaignError(f"sbatch printed no job id (got {stdout.strip()!r}); check "
                            "'squeue --me' before resubmitting, to avoid duplicate jobs")
    return job


class SlurmBackend(Backend):
    name = "slurm"
    default_launcher = "srun"
    submit_program = "sbatch"

    def directives(self, spec: CampaignSpec, nodes: int, runs: Sequence[RunSpec]) -> list[str]:
        s = spec.scheduler
        per_node = s.allocation_ranks_per_node(runs)
        array = f"0-{len(runs) - 1}" + (f"%{s.max_parallel}" if s.max_parallel else "")
        lines = [
            f"--job-name={spec.name}",
            f"--nodes={nodes}",
            f"--ntasks-per-node={per_node}",
            f"--time={format_walltime(s.walltime_seconds)}",
            f"--output={LOGS_DIR}/%x-%A_%a.out",
            f"--array={array}",
        ]
        if s.exclusive:
            lines.append("--exclusive")
        lines += s.site_lines("slurm")
        return ["#SBATCH " + line for line in lines]

    def render(self, spec: CampaignSpec, runs: Sequence[RunSpec]) -> list[Script]:
        out = []
        for nodes, group, part, suffix in split(spec, runs):
            text = render_script(spec, group, self.launcher(spec),
                                 self.directives(spec, nodes, group), FLAVOUR, part)
            out.append(Script(f"{SCRIPTS_DIR}/slurm/{spec.name}{suffix}.sbatch", text,
                              tuple(group)))
        return out

    def submit(self, spec: CampaignSpec, scripts: Sequence[Script],
               progress: Progress | None = None) -> list[str]:
        jobs = []
        for script in scripts:
            # sbatch exports this environment into the job: never an MPI runtime's identity
            proc = subprocess.run(["sbatch", "--parsable", script.path], cwd=spec.output,
                                  capture_output=True, text=True, check=False,
                                  env=without_mpi_runtime())
            if proc.returncode != 0:
                why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
                raise SubmissionRejected(f"sbatch rejected {script.path}: {why}")
            job = parse_job_id(proc.stdout)
            state.record_submission(spec.output, self.name, job, script.path,
                                    [r.run_id for r in script.runs])
            jobs.append(job)
        return jobs

    def alive(self, job: str) -> bool | None:
        kind, _, jid = job.partition(":")
        if kind != "slurm" or shutil.which("squeue") is None:
            return None
        proc = subprocess.run(["squeue", "-h", "-o", "%i", "-j", jid], capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            return False if "Invalid job id" in proc.stderr else None
        return bool(proc.stdout.strip())

    def queued(self, folder: Path) -> set[str]:
        subs = [s for s in state.submissions(folder) if s.get("backend") == self.name]
        if not subs or shutil.which("squeue") is None:
            return set()
        out: set[str] = set()
        for sub in subs:
            proc = subprocess.run(["squeue", "-h", "-r", "-o", "%K", "-j", str(sub["job_id"])],
                                  capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                continue
            for line in proc.stdout.split():
                if line.isdigit() and int(line) < len(sub["runs"]):
                    out.add(sub["runs"][int(line)])
        return out
