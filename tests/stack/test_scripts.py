"""The stack scripts refuse bad input with one line and a non-zero exit, before building."""

from __future__ import annotations

import subprocess

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
