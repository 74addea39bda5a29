"""Every fenced ``sh`` and ``python`` block of README.md and docs/*.md runs as a test (issue 31).

Sybil (a well-kept library for exactly this) finds the blocks; the root ``conftest.py`` hands
them to pytest, one test per block, named by file and line. Each document runs in its own
temporary folder holding copies of the repository's ``examples/``, ``scripts/``, ``Makefile`` and
``pyproject.toml`` and a link to its ``.venv``, so nothing a documented command writes lands in
the clone. In that copy the example campaigns are the small ones of ``tests/docs/small/`` (same
names, fewer and smaller runs): that is the one way sizes shrink, and the commands are the
documents' own, character for character.

- ``sh`` blocks run in a new ``bash -euo pipefail`` each, in the document's folder, with
  ``.venv/bin`` first on ``PATH``, Open MPI's root variables set and ``PETSC_DIR`` unset (what a
  user's shell has after ``source .venv/bin/activate``).
- ``python`` blocks run in a new ``.venv/bin/python`` each. An
  ``<!-- invisible-code-block: python ... -->`` before them is prepended to every later python
  block of that document (the matrix a fragment assumes, say); an invisible ``sh`` block runs.
- After each block the copy's ``git status`` must be clean: the copy is committed to a git
  repository of its own at the start, with the repository's ``.gitignore``, so a documented
  command that leaves files .gitignore does not cover fails its test.
- ``<!-- skip: next "reason" -->`` skips the next block with that reason (an ``sbatch``
  submission to a real cluster). A block that stops with exit 3 and the local cluster's
  "cannot run here" message is skipped with that message.
- A few command lines are tested here rather than marked up in the document, so that the raw
  README opens with its two commands together (issue 67): a line in :data:`NOT_RUN` is left out
  of its block (``make test`` would run this suite inside itself), and a line in :data:`CHECKED`
  is followed by its check, run after the block (the browser check of the demo's report, skipped
  where Chromium is missing).
- ``TMPDIR`` is a folder of the document's own, removed with it: what a block writes into
  ``mktemp -d`` (the README tour) is gone after the test.

The documents run two at a time (tests/docs/ahead.py); each block's test reports its block's
outcome. The count of run and skipped blocks is printed at the end of the test run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from unittest import SkipTest

from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, SkipParser

from tests.docs import ahead

ROOT = Path(__file__).resolve().parents[2]
SMALL = Path(__file__).resolve().parent / "small"
COPIED = ("examples", "scripts", "Makefile", "pyproject.toml", ".gitignore")
CANNOT_RUN = 3  # scripts/slurm-local.sh, cluster-local.sh and pbs-local.sh: "cannot run here"
BLOCK_TIMEOUT = 900.0
NOT_RUN = {"make test": "make test is this test suite: it would run itself"}
"""Command lines (comments aside) a block runs without: the reason each is not run here."""
CHECKED = {"make demo": ".venv/bin/python -m tests.report.demo_page demo-out/report/report.html"}
"""Command lines whose outcome is checked once their block has run: the check."""


def _environment(work: Path, scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k != "PETSC_DIR" and not k.startswith(("PYTEST_", "KSPTRACE_"))}
    env.update(PATH=f"{work / '.venv' / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}",
               TMPDIR=str(scratch),
               VIRTUAL_ENV=str(work / ".venv"), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=str(ROOT))  # a hidden block runs tests.report.demo_page
    return env


def _venv_is_current() -> None:
    """The documents' ``make`` commands run the bootstrap in the copy: were the venv's install
    older than pyproject.toml, it would reinstall ksptrace from the copy, which is then deleted.
    ``make test`` bootstraps first; a bare ``pytest`` after editing pyproject.toml stops here."""
    stamp = ROOT / ".venv" / ".ksptrace-installed"
    if not stamp.exists() or stamp.stat().st_mtime < (ROOT / "pyproject.toml").stat().st_mtime:
        raise RuntimeError("the venv is older than pyproject.toml: run `bash scripts/bootstrap.sh "
                           "--test` (make test does) before the documentation tests")


def setup(namespace: dict[str, Any]) -> None:
    _venv_is_current()
    work = Path(tempfile.mkdtemp(prefix="ksptrace-docs-"))
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, work / name, symlinks=True,
                            ignore=shutil.ignore_patterns("runs", "__pycache__"))
        else:
            shutil.copy2(source, work / name)
    for small in SMALL.glob("*.toml"):
        shutil.copy2(small, work / "examples" / small.name)
    (work / ".venv").symlink_to(ROOT / ".venv")
    _git(work, "init", "-q")
    (work / ".git" / "info" / "exclude").write_text(".venv\n")
    _git(work, "add", "-A")
    _git(work, "-c", "user.name=docs", "-c", "user.email=docs@ksptrace", "commit", "-qm", "copy")
    scratch = Path(tempfile.mkdtemp(prefix="ksptrace-docs-py-"))
    namespace.update(work=work, scratch=scratch, env=_environment(work, scratch), prelude=[])


def teardown(namespace: dict[str, Any]) -> None:
    shutil.rmtree(namespace["work"], ignore_errors=True)
    shutil.rmtree(namespace["scratch"], ignore_errors=True)


def _git(work: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=work, capture_output=True, text=True,
                          check=True).stdout


def _dirt(example: Example) -> None:
    """The copy is a git checkout: what a documented command leaves that .gitignore does not
    cover would leave a user's clone unclean (issue 31)."""
    left = _git(example.namespace["work"], "status", "--porcelain").splitlines()
    if left:
        raise AssertionError(f"{_where(example)}: git status is not clean after the block: "
                             + "; ".join(left[:10]))


