"""The backend interface: render scripts from a frozen spec (pure), then submit them."""

from __future__ import annotations

import abc
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ksptrace.errors import CampaignError, EnvironmentProblem
from ksptrace.jobs.launchers import Launcher, get_launcher
from ksptrace.jobs.runlock import CampaignLock
from ksptrace.jobs.spec import PROGRAM, CampaignSpec, RunSpec


class SubmissionRejected(CampaignError):
    """The scheduler refused a script: nothing was queued, so the caller may undo its writes."""


@dataclass(frozen=True)
class Script:
    """A rendered script, its place under the output folder, and the runs its tasks run."""

    path: str
    text: str
    runs: tuple[RunSpec, ...]


Progress = Callable[[int, int, RunSpec, bool, float], None]
"""(runs finished, runs in total, the run just finished, whether it succeeded, seconds so far)."""


class Backend(abc.ABC):
    name: ClassVar[str]
    default_launcher: ClassVar[str]
    lock: CampaignLock | None = None
    """The campaign lock, held by the runner while ``submit`` runs (the local backend records
    the process group of each solve in it)."""
    submit_program: ClassVar[str | None] = None
    """The program that submits (sbatch, qsub), checked before anything is written."""

    def launcher(self, spec: CampaignSpec) -> Launcher:
        return get_launcher(spec.scheduler.launcher or self.default_launcher)

    def adapt(self, spec: CampaignSpec) -> CampaignSpec:
        """The spec as this backend runs it (default: unchanged)."""
        return spec

    def check(self, spec: CampaignSpec, runs: Sequence[RunSpec], dry_run: bool) -> None:
        """Raise before any state is written if the runs cannot be submitted here."""
        if self.launcher(spec).name == "harness" and any(r.kind == PROGRAM for r in runs):
            raise CampaignError(f"{spec.source}: launcher 'harness' starts only ksptrace run; "
                                "a program campaign needs an MPI launcher (leave launcher unset)")
        if not dry_run and self.submit_program and shutil.which(self.submit_program) is None:
            raise EnvironmentProblem(
                f"'{self.submit_program}' not found on PATH; run on a {self.name} login node, "
                "render the scripts with --dry-run, or use --backend local")

    @abc.abstractmethod
    def render(self, spec: CampaignSpec, runs: Sequence[RunSpec]) -> list[Script]:
        """The scripts that run ``runs``. Pure: same spec and runs, same text."""

    @abc.abstractmethod
    def submit(self, spec: CampaignSpec, scripts: Sequence[Script],
               progress: Progress | None = None) -> list[str]:
        """Submit (or, locally, run) the scripts already written; return the job ids."""

    def alive(self, job: str) -> bool | None:
        """Whether the job a run marker names still exists (None when it cannot be told)."""
        return None

    def queued(self, folder: Path) -> set[str]:
        """Run ids submitted here whose tasks are still waiting or running."""
        return set()
