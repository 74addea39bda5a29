"""Expansion of a sweep into runs: cartesian by default, zipped axes vary together.

Each run gets a stable id, a hash of what defines it, so that the same run has the same id in
every campaign, on every machine, whatever its position in the sweep.

The size of a sweep is the product of its axes' lengths and the repetitions, known before any
run is built: a sweep beyond :data:`MAX_RUNS` is refused at once (a 10^6-run sweep would take a
minute and gigabytes to expand) unless the caller allows it, and one beyond :data:`HARD_MAX_RUNS`
is refused even then: the ceiling itself must be affordable (issue 66: at the former ceiling of
10^6 runs a Slurm dry run took 201 s and 5.47 GB; at 10^5 it takes 39 s and 0.57 GB on the
loaded 2-core test machine).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ksptrace.collectives.params import COLLECTIVE_PARAMS
from ksptrace.errors import CampaignError
from ksptrace.harness.config.options import RUN_PARAMS
from ksptrace.harness.petsc.petsc_types import PetscTypes, current
from ksptrace.jobs.campaign_file import check_types, load_campaign_file
from ksptrace.jobs.program import argv, trace_flags
from ksptrace.jobs.schema import NPROCS, CampaignFile
from ksptrace.jobs.spec import (
    COLLECTIVES,
    PROGRAM,
    SOLVER,
    CampaignSpec,
    RunSpec,
    SchedulerSpec,
)
from ksptrace.problems import registry

WARN_RUNS = 1_000
"""Above this many runs, ``campaign plan`` and ``campaign run`` warn (check the sweep)."""
MAX_RUNS = 20_000
"""Above this many runs, a campaign needs ``--allow-large``."""
HARD_MAX_RUNS = 100_000
"""Above this many runs, a campaign is refused even with ``--allow-large`` (the cost of a
campaign run grows with its runs: 39 s and 0.57 GB for a Slurm dry run of 10^5)."""


OMITTED_AT_DEFAULT: dict[str, Any] = {"noise": "none", "mode": "per-call", "calls": 100,
                                      "per_octave": 0}
"""Parameters declared after campaigns existed: left out of a run's id at these values, so that
every earlier run keeps its id (and its trace counts as done) when its campaign is resumed."""


def run_id(params: Mapping[str, Any], nprocs: int, repetition: int,
           petsc_options: tuple[tuple[str, str], ...]) -> str:
    """12 hex digits of sha256 over the canonical JSON of the run's definition."""
    kept = {k: v for k, v in params.items()
            if k not in OMITTED_AT_DEFAULT or OMITTED_AT_DEFAULT[k] != v}
    doc = {"params": kept, "nprocs": nprocs, "repetition": repetition,
           "petsc_options": [list(o) for o in petsc_options]}
    blob = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


Axis = tuple[tuple[str, ...], list[tuple[Any, ...]]]
"""Keys that vary together, and their value tuples."""


def axes(sweep: Mapping[str, tuple[Any, ...]], zipped: tuple[tuple[str, ...], ...]) -> list[Axis]:
    """The sweep as a list of axes; each axis is (keys, list of value tuples)."""
    in_zip = {k: group for group in zipped for k in group}
    out: list[Axis] = []
    done: set[tuple[str, ...]] = set()
    for key in sweep:
        group = in_zip.get(key, (key,))
        if group in done:
            continue
        done.add(group)
        out.append((group, list(zip(*(sweep[k] for k in group), strict=True))))
    return out


def sweep_size(cf: CampaignFile) -> tuple[int, str]:
    """Runs the sweep asks for (before duplicates collapse), and how: ``3 ksp x 4 n x 2 reps``.

    Computed from the axes' lengths, without building a single run."""
    sweep_axes = axes(cf.sweep, cf.campaign["zip"])
    repetitions = int(cf.campaign["repetitions"])
    size = math.prod(len(values) for _, values in sweep_axes) * repetitions
    factors = [f"{len(values)} {'+'.join(keys)}" for keys, values in sweep_axes
               if len(values) > 1]
    if repetitions > 1:
        factors.append(f"{repetitions} repetitions")
    return size, " x ".join(factors) or "1 run"


