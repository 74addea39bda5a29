"""The suite's own helpers hold: a CPU hog a test starts dies with the test run, however the run
ends (a hog of a suite stopped by SIGTERM kept spinning, and the next runs measured it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

SUITE = """
import subprocess, sys
from tests.conftest import dies_with_the_suite
hog = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                       preexec_fn=dies_with_the_suite)
print(hog.pid, flush=True)
sys.stdin.read()  # until the test kills this process
"""


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_hog_dies_when_the_run_that_started_it_is_killed() -> None:
    suite = subprocess.Popen([sys.executable, "-c", SUITE], cwd=ROOT, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert suite.stdout is not None
    hog = int(suite.stdout.readline())
    os.kill(hog, 0)  # it runs
    suite.send_signal(signal.SIGKILL)
    suite.wait(timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(hog, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(hog, signal.SIGKILL)
    pytest.fail("the hog outlived the process that started it")
