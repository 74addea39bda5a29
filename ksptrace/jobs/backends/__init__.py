"""The registry of backends: local, slurm, pbs. An unknown name fails with the valid ones."""

from __future__ import annotations

from ksptrace.errors import UsageError
from ksptrace.jobs.backends.base import Backend, Script
from ksptrace.jobs.backends.local import LocalBackend
from ksptrace.jobs.backends.pbs import PbsBackend
from ksptrace.jobs.backends.slurm import SlurmBackend

BACKENDS: dict[str, type[Backend]] = {
    cls.name: cls for cls in (LocalBackend, SlurmBackend, PbsBackend)
}


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]()
    except KeyError:
        valid = ", ".join(BACKENDS)
        raise UsageError(f"unknown backend '{name}'; valid backends: {valid}") from None




def alive_any(job: str) -> bool | None:
    """Ask each backend in turn whether the job a run marker names still exists."""
    for cls in BACKENDS.values():
        answer = cls().alive(job)
        if answer is not None:
            return answer
    return None


__all__ = ["BACKENDS", "Backend", "Script", "alive_any", "get_backend"]
