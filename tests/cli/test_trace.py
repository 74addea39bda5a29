"""``ksptrace trace``'s one-line errors: a program it cannot reach, a command that fails, a
command with no PETSc in it. Each leaves no trace and no folder of records behind."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import Runner


def assert_one_line(proc: subprocess.CompletedProcess[str], code: int, words: str) -> None:
    assert proc.returncode == code, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("ksptrace")]
    assert len(lines) == 1, proc.stderr
    assert words in lines[0]
    assert "Traceback" not in proc.stderr


def test_a_statically_linked_program_is_refused_before_it_runs(
        ksptrace_cli: Runner, tmp_path: Path) -> None:
    source = tmp_path / "s.c"
    source.write_text('#include <stdio.h>\nint main(void) { puts("ran"); return 0; }\n')
    subprocess.run(["cc", "-static", "-o", str(tmp_path / "s"), str(source)], check=True)
    proc = ksptrace_cli("trace", "--out", str(tmp_path / "out"), "--", "mpiexec", "-n", "1",
                        str(tmp_path / "s"))
    assert_one_line(proc, 2, "is statically linked, so LD_PRELOAD cannot reach it")
    assert "ran" not in proc.stdout
    assert not (tmp_path / "out").exists()


def test_a_failing_command_writes_nothing_and_passes_its_status_on(
        ksptrace_cli: Runner, tmp_path: Path) -> None:
    proc = ksptrace_cli("trace", "--out", str(tmp_path / "out"), "--", "sh", "-c", "exit 3")
    assert_one_line(proc, 3, "the command exited with status 3; no trace written")
    assert not (tmp_path / "out").exists()


def test_a_command_without_petsc_says_so(ksptrace_cli: Runner, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    proc = ksptrace_cli("trace", "--out", str(tmp_path / "out"), "--", "true")
    assert_one_line(proc, 5, "ran no KSPSolve that the hook could see")
    assert list((tmp_path / "out").iterdir()) == []  # the folder stays, empty


def test_no_command_is_a_usage_error(ksptrace_cli: Runner) -> None:
    assert_one_line(ksptrace_cli("trace", "--"), 2, "no command to trace")
