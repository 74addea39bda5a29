"""What the batch backends hand to sbatch and qsub: the user's environment, never the identity
of an MPI runtime the submitting process happens to carry."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ksptrace.harness.launching.mpienv import without_mpi_runtime
from ksptrace.jobs.backends import get_backend
from ksptrace.jobs.backends.base import Script

RUNTIME = {"PMIX_NAMESPACE": "stale.0", "PMIX_RANK": "0", "PMIX_SERVER_URI41": "x",
           "OMPI_MCA_ess": "singleton", "OMPI_MCA_orte_precondition_transports": "1-2",
           "OMPI_MCA_orte_launch": "1", "OMPI_APP_CTX_NUM_PROCS": "1",
           "OMPI_COMM_WORLD_SIZE": "1", "ORTE_SCHIZO_DETECTION": "ORTE"}
USER = {"OMPI_MCA_btl": "self,vader", "OMPI_MCA_coll_tuned_allreduce_algorithm": "4",
        "SLURM_CONF": "/tmp/slurm.conf", "PATH": "/usr/bin"}


def test_the_runtime_identity_goes_and_the_users_settings_stay() -> None:
    env = without_mpi_runtime({**RUNTIME, **USER})
    assert env == USER


@pytest.mark.parametrize(("backend", "tool", "reply"), [("slurm", "sbatch", "42\n"),
                                                         ("pbs", "qsub", "42.server\n")])
def test_sbatch_and_qsub_get_an_explicit_clean_environment(
        backend: str, tool: str, reply: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in RUNTIME.items():
        monkeypatch.setenv(key, value)
    seen: list[dict[str, Any]] = []

    def fake_run(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        seen.append({"args": args, **kw})
        return subprocess.CompletedProcess(args, 0, stdout=reply, stderr="")

    monkeypatch.setattr(subprocess, "run", fake_run)
    spec: Any = type("Spec", (), {"output": tmp_path, "name": "c"})()
    script = Script("scripts/x.sh", "#!/bin/sh\n", ())
    get_backend(backend).submit(spec, [script])
    (call,) = [c for c in seen if c["args"][0] == tool]
    assert call.get("env") is not None, f"{tool} inherits the raw environment"
    assert not set(RUNTIME) & set(call["env"])
    assert call["env"]["PATH"] == os.environ["PATH"]
