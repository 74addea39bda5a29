"""The petsc4py differences in one module (issue 34), checked without PETSc: both versions'
ways of reporting a Python exception raised inside a PETSc call."""

from __future__ import annotations

import pytest

from ksptrace.harness.petsc import petsc_compat

Error = type("Error", (RuntimeError,), {"__module__": "petsc4py.PETSc"})
"""Stands in for petsc4py's PETSc.Error (recognised by its name and module)."""


def _wrapped(cause: BaseException, ierr: int) -> BaseException:
    """What petsc4py 3.26 raises: PETSc.Error(ierr) from the callback's exception."""
    error = Error(ierr)
    error.ierr = ierr  # type: ignore[attr-defined]
    error.__cause__ = cause
    return error


def test_a_wrapped_python_exception_comes_out_as_itself() -> None:
    with pytest.raises(KeyboardInterrupt), petsc_compat.python_errors_as_raised():
        raise _wrapped(KeyboardInterrupt(), -1)
    with pytest.raises(ValueError, match="stop at 30"), petsc_compat.python_errors_as_raised():
        raise _wrapped(ValueError("stop at 30"), 101)


def test_an_unwrapped_one_and_a_real_petsc_error_pass_unchanged() -> None:
    # petsc4py 3.18 lets it out as it is
    with pytest.raises(KeyboardInterrupt), petsc_compat.python_errors_as_raised():
        raise KeyboardInterrupt
    plain = Error(63)
    with pytest.raises(Error) as caught, petsc_compat.python_errors_as_raised():
        raise plain  # PETSc refused: no Python cause
    assert caught.value is plain
    chained = _wrapped(Error(56), 56)  # one PETSc error from another is still PETSc's
    assert petsc_compat.python_cause(chained) is None
    assert petsc_compat.python_cause(ValueError()) is None


def test_the_traceback_under_either_name() -> None:
    old, new = Error(1), Error(1)
    old._traceback_ = ["A() at a.c:1", "message"]  # type: ignore[attr-defined]
    new._traceback = ["A() at a.c:1", "message"]  # type: ignore[attr-defined]
    assert petsc_compat.error_traceback(old) == petsc_compat.error_traceback(new) == [
        "A() at a.c:1", "message"]
    assert petsc_compat.error_traceback(Error(1)) == []
