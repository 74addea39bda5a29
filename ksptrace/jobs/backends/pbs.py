"""The PBS Pro / OpenPBS backend: ``-l select``, ``-J`` arrays, ``-j oe``, qsub.

Arrays are split like Slurm's, at most ``max_array_size`` subjobs each (PBS's server attribute
of the same name). ``qsub -V`` passes the submitting environment into the job, as ``sbatch``
does by default. Whether a job or subjob still waits or runs is read from ``qstat -f -F json``
(``-t`` lists an array's subjobs, finished ones in state X).

A job's login shell resets ``PATH`` (``qsub -V`` keeps the submitter's only as ``PBS_O_PATH``),
so a venv's ``ksptrace`` was not found there (issue 66: every PBS run of a venv install failed
with exit 134). The scripts set ``PATH`` back to ``PBS_O_PATH`` first (before the campaign's
set-up lines, which may change it again), and the documented default ``command = "ksptrace"``
is kept only when ``ksptrace`` on the submitter's ``PATH`` is the one running, beside this
Python; otherwise the job runs this Python's ksptrace (``<python> -m ksptrace``), as the
analysis jobs do."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ksptrace.errors import CampaignError
from ksptrace.harness.launching.mpienv import without_mpi_runtime
from ksptrace.jobs import state
from ksptrace.jobs.backends.base import Backend, Progress, Script, SubmissionRejected
from ksptrace.jobs.backends.slurm import split
from ksptrace.jobs.schema import format_walltime
from ksptrace.jobs.script import TaskFlavour, render_script
from ksptrace.jobs.spec import LOGS_DIR, SCRIPTS_DIR, CampaignSpec, RunSpec


def flavour(array: bool) -> TaskFlavour:
    index = ("${PBS_ARRAY_INDEX:?submit this script with qsub, it is a job array}" if array
             else "${PBS_ARRAY_INDEX:-0}")
    return TaskFlavour(index_expr=index, job_expr="pbs:${PBS_JOBID:-}",
                       workdir_expr='"$PBS_O_WORKDIR"', preamble=PATH_BACK)


PATH_BACK = (
    "# the job's login shell resets PATH; qsub -V keeps the submitter's as PBS_O_PATH",
    'if [ -n "${PBS_O_PATH:-}" ]; then export PATH="$PBS_O_PATH"; fi',
)


class PbsBackend(Backend):
    name = "pbs"
    default_launcher = "pbs-mpiexec"
    submit_program = "qsub"

    def adapt(self, spec: CampaignSpec) -> CampaignSpec:
        """The default command kept when ``ksptrace`` on PATH is this one, else pinned to this
        Python's (module docstring); a command the campaign file gives is kept as written."""
        if spec.command == ("ksptrace",) and not _runs_here(shutil.which("ksptrace")):
            return dataclasses.replace(spec, command=(sys.executable, "-m", "ksptrace"))
        return spec

    def directives(self, spec: CampaignSpec, nodes: int, runs: Sequence[RunSpec]) -> list[str]:
        s = spec.scheduler
        per_node = s.allocation_ranks_per_node(runs)
        ncpus = s.cores_per_node or per_node
        lines = [
            f"-N {spec.name}",
            f"-l select={nodes}:ncpus={ncpus}:mpiprocs={per_node}",
            f"-l walltime={format_walltime(s.walltime_seconds)}",
        ]
        if len(runs) > 1:  # PBS refuses an array of one subjob
            lines.append(f"-J 0-{len(runs) - 1}")
        lines += ["-V",  # in the script too: one resubmitted by hand keeps the environment
                  "-j oe", f"-o {LOGS_DIR}/"]
        if s.exclusive:
            lines.append("-l place=scatter:excl")
        elif nodes > 1:  # else PBS may pack the chunks onto one host (place=free, tested)
            lines.append("-l place=scatter")
        lines += s.site_lines("pbs")
        return ["#PBS " + line for line in lines]

    def render(self, spec: CampaignSpec, runs: Sequence[RunSpec]) -> list[Script]:
        out = []
        for nodes, group, part, suffix in split(spec, runs):
            text = render_script(spec, group, self.launcher(spec),
                                 self.directives(spec, nodes, group), flavour(len(group) > 1),
                                 part)
            out.append(Script(f"{SCRIPTS_DIR}/pbs/{spec.name}{suffix}.pbs", text, tuple(group)))
        return out

    def submit(self, spec: CampaignSpec, scripts: Sequence[Script],
               progress: Progress | None = None) -> list[str]:
        jobs = []
        for script in scripts:
            proc = subprocess.run(["qsub", "-V", script.path], cwd=spec.output, capture_output=True,
                                  text=True, check=False, env=without_mpi_runtime())
            if proc.returncode != 0:
                why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
                raise SubmissionRejected(f"qsub rejected {script.path}: {why}")
            job = proc.stdout.strip()
            if not re.fullmatch(r"\d+(\[\])?(\.[\w.-]+)?", job):
                raise CampaignError(f"qsub printed no job id (got {job!r}); check 'qstat -u "
                                    "$USER' before resubmitting, to avoid duplicate jobs")
            state.record_submission(spec.output, self.name, job, script.path,
                                    [r.run_id for r in script.runs])
            jobs.append(job)
        return jobs

    def alive(self, job: str) -> bool | None:
        kind, _, jid = job.partition(":")
        if kind != "pbs" or not jid:
            return None
        states = job_states(jid)
        if states is None:
            return None
        return any(live(st) for st in states.values())

    def queued(self, folder: Path) -> set[str]:
        out: set[str] = set()
        for sub in state.submissions(folder):
            if sub.get("backend") != self.name:
                continue
            runs = sub["runs"]
            for jid, st in (job_states(str(sub["job_id"])) or {}).items():
                index = subjob_index(jid)
                if index is None and len(runs) == 1 and live(st):
                    out.add(runs[0])  # one run: a plain job, not an array
                elif index is not None and index < len(runs) and live(st):
                    out.add(runs[index])
        return out


def _runs_here(found: str | None) -> bool:
    """Whether the ``ksptrace`` found on PATH is this installation's: its script beside this
    Python (a venv's bin, or the system's), not another install earlier on PATH."""
    if found is None:
        return False
    return os.path.dirname(os.path.abspath(found)) == os.path.dirname(
        os.path.abspath(sys.executable))


LIVE = frozenset("QRHWTSEB")
"""qstat's job states of a job that still waits or runs (X: a finished subjob, F: finished)."""


def live(job_state: str) -> bool:
    return job_state in LIVE


def subjob_index(jid: str) -> int | None:
    """``12[3].host`` -> 3; None for a plain job or the array itself (``12[].host``)."""
    m = re.match(r"\d+\[(\d+)\]", jid)
    return int(m.group(1)) if m else None


def job_states(jid: str) -> dict[str, str] | None:
    """Job id -> state of the job ``jid`` and, for an array, of each subjob; {} once PBS no
    longer knows it; None when qstat cannot be asked (not installed, no server)."""
    if shutil.which("qstat") is None:
        return None
    try:
        proc = subprocess.run(["qstat", "-t", "-f", "-F", "json", jid], capture_output=True,
                              text=True, check=False, timeout=60)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        gone = ("Unknown Job Id" in proc.stderr or "Job has finished" in proc.stderr)
        return {} if gone else None
    try:
        jobs = json.loads(proc.stdout).get("Jobs", {})
    except (ValueError, AttributeError):
        return None
    return {str(k): str(v.get("job_state", "")) for k, v in jobs.items()
            if isinstance(v, dict)}
