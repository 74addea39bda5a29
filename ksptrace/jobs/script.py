"""The one script builder: a bash script that runs one task of a campaign, chosen by index.

Every backend renders the same body and differs only in its directives, the variable that
holds the task index, the job id it records and the folder it starts in. The body

* runs in the campaign's output folder (all paths in it are relative to that folder);
* exports ``KSPTRACE_CAMPAIGN_HASH``, ``KSPTRACE_RUN_ID`` and ``KSPTRACE_REPETITION``, which the
  harness records;
* marks the run ``state/<id>.running`` while it runs and ``state/<id>.failed`` if it fails,
  each written to a temporary name and renamed, so a kill never leaves half a marker.

Every user string is shell-quoted with :func:`shlex.quote`; set-up lines are shell by intent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ksptrace import escape
from ksptrace.jobs.launchers import JobVariable, Launcher
from ksptrace.jobs.spec import PROGRAM, CampaignSpec, RunSpec


@dataclass(frozen=True)
class TaskFlavour:
    """What differs between schedulers inside the body."""

    index_expr: str
    """Shell expression for the task index, e.g. ``${SLURM_ARRAY_TASK_ID:?...}``."""
    job_expr: str
    """Shell expression recorded as the job of a run, e.g. ``slurm:${SLURM_JOB_ID}``."""
    workdir_expr: str
    """Shell expression of the folder the job starts in (the campaign's output folder)."""
    preamble: tuple[str, ...] = ()
    """Lines run first, before the campaign's set-up lines (PBS: the submitter's PATH back)."""


def _comment(text: str) -> str:
    """Printable ASCII only, so that nothing in a comment can end the comment."""
    return re.sub(r"[^\x20-\x7e]", "?", text)


def quote_args(args: Sequence[str]) -> str:
    """Shell words: each argument quoted, except a :class:`JobVariable`, written ``"$NAME"``."""
    return " ".join(f'"${a}"' if isinstance(a, JobVariable) else escape.shell_word(a)
                    for a in args)


def task_command(spec: CampaignSpec, run: RunSpec, launcher: Launcher) -> list[str]:
    if run.kind == PROGRAM:  # ksptrace trace -- LAUNCHER -n P PROGRAM ...
        return [*spec.command, *run.trace_args(launcher.command(run.nprocs, spec.scheduler))]
    return [*launcher.command(run.nprocs, spec.scheduler), *spec.command,
            *run.run_args(launcher.run_flags(run.nprocs))]


def render_script(spec: CampaignSpec, runs: Sequence[RunSpec], launcher: Launcher,
                  directives: Sequence[str], flavour: TaskFlavour,
                  part: tuple[int, int, int] | None = None) -> str:
    """The whole script: shebang, directives, then the task body.

    ``part`` is (offset, part number, parts) when a group of runs is split into several job
    arrays: task i of this one runs the group's run ``offset + i``."""
    lines = ["#!/bin/bash", *directives, ""]
    lines += [
        f"# ksptrace campaign {spec.name}: "
        f"{len(runs)} run(s) of {len(spec.runs)}, one per task.",
        f"# Campaign file sha256 {spec.campaign_hash}",
        "# Paths are relative to the campaign's output folder.",
        "set -u",
    ]
    if part is not None:
        offset, number, parts = part
        lines.insert(len(directives) + 3,
                     f"# Array {number} of {parts}: task i runs run {offset} + i of this group "
                     f"(task-index offset {offset}).")
    if flavour.preamble:
        lines += ["", *flavour.preamble]
    if spec.setup:
        lines += ["", "# set-up lines from the campaign file", *spec.setup]
    lines += [
        "",
        f"cd {flavour.workdir_expr} || exit 1",
        f"export KSPTRACE_CAMPAIGN={spec.name}",
        f"export KSPTRACE_CAMPAIGN_HASH={spec.campaign_hash}",
        f"task={flavour.index_expr}",
        'case "$task" in',
    ]
    staged = any(r.kind == PROGRAM for r in runs)
    for i, run in enumerate(runs):
        cmd = quote_args(task_command(spec, run, launcher))
        if staged:  # a program run's traces appear in traces/<id>/ complete, or not at all
            cmd += (f") stage={escape.shell_word(run.stage)} "
                    f"published={escape.shell_word(run.trace)}")
        else:
            cmd += ")"
        label = run.label
        if spec.scheduler.oversubscribed(run.nprocs):
            label += (f" OVERSUBSCRIBED: {spec.scheduler.ranks_per_node_for(run.nprocs)} ranks "
                      f"on {spec.scheduler.cores_per_node} cores per node")
        lines += [f"  {i}) run_id={run.run_id} repetition={run.repetition}  # {_comment(label)}",
                  f"     cmd=({cmd} ;;"]
    lines += [
        '  *) echo "ksptrace: no run for task $task" >&2; exit 2 ;;',
        "esac",
        "",
        'export KSPTRACE_RUN_ID="$run_id" KSPTRACE_REPETITION="$repetition"',
        "mkdir -p traces logs state",
        'log="logs/$run_id.log"',
        f'job="{flavour.job_expr}"',
        'printf \'job=%s\\nhost=%s\\npid=%s\\nlog=%s\\n\' "$job" "$(hostname)" "$$" "$log" '
        '> "state/$run_id.running.tmp" && mv -f "state/$run_id.running.tmp" '
        '"state/$run_id.running"',
        'echo "ksptrace: task $task run $run_id -> $log"',
        '"${cmd[@]}" > "$log" 2>&1',
        "rc=$?",
    ]
    if staged:
        lines[-2:-2] = ['rm -rf "$stage"']
        lines += ['if [ "$rc" -eq 0 ]; then',
                  '  rm -rf "$published" && mv "$stage" "$published" || rc=$?',
                  "fi"]
    lines += [
        'if [ "$rc" -eq 0 ]; then',
        '  rm -f "state/$run_id.failed"',
        "else",
        '  printf \'job=%s\\nrc=%s\\nlog=%s\\n\' "$job" "$rc" "$log" '
        '> "state/$run_id.failed.tmp" && mv -f "state/$run_id.failed.tmp" "state/$run_id.failed"',
        '  echo "ksptrace: run $run_id failed with exit code $rc; see $log" >&2',
        "fi",
        'rm -f "state/$run_id.running"',
        'exit "$rc"',
        "",
    ]
    return "\n".join(lines)
