"""Running a campaign: check everything, then write state, then submit. Resumes by default.

Nothing is written before every check has passed, so bad input leaves no partial state.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ksptrace.jobs import state
from ksptrace.jobs.backends import Backend, Script, alive_any
from ksptrace.jobs.backends.base import Progress, SubmissionRejected
from ksptrace.jobs.runlock import campaign_lock
from ksptrace.jobs.spec import LOGS_DIR, STATE_DIR, TRACES_DIR, CampaignSpec, RunSpec


@dataclass(frozen=True)
class Outcome:
    pending: tuple[RunSpec, ...]
    """Runs this call rendered (and, unless a dry run, submitted)."""
    skipped: int
    """Runs already done or still running, left alone."""
    scripts: tuple[Script, ...]
    jobs: tuple[str, ...]


def prepare(spec: CampaignSpec, backend: Backend, dry_run: bool) -> tuple[list[RunSpec],
                                                                           list[Script]]:
    """Checks, then the runs to do and their scripts; writes nothing."""
    backend.check(spec, spec.runs, dry_run)
    queued = backend.queued(spec.output) if spec.output.exists() else set()
    todo = state.pending(spec, alive_any, queued) if spec.output.exists() else list(spec.runs)
    return todo, backend.render(spec, todo) if todo else []


def unsubmitted(folder: Path, scripts: list[Script]) -> list[Script]:
    """``scripts``, each renamed (``NAME.2.pbs``, ``NAME.3.pbs``, ...) where an earlier
    submission in ``folder`` names its file: a resume never overwrites the script a recorded
    job ran (issue 66)."""
    taken = {str(sub.get("script")) for sub in state.submissions(folder)}
    out = []
    for s in scripts:
        stem, dot, ext = s.path.rpartition(".")
        path, k = s.path, 1
        while path in taken:
            k += 1
            path = f"{stem}.{k}.{ext}" if dot else f"{s.path}.{k}"
        taken.add(path)
        out.append(dataclasses.replace(s, path=path))
    return out


def write_scripts(spec: CampaignSpec, scripts: list[Script]) -> None:
    for d in (TRACES_DIR, LOGS_DIR, STATE_DIR):
        (spec.output / d).mkdir(parents=True, exist_ok=True)
    state.write_manifest(spec)
    for s in scripts:
        path = spec.output / s.path
        state.atomic_write(path, s.text)
        os.chmod(path, 0o755)


def run_campaign(spec: CampaignSpec, backend: Backend, dry_run: bool = False,
                 progress: Progress | None = None,
                 on_written: Callable[[CampaignSpec, list[Script]], None] | None = None
                 ) -> Outcome:
    """Check, take the campaign lock, write the manifest and scripts (then call
    ``on_written``), then submit. A second runner of the same folder is refused."""
    spec = backend.adapt(spec)
    backend.check(spec, spec.runs, dry_run)
    fresh = not spec.output.exists()
    try:
        with campaign_lock(spec.output) as lock:
            todo, scripts = prepare(spec, backend, dry_run)
            skipped = len(spec.runs) - len(todo)
            if not todo:
                if not fresh:
                    state.write_manifest(spec)
                return Outcome((), skipped, (), ())
            scripts = unsubmitted(spec.output, scripts)
            write_scripts(spec, scripts)
            if on_written is not None:
                on_written(spec, scripts)
            jobs: list[str] = []
            if not dry_run:
                backend.lock = lock
                try:
                    jobs = backend.submit(spec, scripts, progress)
                except SubmissionRejected:
                    if fresh and not state.submissions(spec.output):
                        shutil.rmtree(spec.output, ignore_errors=True)  # nothing queued
                    raise
                finally:
                    backend.lock = None
            return Outcome(tuple(todo), skipped, tuple(scripts), tuple(jobs))
    finally:
        if fresh and spec.output.is_dir() and not any(spec.output.iterdir()):
            spec.output.rmdir()  # nothing to do and nothing written: leave no empty folder
