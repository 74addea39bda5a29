"""Frozen specs: what a campaign is, once its file has been read and expanded.

Backends render scripts from a CampaignSpec and nothing else, so the same spec always renders
the same text. Paths inside the specs are relative to the campaign's output folder.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ksptrace.harness.config.options import RUN_PARAMS
from ksptrace.params import Param
from ksptrace.problems import registry

TRACES_DIR = "traces"
LOGS_DIR = "logs"
STATE_DIR = "state"
SCRIPTS_DIR = "scripts"
MANIFEST = "manifest.json"
SOLVER = "solver"
COLLECTIVES = "collectives"
PROGRAM = "program"
KINDS = (SOLVER, COLLECTIVES, PROGRAM)
"""What a campaign's runs measure: ``[campaign] kind``."""


@dataclass(frozen=True)
class RunSpec:
    """One run: a point of the sweep and one repetition."""

    run_id: str
    """Stable: a hash of the parameters, the PETSc options and the repetition number."""
    index: int
    nprocs: int
    repetition: int
    params: tuple[tuple[str, Any], ...]
    """Run parameters (RUN_PARAMS, then the problem's own), in declaration order."""
    petsc_options: tuple[tuple[str, str], ...] = ()
    kind: str = SOLVER
    """What the run measures: 'solver' (``ksptrace run``) or 'collectives'."""

    def param(self, name: str) -> Any:
        return dict(self.params)[name]

    @property
    def expected_iterations(self) -> int | None:
        """K of a solver run's trace; None for a collectives or program run."""
        return int(self.param("iterations")) if self.kind == SOLVER else None

    @property
    def trace(self) -> str:
        """The run's trace; a program run's traces (one per KSP) are in a folder."""
        if self.kind == PROGRAM:
            return f"{TRACES_DIR}/{self.run_id}"
        return f"{TRACES_DIR}/{self.run_id}.h5"

    @property
    def stage(self) -> str:
        """Where a program run's traces are written before its folder is renamed to
        ``trace``: a killed run never leaves a folder that looks complete."""
        return f"{TRACES_DIR}/.{self.run_id}.partial"

    @property
    def log(self) -> str:
        return f"{LOGS_DIR}/{self.run_id}.log"

    @property
    def label(self) -> str:
        p = dict(self.params)
        if self.kind == COLLECTIVES:
            return (f"{p['op']} {p['algorithm']} P={self.nprocs} m={p['min_bytes']}.."
                    f"{p['max_bytes']} R={p['repetitions']}")
        if self.kind == PROGRAM:
            return " ".join(p["argv"]) + f" P={self.nprocs}"
        return f"{p['problem']} n={p['n']} {p['ksp']}/{p['pc']} P={self.nprocs} K={p['iterations']}"

    def run_args(self, extra: tuple[str, ...] | list[str] = ()) -> list[str]:
        """Arguments of ``ksptrace run`` (after the command), writing to ``self.trace``.

        ``extra`` flags go before the PETSc options (which must come last)."""
        if self.kind == COLLECTIVES:
            return self._collectives_args(extra)
        declared: dict[str, Param] = {p.name: p for p in RUN_PARAMS}
        declared.update({p.name: p for p in registry.get(self.param("problem")).params})
        args = ["run"]
        for name, value in self.params:
            param = declared[name]
            if value is None:
                continue
            if param.type is bool:
                if value:
                    args.append(param.flag)
                continue
            if name in ("hdf5_path", "noise") and value == param.default:
                continue  # defaults left out: scripts of earlier campaigns stay as they were
            args += [param.flag, str(value)]
        args += ["--out", self.trace, "--overwrite", *extra]
        for name, value in self.petsc_options:
            args.append("-" + name)
            if value != "":
                args.append(value)
        return args


    def trace_args(self, launch: list[str]) -> list[str]:
        """Arguments of ``ksptrace trace`` for a program run, started by ``launch``."""
        args = ["trace", "--out", self.stage, *self.param("trace_flags"), "--", *launch,
                *self.param("argv")]
        for name, value in self.petsc_options:
            args.append("-" + name)
            if value != "":
                args.append(value)
        return args

    def _collectives_args(self, extra: tuple[str, ...] | list[str]) -> list[str]:
        from ksptrace.collectives.params import COLLECTIVE_PARAMS

        args = ["collectives"]
        for p in COLLECTIVE_PARAMS:
            args += [p.flag, str(self.param(p.name))]
        return [*args, "--out", self.trace, "--overwrite", *extra]


