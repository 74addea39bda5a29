"""Everything that differs between the petsc4py versions ksptrace runs on, in one place.

ksptrace is tested on Debian 12's petsc4py 3.18.5 and on the PyPI stack's 3.26.1
(docs/install.md). Where the two behave differently, the difference is handled here, with the
versions named; no other module checks a PETSc version or an attribute that moved. (Names that
both versions share are simply used: ``DMDA.createMat`` and ``KSP.monitorCancel`` exist in both,
while ``createMatrix`` and ``cancelMonitor`` are 3.18 only.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def is_petsc_error(exc: BaseException) -> bool:
    """Whether ``exc`` is petsc4py's PETSc.Error, by its type's name (the PETSc module may be
    what failed to load)."""
    return any(t.__name__ == "Error" and t.__module__.startswith("petsc4py")
               for t in type(exc).__mro__)


def error_traceback(exc: BaseException) -> list[str]:
    """The traceback PETSc reported with a PETSc.Error: its frames ("KSPSolve() at file:line")
    and its messages, innermost last.

    petsc4py 3.18 keeps the list as ``Error._traceback_``; 3.26 renamed it ``_traceback``
    (petsc4py's src/petsc4py/PETSc/Error.pyx)."""
    for name in ("_traceback", "_traceback_"):
        found = getattr(exc, name, None)
        if found:
            return [str(entry) for entry in found]
    return []


def python_cause(exc: BaseException) -> BaseException | None:
    """The Python exception that a callback (a monitor, Ctrl-C's KeyboardInterrupt) raised
    inside the PETSc call that raised ``exc``, or None.

    petsc4py 3.18 lets such an exception out of the PETSc call unchanged; 3.26 raises a
    PETSc.Error *from* it (its ``__cause__``; the code is -1 when ksptrace's C monitor returned
    it, PETSc's PETSC_ERR_PYTHON when a Python callback did)."""
    cause = exc.__cause__
    if is_petsc_error(exc) and cause is not None and not is_petsc_error(cause):
        return cause
    return None


@contextmanager
def python_errors_as_raised() -> Iterator[None]:
    """Within the block, a Python exception raised inside a PETSc call comes out as itself on
    every petsc4py (a KeyboardInterrupt stays a KeyboardInterrupt), not wrapped in PETSc.Error."""
    try:
        yield
    except BaseException as exc:
        cause = python_cause(exc)
        if cause is None:
            raise
        raise cause.with_traceback(cause.__traceback__) from None