def _where(example: Example) -> str:
    return f"{Path(example.path).relative_to(ROOT)}:{example.line}"


def _run(example: Example, argv: list[str]) -> None:
    namespace = example.namespace
    with subprocess.Popen(argv, cwd=namespace["work"], env=namespace["env"], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, start_new_session=True) as child:
        try:
            out, err = child.communicate(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:  # the block's whole group, not only its bash
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise
    proc = subprocess.CompletedProcess(argv, child.returncode, out, err)
    if proc.returncode == 0:
        _dirt(example)
        return
    why = re.search(r"^(?:(?:cluster|slurm|pbs)-local: error:|demo-page:) (.*)$", proc.stderr,
                    re.MULTILINE)
    if proc.returncode == CANNOT_RUN and why:
        raise SkipTest(f"{_where(example)}: {why.group(1)}")
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
    raise AssertionError(f"{_where(example)}: the documented block exited {proc.returncode}:\n"
                         f"{tail}")


def _invisible(example: Example) -> bool:
    return "invisible" in str(example.region.lexemes.get("directive") or "")


def _replayed(example: Example) -> bool:
    """In the tests pytest runs, a block reports what its document's run found (ahead.py)."""
    if example.namespace.get("mode") == "run":
        return False
    ahead.outcome(example.path, example.line)
    return True


def as_tested(block: str) -> tuple[str, list[str], list[str]]:
    """``block`` as the test runs it (the lines of :data:`NOT_RUN` left out), the checks to run
    after it (:data:`CHECKED`), and why lines were left out."""
    kept, checks, reasons = [], [], []
    for line in block.splitlines():
        command = line.split("#", 1)[0].strip()
        if command in NOT_RUN:
            reasons.append(NOT_RUN[command])
            continue
        kept.append(line)
        if command in CHECKED:
            checks.append(CHECKED[command])
    return "\n".join(kept), checks, reasons


def run_shell(example: Example) -> None:
    if _replayed(example):
        return
    script, checks, reasons = as_tested(str(example.parsed))
    if not script.strip():
        raise SkipTest(f"{_where(example)}: {'; '.join(reasons)}")
    _run(example, ["bash", "-euo", "pipefail", "-c", script])
    for check in checks:
        _run(example, ["bash", "-euo", "pipefail", "-c", check])


def run_python(example: Example) -> None:
    if _replayed(example):
        return
    prelude: list[str] = example.namespace["prelude"]
    if _invisible(example):
        prelude.append(str(example.parsed))
        return
    script = example.namespace["scratch"] / f"block-{example.line}.py"
    script.write_text("\n".join([*prelude, str(example.parsed)]))
    try:
        _run(example, [str(ROOT / ".venv" / "bin" / "python"), str(script)])
    finally:
        script.unlink(missing_ok=True)


PARSERS = [CodeBlockParser("sh", run_shell), CodeBlockParser("python", run_python),
           SkipParser()]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _parse(path: Path) -> Any:
    return RUNNER.parse(path)


def _replay_setup(namespace: dict[str, Any]) -> None:
    """pytest's view of a document: start every document's run (once), then replay."""
    namespace["mode"] = "replay"
    ahead.start(DOCUMENTS, _parse, setup, teardown)


def start_early() -> None:
    """Start the collected documents now, beside the tests (ahead.py; not the LATE ones)."""
    ahead.start(DOCUMENTS, _parse, setup, teardown, early=True)


RUNNER = Sybil(parsers=PARSERS, patterns=["README.md", "docs/*.md"], path=str(ROOT))
"""Parses a document for its run in ahead.py (setup and teardown are called there)."""
DOCS = Sybil(parsers=PARSERS, patterns=["README.md", "docs/*.md"], path=str(ROOT),
             setup=_replay_setup)
"""What pytest collects (conftest.py): each block a test that reports its run's outcome."""