def check_size(cf: CampaignFile, allow_large: bool) -> int:
    """The sweep's size; a CampaignError beyond MAX_RUNS unless ``allow_large``, and beyond
    HARD_MAX_RUNS always."""
    size, how = sweep_size(cf)
    if size > HARD_MAX_RUNS:
        raise CampaignError(
            f"{cf.path}: the sweep has {size:,} runs ({how}), more than {HARD_MAX_RUNS:,}, the "
            "most ksptrace expands even with --allow-large; split it into several campaigns")
    if size > MAX_RUNS and not allow_large:
        raise CampaignError(
            f"{cf.path}: the sweep has {size:,} runs ({how}), more than {MAX_RUNS:,}; shrink "
            "it (fewer values per axis, zip axes that vary together), or pass --allow-large "
            "if you mean it")
    return size


def _seeded(params: dict[str, Any], repetition: int) -> dict[str, Any]:
    """``params`` with the noise spec's seed advanced by ``repetition`` (no noise: unchanged)."""
    from ksptrace.noise.spec import parse

    text = params.get("noise")
    if not text or text == "none":
        return params
    spec = parse(str(text))
    if not spec.active:
        return params
    return {**params, "noise": spec.reseeded(repetition).text()}


def expand_runs(cf: CampaignFile) -> tuple[RunSpec, ...]:
    """Every run of the campaign, in sweep order (first key outermost), repetitions innermost;
    with ``interleave``, repetitions outermost (rounds over the whole sweep), and with
    ``alternate`` every other round reversed (ABBA)."""
    sweep_axes = axes(cf.sweep, cf.campaign["zip"])
    repetitions = int(cf.campaign["repetitions"])
    runs: list[RunSpec] = []
    seen: set[str] = set()
    for combo in itertools.product(*(values for _, values in sweep_axes)):
        point: dict[str, Any] = {}
        for (keys, _), values in zip(sweep_axes, combo, strict=True):
            point.update(zip(keys, values, strict=True))
        kind = cf.campaign.get("kind", SOLVER)
        nprocs = int(point.get(NPROCS.name, NPROCS.default))
        if kind == PROGRAM:
            runs += _program_runs(cf, point, nprocs, len(runs), seen)
            continue
        if kind == COLLECTIVES:
            params = {p.name: point.get(p.name, p.default) for p in COLLECTIVE_PARAMS}
            params["kind"] = kind  # in the run id: never the id of a solver run
        else:
            params = {p.name: point.get(p.name, p.default) for p in RUN_PARAMS}
            for p in registry.get(params["problem"]).params:
                params[p.name] = point.get(p.name, p.default)
        for rep in range(repetitions):
            own = _seeded(params, rep) if cf.campaign.get("noise_seed_per_repetition") \
                else params
            rid = run_id(own, nprocs, rep, cf.petsc_options)
            if rid in seen:  # a key the run's problem does not use collapses its axis
                continue
            seen.add(rid)
            kept = tuple((k, v) for k, v in own.items() if k != "kind")
            runs.append(RunSpec(run_id=rid, index=len(runs), nprocs=nprocs, repetition=rep,
                                params=kept, petsc_options=cf.petsc_options, kind=kind))
    if cf.campaign.get("interleave"):
        alternate = bool(cf.campaign.get("alternate"))
        rounds = sorted(runs, key=lambda r: (r.repetition,
                                             -r.index if alternate and r.repetition % 2 else
                                             r.index))
        runs = [dataclasses.replace(r, index=k) for k, r in enumerate(rounds)]
    elif cf.campaign.get("alternate"):
        raise CampaignError(f"{cf.where('campaign', 'alternate')}: alternate reverses every "
                            "other round of an interleaved campaign; add interleave = true")
    return tuple(runs)


