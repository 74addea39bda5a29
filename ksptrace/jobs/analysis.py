"""``ksptrace analyze --backend slurm|pbs``: the analysis as jobs, next to the traces.

Each trace is analysed by one task of a job array (``ksptrace analyze TRACE --cache-only``),
which stores its results in the per-trace cache (``ksptrace.studies.variability.run.batch``). A
merge job, submitted to start once every array has ended, runs the ordinary ``ksptrace analyze``
over all traces: it finds each one in the cache and only merges, draws the cross-trace figures and
writes the report. A task that failed leaves no entry, so the merge analyses that trace itself: the
report is complete either way, and the merge job's log says what happened.

Everything the jobs need is written first into the jobs folder (the trace list, the scripts,
the logs folder), so ``--dry-run`` shows exactly what would be submitted.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ksptrace import escape
from ksptrace.errors import CampaignError, UsageError

BACKENDS = ("local", "slurm", "pbs")


@dataclass(frozen=True)
class AnalysisJobs:
    """What was written (and submitted)."""

    folder: Path
    arrays: tuple[Path, ...]
    merge: Path
    job_ids: tuple[str, ...] = ()
    """Array job ids, then the merge job's (empty with ``dry_run``)."""


def _chunks(count: int, size: int) -> list[range]:
    return [range(s, min(s + size, count)) for s in range(0, count, max(1, size))]


def render(backend: str, folder: Path, traces: Sequence[str], task_argv: Sequence[str],
           merge_argv: Sequence[str], walltime: str, max_array: int,
           directives: Sequence[str] = ()) -> tuple[list[str], str]:
    """The array scripts (one per chunk of at most ``max_array`` traces) and the merge script.

    ``task_argv`` is the command of one task without its trace (the trace is appended);
    ``merge_argv`` is the whole merge command."""
    if backend not in ("slurm", "pbs"):
        raise UsageError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")
    logs = folder / "logs"
    task = " ".join(escape.shell_word(a) for a in task_argv)
    arrays = []
    for part, chunk in enumerate(_chunks(len(traces), max_array)):
        n = len(chunk)
        if backend == "slurm":
            head = [f"#SBATCH --job-name=ksptrace-analyze-{part}",
                    f"#SBATCH --array=0-{n - 1}", "#SBATCH --ntasks=1",
                    f"#SBATCH --time={walltime}",
                    f"#SBATCH --output={logs}/analyze-{part}-%A_%a.out"]
            index = "SLURM_ARRAY_TASK_ID"
        else:
            head = [f"#PBS -N ksptrace-analyze-{part}", f"#PBS -J 0-{max(n - 1, 1)}",
                    "#PBS -l select=1:ncpus=1", f"#PBS -l walltime={walltime}",
                    f"#PBS -o {logs}/", "#PBS -j oe"]
            index = "PBS_ARRAY_INDEX"
        head += [d if d.startswith("#") else
                 ("#SBATCH " if backend == "slurm" else "#PBS ") + d for d in directives]
        arrays.append("\n".join([
            "#!/bin/bash", *head, "set -euo pipefail",
            f"# traces {chunk.start}..{chunk.stop - 1} of {len(traces)}, one per task",
            f'line=$(( ${{{index}}} + {chunk.start + 1} ))',
            f'trace=$(sed -n "${{line}}p" {escape.shell_word(str(folder / "traces.txt"))})',
            '[ -n "$trace" ] || exit 0  # PBS arrays have at least 2 subjobs',
            f'exec {task} "$trace"', ""]))
    merge = " ".join(escape.shell_word(a) for a in merge_argv)
    if backend == "slurm":
        head = ["#SBATCH --job-name=ksptrace-analyze-merge", "#SBATCH --ntasks=1",
                f"#SBATCH --time={walltime}", f"#SBATCH --output={logs}/merge-%j.out"]
    else:
        head = ["#PBS -N ksptrace-analyze-merge", "#PBS -l select=1:ncpus=1",
                f"#PBS -l walltime={walltime}", f"#PBS -o {logs}/", "#PBS -j oe"]
    head += [d if d.startswith("#") else
             ("#SBATCH " if backend == "slurm" else "#PBS ") + d for d in directives]
    merge_text = "\n".join(["#!/bin/bash", *head, "set -euo pipefail",
                            "# every trace from the cache; a failed task's trace is analysed here",
                            f"exec {merge}", ""])
    return arrays, merge_text


def _submit(cmd: list[str], cwd: Path) -> str:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False,
                              timeout=120)
    except FileNotFoundError:
        raise CampaignError(f"{cmd[0]} not found; run on a login node of the cluster, or use "
                            "--backend local") from None
    except subprocess.TimeoutExpired:
        raise CampaignError(f"{cmd[0]} did not answer within 120 s; check the scheduler "
                            "before resubmitting") from None
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise CampaignError(f"{cmd[0]} rejected {cmd[-1]}: {why}")
    job = proc.stdout.strip().split(";")[0].strip()
    if not job:
        raise CampaignError(f"{cmd[0]} printed no job id; check the queue before resubmitting")
    return job


def prepare(backend: str, folder: Path, traces: Sequence[str], task_argv: Sequence[str],
            merge_argv: Sequence[str], walltime: str = "01:00:00", max_array: int = 1000,
            directives: Sequence[str] = (), dry_run: bool = False) -> AnalysisJobs:
    """Write the jobs folder and, unless ``dry_run``, submit the arrays and the merge."""
    if not traces:
        raise UsageError("no trace to analyse")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "logs").mkdir(exist_ok=True)
    (folder / "traces.txt").write_text("".join(f"{t}\n" for t in traces))
    arrays, merge = render(backend, folder, traces, task_argv, merge_argv, walltime,
                           max_array, directives)
    suffix = ".sbatch" if backend == "slurm" else ".pbs"
    paths = []
    for part, text in enumerate(arrays):
        p = folder / f"analyze-{part}{suffix}"
        p.write_text(text)
        paths.append(p)
    merge_path = folder / f"merge{suffix}"
    merge_path.write_text(merge)
    if dry_run:
        return AnalysisJobs(folder, tuple(paths), merge_path)
    ids = []
    for p in paths:
        cmd = ["sbatch", "--parsable", str(p)] if backend == "slurm" else ["qsub", "-V", str(p)]
        ids.append(_submit(cmd, folder))
    if backend == "slurm":
        cmd = ["sbatch", "--parsable", f"--dependency=afterany:{':'.join(ids)}", str(merge_path)]
    else:
        cmd = ["qsub", "-V", "-W", "depend=afterany:" + ":".join(ids), str(merge_path)]
    ids.append(_submit(cmd, folder))
    return AnalysisJobs(folder, tuple(paths), merge_path, tuple(ids))
