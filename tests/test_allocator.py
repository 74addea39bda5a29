"""ksptrace.allocator: glibc keeps what an analysis frees (fewer page faults, the same numbers),
unless the user chose their own malloc settings; ``ksptrace analyze`` asks for it first."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

import ksptrace.allocator as allocator
from ksptrace.cli.main import main

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

FAULTS = """
import resource, sys
import numpy as np
from ksptrace.allocator import keep_freed_memory

x = np.random.default_rng(0).random(1 << 22)  # 32 MiB: a histogram makes 64 blocks of temporaries

def faults() -> int:
    np.histogram(x, bins=200, range=(0.0, 1.0))  # warm: the heap grows once
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(3):
        np.histogram(x, bins=200, range=(0.0, 1.0))
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

default = faults()
print(keep_freed_memory(), default, faults())
"""


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in allocator.USER_SETTINGS}


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's; elsewhere nothing is changed")
def test_freed_blocks_are_reused_instead_of_faulted_in_again() -> None:
    out = subprocess.run([sys.executable, "-c", FAULTS], env=_clean_env(), capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[0] == "True"
    default, kept = int(out[1]), int(out[2])
    assert default > 5_000  # glibc maps and unmaps each 512 KiB temporary: 128 faults each
    assert kept < default / 10, (default, kept)


@pytest.mark.parametrize("name", allocator.USER_SETTINGS)
def test_a_users_own_malloc_setting_is_left_alone(name: str) -> None:
    env = {**_clean_env(), name: "1048576" if name != "GLIBC_TUNABLES" else "glibc.malloc.x=1"}
    out = subprocess.run([sys.executable, "-c", FAULTS], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[0] == "False"


def test_off_glibc_nothing_is_called(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator.platform, "libc_ver", lambda: ("", ""))
    for name in allocator.USER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    assert allocator.keep_freed_memory() is False


def test_analyze_asks_for_it_before_anything_else(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    monkeypatch.setattr(allocator, "keep_freed_memory", lambda: calls.append(True) or True)
    code = main(["analyze", str(tmp_path / "none.h5"), "--out", str(tmp_path / "r"),
                 "--jobs", "0"])
    assert code != 0  # --jobs 0 is refused after the allocator was set
    assert calls == [True]