def _program_runs(cf: CampaignFile, point: dict[str, Any], nprocs: int, first: int,
                  seen: set[str]) -> list[RunSpec]:
    """The repetitions of one point of a program campaign. The id covers the command's
    template, the point and the trace flags (not the program's absolute path, so that a moved
    campaign keeps its ids); the run also holds the filled command."""
    assert cf.program is not None
    template = cf.program["command"]
    axes_values = {k: v for k, v in point.items() if k != NPROCS.name}
    flags = tuple(trace_flags(cf.program))
    defining = {"kind": PROGRAM, "command": list(template), "trace_flags": list(flags),
                **{f"sweep.{k}": v for k, v in axes_values.items()}}
    words = tuple(argv(template, {**axes_values, NPROCS.name: nprocs}, cf.path.parent))
    out: list[RunSpec] = []
    for rep in range(int(cf.campaign["repetitions"])):
        rid = run_id(defining, nprocs, rep, cf.petsc_options)
        if rid in seen:
            continue
        seen.add(rid)
        params = (*axes_values.items(), ("argv", words), ("trace_flags", flags))
        out.append(RunSpec(run_id=rid, index=first + len(out), nprocs=nprocs, repetition=rep,
                           params=tuple(params), petsc_options=cf.petsc_options, kind=PROGRAM))
    return out


def build_spec(cf: CampaignFile, output: str | Path | None = None,
               allow_large: bool = False) -> CampaignSpec:
    """The frozen spec of a checked campaign file; ``output`` overrides the file's folder.

    A sweep of more than MAX_RUNS runs is refused before it is expanded, unless
    ``allow_large``."""
    check_size(cf, allow_large)
    s = cf.scheduler
    out = Path(output) if output is not None else cf.path.parent / cf.campaign["output"]
    try:
        command = tuple(shlex.split(cf.campaign["command"]))
    except ValueError as exc:
        raise CampaignError(f"{cf.where('campaign', 'command')}: command: {exc}") from None
    if not command:
        raise CampaignError(f"{cf.where('campaign', 'command')}: command is empty; "
                            "give e.g. 'ksptrace' or 'python3 -m ksptrace'")
    scheduler = SchedulerSpec(
        partition=s["partition"], account=s["account"], walltime_seconds=s["walltime_seconds"],
        node_count=s["nodes"], ranks_per_node=s["ranks_per_node"],
        cores_per_node=s["cores_per_node"],
        exclusive=s["exclusive"], launcher=s["launcher"], mpi=s["mpi"],
        max_parallel=s["max_parallel"], max_array_size=s["max_array_size"],
        sbatch_directives=s["sbatch_directives"],
        pbs_directives=s["pbs_directives"],
    )
    rpn, cores = scheduler.ranks_per_node, scheduler.cores_per_node
    if rpn and cores and rpn > cores and not cf.campaign["oversubscribe"]:
        raise CampaignError(
            f"{cf.where('scheduler', 'ranks_per_node')}: ranks_per_node "
            f"{scheduler.ranks_per_node} > cores_per_node {scheduler.cores_per_node}; lower it "
            "or set oversubscribe = true in [campaign]")
    runs = expand_runs(cf)
    check_nodes(cf, scheduler, runs)
    check_noise_reach(cf, scheduler, runs)
    return CampaignSpec(
        name=cf.campaign["name"], source=str(cf.path),
        campaign_hash=hashlib.sha256(cf.text.encode()).hexdigest(),
        output=out.absolute(), command=command, setup=cf.campaign["setup"],
        oversubscribe=cf.campaign["oversubscribe"], scheduler=scheduler, runs=runs,
    )


