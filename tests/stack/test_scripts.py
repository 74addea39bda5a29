"""The stack scripts refuse bad input with one line and a non-zero exit, before building."""

from __future__ import annotations

import subprocess

import pytest

from tests.stack import stacks
from tests.stack.stacks import ROOT


def _bash(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(["bash", *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env}, check=False)


def test_an_unknown_stack_is_refused() -> None:
    done = _bash("scripts/bootstrap.sh", "--stack", "conda")
    assert done.returncode == 2
    assert done.stderr.strip() == ("bootstrap: unknown stack 'conda'; use --stack pypi (or "
                                   "debian, the default)")


def test_an_unknown_index_size_is_refused() -> None:
    done = _bash("scripts/stack_pypi.sh", KSPTRACE_STACK_INDEX="48")
    assert done.returncode == 2
    assert done.stderr.strip() == "stack-pypi: KSPTRACE_STACK_INDEX=48 is not 32 or 64"


def test_test_stack_runs_the_trace_tests() -> None:
    """``make test-stack`` traces a C program built against the stack's PETSc and petsc4py
    programs on it (issue 53), and checks trace's one-line errors there."""
    script = (ROOT / "scripts" / "test_stack.sh").read_text()
    call = script[script.index("-m pytest"):].split("||")[0]
    paths = [w for w in call.replace("\\\n", " ").split() if w.startswith("tests/")]
    for wanted in ("tests/harness/hook/test_own_program.py", "tests/harness/hook/test_tutorials.py",
                   "tests/cli/test_trace.py", "tests/studies/fits/test_maxima.py"):
        assert any(wanted == p or wanted.startswith(p.rstrip("/") + "/") for p in paths), wanted
        assert (ROOT / wanted).is_file()


def test_the_test_command_builds_petsc_on_mpich_after_the_other_stacks() -> None:
    """``bootstrap.sh --test`` builds PETSc on MPICH (issues 64, 65), last: after the MPICH venv
    it builds into and after OpenPBS; KSPTRACE_SKIP_MPICH_PETSC=1 (or KSPTRACE_SKIP_MPICH=1)
    leaves it out."""
    script = (ROOT / "scripts" / "bootstrap.sh").read_text()
    build = script.index("bash scripts/stack_mpich_petsc.sh > /dev/null")
    assert script.index("bash scripts/stack_mpich.sh > /dev/null") < build
    assert script.index("bash scripts/pbs-local.sh build") < build
    guard = script.rindex("\nif ", 0, build)
    assert 'KSPTRACE_SKIP_MPICH_PETSC:-0}" != 1' in script[guard:build]
    assert 'KSPTRACE_SKIP_MPICH:-0}" != 1' in script[guard:build]
    assert '"${1:-}" = "--test"' in script[guard:build]
    assert "bootstrap.sh --mpich-petsc" in (ROOT / "Makefile").read_text()


def test_a_built_mpich_petsc_stack_is_found_not_rebuilt() -> None:
    """Once built, the script builds nothing (its log is untouched) and prints the venv's
    python, whose petsc4py runs PETSc on MPICH."""
    found = stacks.mpich_petsc()
    if isinstance(found, str):
        pytest.skip(found)
    stack, tutorials = found
    log = tutorials.parent / "build.log"
    before = log.stat()
    done = _bash("scripts/stack_mpich_petsc.sh")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == stack.python
    after = log.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
