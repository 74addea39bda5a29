"""What a trace records about where and how it was made: library versions, the launcher's and
scheduler's environment, and every attribute of a run.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
from typing import Any

import numpy as np

from ksptrace.harness.config.kspsetup import effective_restart
from ksptrace.harness.config.settings import RunSettings
from ksptrace.harness.launching.mpienv import cpu_list
from ksptrace.trace.model import AttrValue
from ksptrace.version import __version__

LAUNCH_ENV = "KSPTRACE_LAUNCH"
"""JSON set by ``ksptrace run --np``: the launcher, the flags it added and the user's command."""


PROVENANCE_ENV: dict[str, str] = {
    "KSPTRACE_CAMPAIGN_HASH": "campaign_hash",
    "KSPTRACE_RUN_ID": "run_id",
    "KSPTRACE_REPETITION": "repetition",
    "KSPTRACE_CAMPAIGN": "campaign",
    "SLURM_JOB_ID": "slurm_job_id",
    "SLURM_ARRAY_JOB_ID": "slurm_array_job_id",
    "SLURM_ARRAY_TASK_ID": "slurm_array_task_id",
    "SLURM_JOB_NAME": "slurm_job_name",
    "PBS_JOBID": "pbs_jobid",
    "PBS_ARRAY_INDEX": "pbs_array_index",
    "PBS_ARRAY_ID": "pbs_array_id",
}
"""Environment variables recorded as trace attributes when present."""


def versions(petsc: Any) -> dict[str, AttrValue]:
    import h5py
    import mpi4py
    import petsc4py
    from mpi4py import MPI

    from ksptrace.harness.petsc import petscbuild

    major, minor, patch = petsc.Sys.getVersion()
    config = petsc4py.get_config()
    return {
        "petsc_version": f"{major}.{minor}.{patch}",
        # which build: a site's PETSC_DIR/PETSC_ARCH, and the types it was configured with
        "petsc_dir": str(config.get("PETSC_DIR", "") or ""),
        "petsc_arch": str(config.get("PETSC_ARCH", "") or ""),
        "petsc_int_bytes": int(np.dtype(petsc.IntType).itemsize),
        "petsc_real_bytes": int(np.dtype(petsc.RealType).itemsize),
        "petsc_scalar": "complex" if np.dtype(petsc.ScalarType).kind == "c" else "real",
        "petsc_debugging": petscbuild.debugging(),
        "petsc4py_version": petsc4py.__version__,
        "mpi4py_version": mpi4py.__version__,
        "mpi_library": MPI.Get_library_version().strip().splitlines()[0],
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
        "h5py_version": h5py.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "ksptrace_version": __version__,
    }


def run_attributes(
    settings: RunSettings,
    petsc: Any,
    ksp: Any,
    instance: Any,
    layout: Any,
    nprocs: int,
    start_utc: str,
) -> dict[str, AttrValue | None]:
    launch = json.loads(os.environ.get(LAUNCH_ENV, "{}") or "{}")
    attrs: dict[str, AttrValue | None] = {
        "problem": settings.problem,
        "n": settings.n,
        "n_global": int(instance.n_global),
        "nnz": int(instance.nnz),
        "ksp": ksp.getType(),
        "ksp_requested": settings.ksp,
        "pc": ksp.getPC().getType(),
        "iterations": settings.iterations,
        "restart": effective_restart(settings, petsc, ksp),
        "warmup": settings.warmup,
        "nprocs": nprocs,
        "n_nodes": len(set(layout.node_ids)),
        "ranks_per_node": max(layout.node_ids.count(i) for i in set(layout.node_ids)),
        "cpu_count": os.cpu_count() or 0,
        "oversubscribed": layout.oversubscribed,
        "rank_cpus": " ".join(cpu_list(c) for c in layout.rank_cpus),
        "ranks_pinned": layout.pinned,
        "start_utc": start_utc,
        "command_line": launch.get("command_line") or shlex.join(sys.argv),
        "argv": shlex.join(sys.argv),
        "petsc_options": shlex.join(settings.petsc_options),
        "problem_config": json.dumps(
            {k: v for k, v in settings.problem_options.items() if v is not None}, sort_keys=True
        ),
        "launcher": launch.get("launcher", "external" if nprocs > 1 else "none"),
        "launcher_flags": " ".join(launch.get("flags", [])),
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
    }
    attrs.update(versions(petsc))
    for key, value in settings.problem_options.items():
        attrs.setdefault(key, value)
    attrs.update(instance.attrs())
    for env, key in PROVENANCE_ENV.items():
        if os.environ.get(env):
            attrs[key] = os.environ[env]
    return attrs
