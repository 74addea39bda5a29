"""``ksptrace trace`` launched in harm's way (issue 64): killed with SIGKILL mid-run, given odd
program names, an unsafe cache path, an output folder others can write, and raw records that
lie about their size. Each leaves nothing behind and says one clear line, or is made safe."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, Runner, solver_env
from tests.harness.hook import own_program
from tests.harness.hook.test_tutorials import mpiexec, traced


@pytest.fixture(scope="module")
def laplace1d(ksptrace_cli: Runner, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pdir = own_program.petsc_dir()
    why = own_program.missing(pdir)
    if why is not None:
        pytest.fail(why)
    return own_program.build(tmp_path_factory.mktemp("laplace1d"), pdir)


def _running(marker: str) -> list[int]:
    """Pids of processes whose command line holds ``marker`` (a path unique to this test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def _until(check: object, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def test_sigkill_of_trace_leaves_no_process_and_no_raw_folder(
        laplace1d: Path, tmp_path: Path) -> None:
    program = tmp_path / "long-solve"
    program.symlink_to(laplace1d)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ksptrace", "trace", "--out", str(out), "--", *mpiexec(2),
           str(program), "-n", "2000", "-solves", "100000"]
    trace = subprocess.Popen(cmd, env=solver_env(), cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert _until(lambda: list(out.glob(".ksptrace-hook-*/rank-*.bin")), 120), \
            "the ranks never started solving"
        assert _running(str(program))
        os.kill(trace.pid, signal.SIGKILL)
        trace.wait()
        assert _until(lambda: not _running(str(program)), 60), \
            f"left running: {_running(str(program))}"
        assert _until(lambda: not out.exists(), 30), list(out.iterdir())
    finally:
        for pid in _running(str(program)):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(("stem", "expected"), [
    ("x" * 250, "x" * 64),
    ("ex2\nforged-ex2-20260101T000000", "ex2_forged-ex2-20260101T000000"),
])
def test_odd_program_names_make_a_safe_file_name(laplace1d: Path, ksptrace_cli: Runner,
                                                  tmp_path: Path, stem: str,
                                                  expected: str) -> None:
    """A 250-character name (a file name holds 255 bytes) and a newline in the name."""
    program = tmp_path / stem
    program.symlink_to(laplace1d)
    proc, (t,) = traced(ksptrace_cli, tmp_path / "out", [str(program), "-n", "30"])
    assert t.path is not None
    assert Path(t.path).name.startswith(expected + "-")
    assert "\n" not in Path(t.path).name
    assert t.attrs["problem"] == expected
    assert "Traceback" not in proc.stderr


def test_a_command_through_a_shell_is_named_after_its_program(
        laplace1d: Path, ksptrace_cli: Runner, tmp_path: Path) -> None:
    _proc, (t,) = traced(ksptrace_cli, tmp_path / "out",
                        ["bash", "-c", f"exec mpiexec -n 1 {laplace1d} -n 30"])
    assert t.attrs["problem"] == "laplace1d"
    assert t.path is not None
    assert Path(t.path).name.startswith("laplace1d-")


BOUND = """
import resource, struct, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from ksptrace.errors import TraceError
from ksptrace.harness.hook import records
from ksptrace.harness.hook.assemble import assemble
raw = bytearray(records.HEADER_BYTES)
struct.pack_into("<8i", raw, 0, records.MAGIC, records.VERSION, 0, 2**31 - 1, 1, 4, 8, 1)
f = records.parse(bytes(raw) + struct.pack("<i", records.KIND_END), "rank-0")
try:
    assemble([f], {})
except TraceError as exc:
    print(exc)
"""


def test_a_raw_record_claiming_two_billion_ranks_is_one_error(tmp_path: Path) -> None:
    """Refused by counting the files, not by listing 2^31-1 ranks (run under a 2 GB address
    space limit, so a regression fails instead of taking the machine's memory)."""
    proc = subprocess.run([sys.executable, "-c", BOUND], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "records of 1 ranks (0) but the program ran on 2147483647" in proc.stdout


def test_an_output_folder_others_can_write_is_refused(laplace1d: Path, ksptrace_cli: Runner,
                                                      tmp_path: Path) -> None:
    out = tmp_path / "shared"
    out.mkdir()
    out.chmod(0o775)
    proc = ksptrace_cli("trace", "--out", str(out), "--", str(laplace1d), "-n", "30")
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ksptrace")]
    assert len(errors) == 1, proc.stderr
    assert "can be changed by other users (mode 775)" in errors[0]
    assert "Traceback" not in proc.stderr
    assert list(out.iterdir()) == []  # nothing ran, nothing written
    made = tmp_path / "new" / "traces"  # a folder trace makes is closed to others
    _, (_t,) = traced(ksptrace_cli, made, [str(laplace1d), "-n", "30"])
    assert made.stat().st_mode & 0o022 == 0


PLANT = """
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
  FILE *f = fopen("%s", "w");
  if (f) fclose(f);
}
"""


def test_a_cache_path_with_a_space_or_colon_is_not_split_by_the_loader(
        laplace1d: Path, tmp_path: Path) -> None:
    """With the hook cached under "c d:e", LD_PRELOAD read "d:e/..." relative to the working
    folder; a library planted there by another user ran in the traced program."""
    cache = tmp_path / "c d:e"
    cache.mkdir(mode=0o700)
    env = solver_env(KSPTRACE_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    name = subprocess.run([sys.executable, "-c", "from ksptrace.harness.hook import build; "
                           "print(build.library().name)"], env=env, capture_output=True,
                          text=True, timeout=600, check=True, cwd=ROOT).stdout.strip()
    work = tmp_path / "work"
    marker = tmp_path / "planted-ran"
    source = tmp_path / "plant.c"
    source.write_text(PLANT % marker)
    for piece in ("d", "e", "d:e"):  # wherever a split piece could resolve
        folder = work / piece
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(folder / name), str(source)],
                       check=True, timeout=120)
    proc = subprocess.run([sys.executable, "-m", "ksptrace", "trace", "--out",
                           str(tmp_path / "out"), "--", str(laplace1d), "-n", "30"],
                          env=env, capture_output=True, text=True, timeout=600, cwd=work,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not marker.exists()
    assert len(list((tmp_path / "out").glob("laplace1d-*.h5"))) == 1


def test_a_program_that_execs_another_is_traced_not_called_crashed(
        laplace1d: Path, ksptrace_cli: Runner, tmp_path: Path) -> None:
    """laplace1d solves, then becomes /bin/true (execl): its file is ended before the exec;
    becoming laplace1d again, the second program's solves are traced too, as another KSP."""
    proc, (t,) = traced(ksptrace_cli, tmp_path / "true", [str(laplace1d), "-n", "30",
                                                          "-exec", "/bin/true"])
    assert t.solves is not None
    assert t.solves.count == 2
    assert "killed or crashed" not in proc.stderr
    proc, traces = traced(ksptrace_cli, tmp_path / "again", [str(laplace1d), "-n", "30",
                                                             "-exec", str(laplace1d)])
    assert [t.attrs["n"] for t in traces] == [30, 200]  # the second program's default size
    assert all(t.solves is not None and t.solves.count == 2 for t in traces)


@pytest.mark.parametrize("nprocs", [1, 2])
def test_a_program_that_forks_children_keeps_its_records_whole(
        laplace1d: Path, ksptrace_cli: Runner, tmp_path: Path, nprocs: int) -> None:
    """A child forked after each solve exits at once, destructors and all: it writes nothing
    of the parent's buffered records, so the trace holds each solve once."""
    proc, (t,) = traced(ksptrace_cli, tmp_path, [*mpiexec(nprocs), str(laplace1d), "-n", "30",
                                                 "-solves", "3", "-fork"])
    assert t.solves is not None
    assert t.solves.iterations.tolist() == [30, 30, 30]
    assert "killed or crashed" not in proc.stderr
