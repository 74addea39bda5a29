"""The campaign file: every key declared once, typed, with its default and one line of help.

A campaign file is TOML with four tables::

    [campaign]        name, output folder, repetitions, set-up lines, zipped axes, ...
    [sweep]           the run parameters (from RUN_PARAMS and the problems' own) plus nprocs;
                      a scalar is fixed, a list is an axis
    [petsc_options]   extra PETSc options, name = value (no leading dash)
    [scheduler]       partition, account, walltime, ranks per node, exclusive, directives, ...

Reading and checking a file (:mod:`.campaign_file`) refuses, when the file is loaded,
everything that would fail after queueing. This module only declares.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ksptrace.collectives.params import COLLECTIVE_PARAMS
from ksptrace.errors import CampaignError
from ksptrace.harness.config.options import RUN_PARAMS
from ksptrace.jobs.spec import COLLECTIVES, KINDS, PROGRAM, SOLVER
from ksptrace.params import Param
from ksptrace.problems import registry

NPROCS = Param("nprocs", int, 1, "number of MPI ranks P of each run", minimum=1,
               maximum=1 << 24)
"""The one sweep key that is not a run parameter of the harness (it is the launch width)."""


CAMPAIGN_KEYS: tuple[Param, ...] = (
    Param("name", str, "ksptrace", "campaign name and scheduler job name (A-Z a-z 0-9 . _ -)"),
    Param("output", str, "runs", "folder for traces, logs, state and scripts (relative to file)"),
    Param("repetitions", int, 1, "how many times each configuration is run", minimum=1,
          maximum=100_000),
    Param("oversubscribe", bool, False, "allow more ranks than cores (local backend)"),
    Param("interleave", bool, False, "run repetitions in rounds (every configuration once, then "
          "again), so a burst of load on a shared machine spreads over configurations"),
    Param("alternate", bool, False, "with interleave, run every other round in reverse order "
          "(ABBA), so that no configuration always runs first or last in its round"),
    Param("noise_seed_per_repetition", bool, False, "add the repetition index to every noise "
          "spec's seed, so that each repetition (a block of the paired design) draws its own "
          "detours and the runs of one repetition share them"),
    Param("setup", list, [], "shell lines run before each run (module load, export, ...)"),
    Param("command", str, "ksptrace", "how a job starts ksptrace, split like a shell command line"),
    Param("zip", list, [], "groups of sweep keys whose lists vary together: [['n', 'nprocs']]"),
    Param("kind", str, SOLVER, "what each run measures: solver (ksptrace run), collectives "
          "(ksptrace collectives: op, algorithm, message sizes in [sweep]) or program (your "
          "command of [program], traced by ksptrace trace)", choices=KINDS),
)


SCHEDULER_KEYS: tuple[Param, ...] = (
    Param("partition", str, None, "Slurm partition or PBS queue (scheduler default when unset)"),
    Param("account", str, None, "account or project charged for the jobs"),
    Param("walltime", str, "01:00:00", "time limit of each run, [D-]HH:MM:SS"),
    Param("nodes", int, None, "nodes of every run, its ranks spread evenly over them (from "
          "ranks_per_node when unset)", minimum=1),
    Param("ranks_per_node", int, None, "MPI ranks per node (all ranks on one node when unset)",
          minimum=1),
    Param("cores_per_node", int, None, "cores requested per node (PBS ncpus); ranks_per_node "
          "when unset", minimum=1),
    Param("exclusive", bool, True, "reserve whole nodes, so other jobs do not disturb timings"),
    Param("launcher", str, None, "srun, mpiexec or pbs-mpiexec (srun on Slurm, pbs-mpiexec: "
          "mpiexec -n P -hostfile $PBS_NODEFILE, on PBS when unset)"),
    Param("mpi", str, "pmix", "the srun --mpi plugin (pmix: pmi2 fails with Debian's OpenMPI)"),
    Param("max_parallel", int, None, "most array tasks running at once (unlimited when unset)",
          minimum=1),
    Param("max_array_size", int, 1000, "most tasks in one job array; larger sweeps are split "
          "into several arrays (Slurm's MaxArraySize, PBS's max_array_size)", minimum=1),
    Param("sbatch_directives", list, [], "extra #SBATCH lines, e.g. '--constraint=knl'"),
    Param("pbs_directives", list, [], "extra #PBS lines, e.g. '-l filesystems=home'"),
)


CAMPAIGN_BYTES = 4 << 20
"""A campaign file is kilobytes of TOML; a larger file is not one."""


SECTIONS: dict[str, str] = {
    "campaign": "name, output folder, repetitions, set-up lines, zipped axes",
    "sweep": "run parameters and nprocs; a list is an axis",
    "petsc_options": "extra PETSc options, name = value",
    "scheduler": "partition, account, walltime, ranks per node, directives",
    "program": "with kind = 'program': the command to trace and which solves",
}


SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""Names that go into scheduler directives unquoted (job name, partition, account)."""


