"""``ranks=`` lists: intervals (bounded memory), canonical text, ranks a run does not have."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ksptrace.errors import UsageError
from ksptrace.noise import ranks
from ksptrace.noise.draw import all_detours
from ksptrace.noise.spec import parse


def test_lists_are_merged_intervals_and_membership_is_exact() -> None:
    got = ranks.parse("7+0-2+3+10-12+11", "s")
    assert got == ((0, 3), (7, 7), (10, 12))
    inside = {u for u in range(20) if ranks.contains(got, u)}
    assert inside == {0, 1, 2, 3, 7, 10, 11, 12}
    assert ranks.count(got) == 8
    assert [ranks.count(got, below) for below in (0, 1, 4, 8, 11, 100)] == [0, 1, 4, 5, 6, 8]
    assert ranks.beyond(got, 2) == "2-3+7+10-12"
    assert ranks.beyond(got, 13) == ""


def test_canonical_text_lists_small_sets_as_before_and_large_ones_as_intervals() -> None:
    """Up to LISTED ranks the text is what earlier versions wrote (run ids stay)."""
    assert parse("fixed:value=1us,ranks=0-3").text().endswith(",ranks=0+1+2+3")
    big = parse("fixed:value=1us,ranks=5+0-4095")
    assert big.text().endswith(",ranks=0-4095")
    assert parse(big.text()) == big
    with pytest.raises(UsageError, match="beyond the largest MPI rank"):
        parse(f"fixed:value=1us,ranks=0-{2**31}")
    with pytest.raises(UsageError, match=r"ranks='99999.*\.\.\.' is not a rank list"):
        parse("fixed:value=1us,ranks=" + "9" * 5000)  # int() refuses 4300 digits: one line


def test_a_spec_names_only_ranks_the_run_has() -> None:
    spec = parse("fixed:value=1us,ranks=1-5; uniform:low=0,high=1us,per=node,ranks=0+3")
    assert spec.reach_problem(8, 4) is None
    rank = spec.reach_problem(4, 4)
    assert rank is not None
    assert "names rank 4-5, but the run has 4 ranks" in rank
    assert "name ranks below 4 or leave ranks= out" in rank
    node = spec.reach_problem(8, 2)
    assert node is not None
    assert "names node 3, but the run has 2 nodes" in node
    assert spec.reach_problem(8) is None  # nodes not known yet: bounded by the ranks
    assert spec.reach_problem(4, 4, idle=True) is None  # ranks 1-3 still detour
    idle = spec.reach_problem(1, 1, idle=True)
    assert idle is not None
    assert "detours on no rank of the run: it names rank 1-5" in idle
    assert parse("fixed:value=1us,p=0,ranks=9").reach_problem(2) is None  # detours nowhere
    assert spec.parts[0].units(4, 1) == 3
    assert spec.parts[1].units(4, 2) == 1


def test_detours_fall_on_the_named_ranks_only() -> None:
    spec = parse("fixed:value=1us,ranks=1+3-4")
    hit = (all_detours(spec, np.zeros(6, np.int64), 5) > 0).any(axis=1)
    assert hit.tolist() == [False, True, False, True, True, False]


CHILD = textwrap.dedent("""
    import json, re, time, tracemalloc
    from ksptrace.noise.spec import canonical, parse
    start = time.perf_counter()
    tracemalloc.start()
    parts = "+".join(f"{i * 1_000_000}-{i * 1_000_000 + 999_999}" for i in range(60))
    text = "fixed:value=1us,ranks=" + parts
    spec = parse(text)
    out = {"len": len(text), "text": len(canonical(text)), "units": spec.units(2**31 - 1, 1),
           "reach": spec.reach_problem(4), "on": spec.detours_on(59_999_999),
           "seconds": time.perf_counter() - start,
           "peak": tracemalloc.get_traced_memory()[1]}
    with open("/proc/self/status") as f:  # this process image's own peak (not the parent's)
        out["hwm_kib"] = int(re.search(r"VmHWM:\\s+(\\d+)", f.read()).group(1))
    print(json.dumps(out))
""")


def _limit_memory() -> None:
    limit = 1 << 30  # the old expansion needed gigabytes: fail fast instead of swapping
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_a_long_rank_list_costs_memory_and_time_of_its_text_only() -> None:
    """Issue 50: 60 parts of 10^6 ranks each (a 960-character spec) used to be expanded rank by
    rank (2.59 GB for a 600-character trace attribute); as intervals they cost next to nothing
    beyond the interpreter."""
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=120, check=False, preexec_fn=_limit_memory)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    assert got["units"] == 60_000_000
    assert got["on"] is True
    assert "names rank 4-59999999, but the run has 4 ranks" in got["reach"]
    assert got["text"] < 2 * got["len"]
    assert got["peak"] < 1 << 20, got  # Python's allocations while parsing: ~100 kB
    assert got["hwm_kib"] < 100 * 1024, got  # the interpreter alone: ~20 MB
    assert got["seconds"] < 10, got  # ~0.05 s idle; generous for a loaded machine
