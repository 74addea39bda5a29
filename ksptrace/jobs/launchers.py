"""MPI launchers inside a batch job: each a tiny class with one method, ``command()``."""

from __future__ import annotations

import abc
import os
import re
from typing import ClassVar

from ksptrace.errors import CampaignError
from ksptrace.harness.launching.launch import MpiExec, find_mpiexec, is_root
from ksptrace.jobs.spec import SchedulerSpec


class JobVariable(str):
    """A word of a launcher's command that the job script takes from its environment: the
    script writes it as ``"$NAME"`` (the variable's value, one word), never quoted away."""

    def __new__(cls, name: str) -> JobVariable:
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
            raise CampaignError(f"{name!r} is not an environment variable name")
        return super().__new__(cls, name)


class Launcher(abc.ABC):
    name: ClassVar[str]

    @abc.abstractmethod
    def command(self, nprocs: int, sched: SchedulerSpec) -> list[str]:
        """The argument list that starts ``nprocs`` ranks of the command that follows it."""

    def run_flags(self, nprocs: int) -> list[str]:
        """Flags added to ``ksptrace run`` itself (for a launcher that the harness drives)."""
        return []


class SrunLauncher(Launcher):
    """Slurm's own launcher; ``--mpi`` picks the PMI plugin (pmix works with Debian's OpenMPI)."""

    name = "srun"

    def command(self, nprocs: int, sched: SchedulerSpec) -> list[str]:
        return ["srun", f"--mpi={sched.mpi}", "--ntasks", str(nprocs),
                "--nodes", str(sched.nodes(nprocs))]


class MpiexecLauncher(Launcher):
    """The MPI library's launcher; it reads the allocation from the scheduler's environment."""

    name = "mpiexec"

    def command(self, nprocs: int, sched: SchedulerSpec) -> list[str]:
        return ["mpiexec", "-n", str(nprocs)]


class PbsMpiexecLauncher(Launcher):
    """The MPI library's launcher told the allocation by hand: ``-n`` and the host file PBS
    writes (``$PBS_NODEFILE``, one line per MPI process). Needed where the MPI library has no
    PBS (tm) support, such as Debian's Open MPI, and harmless where it has. PBS's default.

    Open MPI 4 gives a host named once in a host file as many slots as it has cores, so with
    one process per node (``mpiprocs=1``) it put both ranks of a 2-node run on the first node;
    ``orte_set_default_slots=none`` makes every line one slot, as PBS means it (MPICH ignores
    the variable)."""

    name = "pbs-mpiexec"

    def command(self, nprocs: int, sched: SchedulerSpec) -> list[str]:
        return ["env", "OMPI_MCA_orte_set_default_slots=none", "mpiexec", "-n", str(nprocs),
                "-hostfile", JobVariable("PBS_NODEFILE")]


class HarnessLauncher(Launcher):
    """``ksptrace run --np P``: the harness starts mpiexec itself (OpenMPI or MPICH, with
    ``--oversubscribe``/``--allow-run-as-root`` when needed). The local backend's launcher."""

    name = "harness"

    def command(self, nprocs: int, sched: SchedulerSpec) -> list[str]:
        return []

    def run_flags(self, nprocs: int) -> list[str]:
        return ["--np", str(nprocs)]


class LocalMpiexecLauncher(Launcher):
    """This machine's mpiexec with the flags the harness would add (``--allow-run-as-root``,
    ``--oversubscribe`` for OpenMPI), one Python per rank and no extra ``ksptrace run --np``
    process in front: about 0.8 s less per run than ``harness``. The local backend's default."""

    name = "local-mpiexec"

    def __init__(self) -> None:
        self.mpi: MpiExec = find_mpiexec()
        self.cpus = os.cpu_count() or 1
        self.as_root = is_root()

    def command(self, nprocs: int, sched: SchedulerSpec) -> list[str]:
        return self.mpi.command(nprocs, self.mpi.flags(nprocs, self.cpus, self.as_root), [])


LAUNCHERS: dict[str, type[Launcher]] = {
    cls.name: cls
    for cls in (SrunLauncher, MpiexecLauncher, PbsMpiexecLauncher, HarnessLauncher,
                LocalMpiexecLauncher)
}


def get_launcher(name: str) -> Launcher:
    try:
        return LAUNCHERS[name]()
    except KeyError:
        valid = ", ".join(sorted(LAUNCHERS))
        raise CampaignError(f"unknown launcher '{name}'; valid launchers: {valid}") from None