def check_nodes(cf: CampaignFile, sched: SchedulerSpec, runs: tuple[RunSpec, ...]) -> None:
    """With the ``nodes`` key every run must give each node a rank, fit ``ranks_per_node``
    when that is set, and (unless ``oversubscribe``) fit ``cores_per_node``."""
    nodes = sched.node_count
    if nodes is None:
        return
    where = cf.where("scheduler", "nodes")
    for run in runs:
        if run.nprocs < nodes:
            raise CampaignError(f"{where}: a run with nprocs {run.nprocs} cannot span nodes = "
                                f"{nodes} (every node needs a rank); raise nprocs or lower nodes")
        if sched.ranks_per_node is not None and run.nprocs > nodes * sched.ranks_per_node:
            raise CampaignError(
                f"{where}: nprocs {run.nprocs} does not fit nodes = {nodes} x ranks_per_node = "
                f"{sched.ranks_per_node}; raise one of them or leave ranks_per_node unset")
        if sched.oversubscribed(run.nprocs) and not cf.campaign["oversubscribe"]:
            raise CampaignError(
                f"{where}: nprocs {run.nprocs} on {nodes} nodes puts "
                f"{sched.ranks_per_node_for(run.nprocs)} ranks on a node of cores_per_node = "
                f"{sched.cores_per_node}; lower nprocs or set oversubscribe = true in [campaign]")


def load_spec(path: str | Path, output: str | Path | None = None, allow_large: bool = False,
              petsc: PetscTypes | None = None) -> CampaignSpec:
    """Load, check and expand a campaign file.

    KSP and PC names are checked against ``petsc``, by default the installed petsc4py's lists
    or the built-in ones (:func:`ksptrace.harness.petsc.petsc_types.current`: about 1 s, so only
    once the sweep's size has passed and only when the sweep names a KSP or PC)."""
    cf = load_campaign_file(path, None)
    check_size(cf, allow_large)
    if cf.campaign["kind"] != PROGRAM and ("ksp" in cf.sweep or "pc" in cf.sweep):
        check_types(cf, current() if petsc is None else petsc)
    spec = build_spec(cf, output, allow_large)
    if cf.campaign["kind"] == COLLECTIVES:
        check_algorithms(cf, spec)
    return spec


def check_algorithms(cf: CampaignFile, spec: CampaignSpec, library: str | None = None) -> None:
    """Every run's algorithm (and segment size) must be one this machine's MPI can force
    (checked when the MPI is Open MPI or MPICH; elsewhere the runs check for themselves)."""
    from ksptrace.collectives import algorithms as alg
    from ksptrace.errors import EnvironmentProblem, UsageError
    from ksptrace.harness.launching.launch import find_mpiexec

    if library is None:
        try:
            library = find_mpiexec().flavor
        except EnvironmentProblem:
            return
    if library not in ("openmpi", "mpich"):
        return
    for run in spec.runs:
        op = str(run.param("op"))
        try:
            catalogue = alg.ompi_catalogue(op) if library == "openmpi" else None
            alg.forcing_for(library, op, str(run.param("algorithm")), catalogue,
                            int(run.param("segment_bytes")))
        except (UsageError, EnvironmentProblem) as exc:
            raise CampaignError(f"{cf.where('sweep', 'algorithm')}: run {run.run_id} "
                                f"({run.label}): {exc}") from None


def check_noise_reach(cf: CampaignFile, sched: SchedulerSpec, runs: tuple[RunSpec, ...]) -> None:
    """Every run's noise must name only ranks (nodes with per=node) the run has: a rank it
    does not have would detour nowhere, silently (a node count the file does not fix is bounded
    by the run's ranks; the run itself checks its real nodes)."""
    from ksptrace.noise.spec import parse

    for run in runs:
        text = run.param("noise") if run.kind == SOLVER else "none"
        if not text or text == "none":
            continue
        known = sched.node_count is not None or sched.ranks_per_node is not None
        problem = parse(str(text)).reach_problem(run.nprocs, sched.nodes(run.nprocs)
                                                 if known else None)
        if problem is not None:
            raise CampaignError(f"{cf.where('sweep', 'noise')}: run {run.run_id} "
                                f"({run.label}): {problem}")
