"""The estimate line at mpiexec -n 2 (issue 66): PLogP after its first round, the collectives
after their probe, per call and back to back; once (rank 0's) under an external mpiexec;
nothing with --quiet; relayed by the launching process as it comes, not at the end."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ksptrace.cli.collectives import Relay
from tests.conftest import ROOT, solver_env

pytestmark = pytest.mark.mpi

PLOGP = ("--op", "plogp", "--max-bytes", "64", "--per-octave", "1", "--repetitions", "2",
         "--warmup", "1")
TIME = r"(under 0\.01 s|\d+(\.\d+)? s|\d+ min \d+ s|\d+ h \d+ min)"
ROUNDS = re.compile(rf"collectives: estimated {TIME} for 3 rounds over 7 sizes \(the first "
                    rf"round took {TIME}; load \d+\.\d\)")
SIZES = re.compile(rf"collectives: estimated {TIME} for 11 sizes x 5 repetitions \(a probe of "
                   rf"two repetitions at every size took {TIME}; load \d+\.\d\)")


def _cli(*args: str, launcher: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*launcher, sys.executable, "-m", "ksptrace", "collectives", *args],
                          env=solver_env(PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=300, cwd=ROOT, check=False)


def _estimates(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("collectives: estimated")]


@pytest.mark.parametrize(("args", "line"), [
    (PLOGP, ROUNDS),
    (("--max-bytes", "1K", "--repetitions", "2"), SIZES),
    (("--max-bytes", "1K", "--repetitions", "2", "--mode", "back-to-back", "--calls", "10"),
     SIZES),
])
def test_the_estimate_is_one_line_on_stderr(tmp_path: Path, args: tuple[str, ...],
                                            line: re.Pattern[str]) -> None:
    proc = _cli("--np", "2", *args, "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (said,) = _estimates(proc.stderr)
    assert line.fullmatch(said), said
    assert proc.stdout.startswith("wrote ")  # the estimate is on stderr only
    first = "collectives: timing the first of 3 rounds over 7 sizes for an estimate"
    assert (first in proc.stderr) == (line is ROUNDS)  # plogp says what the first round is for


def test_under_an_external_mpiexec_rank_0_says_it_once(tmp_path: Path) -> None:
    proc = _cli(*PLOGP, "--out", str(tmp_path),
                launcher=("mpiexec", "--oversubscribe", "-n", "2"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (said,) = _estimates(proc.stderr)
    assert ROUNDS.fullmatch(said), said


@pytest.mark.parametrize("args", [PLOGP, ("--max-bytes", "1K", "--repetitions", "2")])
def test_quiet_prints_nothing(tmp_path: Path, args: tuple[str, ...]) -> None:
    proc = _cli("--np", "2", *args, "--quiet", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == ""
    assert proc.stdout.startswith("wrote ")


def test_the_relay_passes_the_lines_on_as_they_come() -> None:
    sink = io.StringIO()
    relay = Relay(sink)
    os.write(relay.write_end, b"a rank's warning\ncollectives: estimated 2 min 10 s\n")
    deadline = time.monotonic() + 60
    while "estimated" not in sink.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sink.getvalue() == "collectives: estimated 2 min 10 s\n"  # before the end
    os.write(relay.write_end, b"collectives: size 3 of 9 (elapsed 0:00:10, ETA 0:00:20)\n")
    assert relay.close() == "a rank's warning\n"  # the rest, kept for the end
    assert sink.getvalue().splitlines()[1].startswith("collectives: size 3 of 9")
