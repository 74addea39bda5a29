"""The one exception hierarchy of ksptrace.

Every error carries a message that says what is wrong and what to do.
The CLI prints ``ksptrace: error: <message>`` and exits non-zero, with no traceback.
"""

from __future__ import annotations


class KsptraceError(Exception):
    """Base of all ksptrace errors. ``exit_code`` is what the CLI returns."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        if not message:
            raise ValueError("a KsptraceError needs a message")
        super().__init__(message)


class UsageError(KsptraceError):
    """Bad user input: a wrong name, a value out of range, a missing file."""

    exit_code = 2


class EnvironmentProblem(KsptraceError):
    """Something the machine lacks: petsc4py, mpiexec, a scheduler command."""

    exit_code = 3


class TraceError(KsptraceError):
    """A trace file that is missing, corrupt, truncated or from a newer schema."""

    exit_code = 4


class SolverError(KsptraceError):
    """A solve that did not do what was asked (for example stopped before K iterations)."""

    exit_code = 5


class AnalysisError(KsptraceError):
    """An analysis that cannot be computed from the data given (and says why)."""

    exit_code = 6


class CampaignError(KsptraceError):
    """A campaign file or a campaign folder that is invalid."""

    exit_code = 7


class OutputError(KsptraceError):
    """Results that cannot be written (full disk, read-only or unwritable folder); nothing
    partial is left behind."""

    exit_code = 8


class WrongResult(KsptraceError):
    """A computation returned wrong values (an MPI collective whose result fails its check)."""

    exit_code = 9


class Interrupted(KsptraceError):
    """The user stopped the work (Ctrl-C, SIGTERM); what was running was stopped cleanly."""

    exit_code = 130


class ContaminatedTimings(UserWarning):
    """Other processes used the node's CPUs during a recorded solve (a warning, not an error:
    the trace is written and says so in foreign_cpu_share)."""