@dataclass(frozen=True)
class SchedulerSpec:
    partition: str | None = None
    account: str | None = None
    walltime_seconds: int = 3600
    node_count: int | None = None
    """The ``nodes`` key: every run on this many nodes (None: from ``ranks_per_node``)."""
    ranks_per_node: int | None = None
    cores_per_node: int | None = None
    exclusive: bool = True
    launcher: str | None = None
    mpi: str = "pmix"
    max_parallel: int | None = None
    max_array_size: int = 1000
    """Most tasks in one job array; more runs are split into several arrays."""
    sbatch_directives: tuple[str, ...] = ()
    pbs_directives: tuple[str, ...] = ()

    def site_lines(self, backend: str) -> list[str]:
        """The site's own directives for ``backend`` (without the ``#SBATCH``/``#PBS``
        prefix): the partition or queue, the account, and the extra directives declared."""
        if backend == "slurm":
            lines = [f"--partition={self.partition}"] if self.partition else []
            lines += [f"--account={self.account}"] if self.account else []
            return lines + [d.removeprefix("#SBATCH").strip() for d in self.sbatch_directives]
        lines = [f"-q {self.partition}"] if self.partition else []
        lines += [f"-A {self.account}"] if self.account else []
        return lines + [d.removeprefix("#PBS").strip() for d in self.pbs_directives]

    def nodes(self, nprocs: int) -> int:
        if self.node_count is not None:
            return self.node_count
        return 1 if self.ranks_per_node is None else math.ceil(nprocs / self.ranks_per_node)

    def chunks(self, runs: list[RunSpec]) -> list[list[RunSpec]]:
        """``runs`` cut into arrays of at most ``max_array_size`` tasks, in order."""
        size = max(1, self.max_array_size)
        return [runs[i:i + size] for i in range(0, len(runs), size)]

    def ranks_per_node_for(self, nprocs: int) -> int:
        """Ranks on the fullest node for a run of ``nprocs`` ranks."""
        if self.node_count is not None:
            return math.ceil(nprocs / self.node_count)
        return min(self.ranks_per_node or nprocs, nprocs)

    def allocation_ranks_per_node(self, runs: Sequence[RunSpec]) -> int:
        """Ranks per node an array of ``runs`` asks the scheduler for (one shape for all)."""
        if self.ranks_per_node is not None:
            return self.ranks_per_node
        if self.node_count is not None:
            return max(self.ranks_per_node_for(r.nprocs) for r in runs)
        return max(r.nprocs for r in runs)

    def oversubscribed(self, nprocs: int) -> bool:
        """More ranks on a node than the cores asked for there (``cores_per_node``)."""
        return self.cores_per_node is not None and \
            self.ranks_per_node_for(nprocs) > self.cores_per_node


@dataclass(frozen=True)
class CampaignSpec:
    name: str
    source: str
    """The campaign file, as given."""
    campaign_hash: str
    """sha256 of the campaign file's bytes (recorded in every trace)."""
    output: Path
    command: tuple[str, ...]
    setup: tuple[str, ...]
    oversubscribe: bool
    scheduler: SchedulerSpec
    runs: tuple[RunSpec, ...]

    def run(self, run_id: str) -> RunSpec:
        for r in self.runs:
            if r.run_id == run_id:
                return r
        raise KeyError(run_id)