OPTION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


WALLTIME = re.compile(r"^(?:(\d+)-)?(\d+):(\d{2}):(\d{2})$")


MAX_WALLTIME_SECONDS = 366 * 24 * 3600


NAME_MAX = 255
"""Bytes in one file name on Linux file systems (ext4, xfs, tmpfs, Lustre, GPFS)."""


MAX_CAMPAIGN_NAME = 200
"""The campaign name becomes file names (``scripts/slurm/<name>-N<nodes>-<part>.sbatch``,
``logs/<name>-<job>_<task>.out``): 200 characters leave room for the suffixes under NAME_MAX."""


KEY_ALIASES: dict[str, str] = {
    "np": "nprocs", "p": "nprocs", "procs": "nprocs", "nproc": "nprocs", "ranks": "nprocs",
    "nranks": "nprocs", "ntasks": "nprocs", "k": "iterations", "its": "iterations",
    "iters": "iterations", "maxit": "iterations", "max_it": "iterations", "ksp_type": "ksp",
    "solver": "ksp", "method": "ksp", "pc_type": "pc", "preconditioner": "pc",
    "precond": "pc", "size": "n", "unknowns": "n", "gmres_restart": "restart",
    "ksp_gmres_restart": "restart", "reps": "repetitions", "repeat": "repetitions",
    "repeats": "repetitions", "queue": "partition", "time": "walltime", "time_limit": "walltime",
    "project": "account", "ppn": "ranks_per_node", "tasks_per_node": "ranks_per_node",
    "ntasks_per_node": "ranks_per_node", "nnodes": "nodes", "num_nodes": "nodes",
    "node_count": "nodes", "ncpus": "cores_per_node", "array_size":
    "max_array_size", "max_array": "max_array_size", "outdir": "output", "out": "output",
    "directory": "output",
}
"""Names people use for a key (other tools' flags, abbreviations) -> the key."""


def sweep_keys(kind: str = SOLVER) -> tuple[Param, ...]:
    """The keys allowed in [sweep]: the run parameters, the problems' own, and nprocs (for a
    collectives campaign: the collectives parameters and nprocs)."""
    if kind == COLLECTIVES:
        return (*COLLECTIVE_PARAMS, NPROCS)
    if kind == PROGRAM:  # and the command's own placeholders
        return (NPROCS,)
    return (*RUN_PARAMS, NPROCS, *registry.all_params())


@dataclass(frozen=True)
class CampaignFile:
    """A parsed and checked campaign file (still a sweep, not yet runs)."""

    path: Path
    text: str
    campaign: Mapping[str, Any]
    sweep: Mapping[str, Any]
    """Key -> tuple of values (a scalar becomes a 1-tuple); only keys the file sets."""
    petsc_options: tuple[tuple[str, str], ...]
    scheduler: Mapping[str, Any]
    program: Mapping[str, Any] | None = None
    """The ``[program]`` table of a program campaign (None otherwise)."""

    def where(self, section: str, key: str | None = None) -> str:
        return location(self.path, self.text, section, key)


def location(path: Path, text: str, section: str, key: str | None = None) -> str:
    """``file:line`` of ``key`` in ``[section]`` (or of the section header), as well as known."""
    line = find_line(text, section, key)
    return f"{path}:{line}" if line else str(path)


def find_line(text: str, section: str, key: str | None = None) -> int | None:
    """1-based line of ``key = ...`` inside ``[section]`` (tomllib does not report positions)."""
    current = None
    header = re.compile(r"^\s*\[\s*([^\]\s]+)\s*\]")
    for number, raw in enumerate(text.splitlines(), start=1):
        m = header.match(raw)
        if m:
            current = m.group(1).strip("\"'")
            if key is None and current == section:
                return number
            continue
        if key is not None and current == section:
            km = re.match(r"^\s*(?:\"([^\"]+)\"|'([^']+)'|([A-Za-z0-9_-]+))\s*=", raw)
            if km and key in km.groups():
                return number
    return None


def parse_walltime(value: str, where: str) -> int:
    """Seconds in ``[D-]HH:MM:SS``; an impossible value is a CampaignError."""
    m = WALLTIME.match(value.strip())
    if not m:
        raise CampaignError(f"{where}: walltime {value!r} is not [D-]HH:MM:SS, e.g. '02:30:00'")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    if minutes >= 60 or seconds >= 60:
        raise CampaignError(f"{where}: walltime {value!r} has minutes or seconds >= 60")
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if total <= 0:
        raise CampaignError(f"{where}: walltime {value!r} is zero; give each run some time")
    if total > MAX_WALLTIME_SECONDS:
        raise CampaignError(f"{where}: walltime {value!r} is longer than a year; check it")
    return total


def format_walltime(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
