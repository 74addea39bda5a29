"""Open MPI rules files from decision quadtrees: they decide like the tree, Open MPI accepts
them, and they change the algorithm a collective uses."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.decisions.maps import DecisionMap, decision_map, square_map
from ksptrace.studies.decisions.quadtree import build_quadtree
from ksptrace.studies.decisions.rules import (
    decide_with_rules,
    ompi_rules,
    parse_ompi_algorithms,
    rule_rows,
    rule_with_segment,
)
from tests.conftest import solver_env

INFO = '''\
          MCA coll tuned: parameter "coll_tuned_allreduce_algorithm" (current value: "ignore")
                          Which allreduce algorithm is used. Can be locked down to any of: ...
                          Valid values: 0:"ignore", 1:"basic_linear", 2:"nonoverlapping", \
3:"recursive_doubling", 4:"ring", 5:"segmented_ring", 6:"rabenseifner"
'''
ALGS = parse_ompi_algorithms(INFO, "allreduce")


def collective_map(seed: int, small: str = "basic_linear", large: str = "ring") -> DecisionMap:
    """Allreduce over P in {2, 4, 8, 16} x 8 B .. 1 MiB: ``small`` wins below a P-dependent
    size, ``large`` above it; a third algorithm is measured but never best."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in (2, 4, 8, 16):
        for e in range(3, 21):
            size = 2 ** e
            cut = 2 ** (9 + p.bit_length() % 3)
            for alg, t in ((small, 1.0 if size < cut else 2.0), (large, 2.0 if size < cut else 1.0),
                           ("recursive_doubling", 3.0)):
                rows.append((p, size, alg, t * (1 + 0.01 * rng.random())))
    a, b, m, t = zip(*rows, strict=True)
    return decision_map(np.array(a), np.array(b), np.array(m), np.array(t), ("P", "bytes"))


def test_the_algorithm_names_come_from_ompi_info() -> None:
    assert ALGS["basic_linear"] == 1
    assert ALGS["ring"] == 4
    with pytest.raises(AnalysisError, match="no algorithms for 'bcast'"):
        parse_ompi_algorithms(INFO, "bcast")


@pytest.mark.parametrize("depth", [None, 1, 2])
def test_the_rules_decide_like_the_tree_everywhere(depth: int | None) -> None:
    dm = collective_map(0)
    tree = build_quadtree(square_map(dm), max_depth=depth)
    text = ompi_rules(tree, "allreduce", ALGS)
    numbers = [ALGS[m] for m in tree.methods]
    rng = np.random.default_rng(1)
    points = [(int(p), int(s)) for p in (1, 2, 3, 4, 5, 8, 15, 16, 100)
              for s in (0, 1, 8, 9, 511, 512, 513, 4096, 2 ** 20, 2 ** 30)]
    points += [(int(rng.integers(1, 40)), int(rng.integers(0, 2 ** 22))) for _ in range(500)]
    for p, s in points:
        assert decide_with_rules(text, p, s) == numbers[tree.query(p, s)], (p, s)
    rows = rule_rows(tree, ALGS)
    assert rows[0][0] == 1
    assert all(rules[0][0] == 0 for _, rules in rows)


def test_labels_must_be_algorithms_and_axes_whole_numbers() -> None:
    dm = collective_map(0, small="fastest_ever")
    tree = build_quadtree(square_map(dm))
    with pytest.raises(AnalysisError, match="'fastest_ever' is not an Open MPI algorithm"):
        ompi_rules(tree, "allreduce", ALGS)
    with pytest.raises(AnalysisError, match="unknown collective"):
        ompi_rules(build_quadtree(square_map(collective_map(0))), "allreduse", ALGS)
    frac = decision_map(np.array([2.5, 2.5, 4, 4, 2.5, 2.5, 4, 4]),
                        np.array([8, 8, 8, 8, 64, 64, 64, 64]),
                        np.array(["ring", "basic_linear"] * 4),
                        np.array([1.0, 2.0, 2.0, 1.0] * 2))
    with pytest.raises(AnalysisError, match="whole non-negative"):
        rule_rows(build_quadtree(square_map(frac)), ALGS)


PROBE = """
import hashlib
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
r = comm.Get_rank()
for count in (64, 4096):  # 512 B and 32 KiB
    rng = np.random.default_rng(1000 * r + count)
    x = rng.standard_normal(count) * 2.0 ** rng.integers(-40, 40, count)
    y = np.empty_like(x)
    comm.Allreduce(x, y, op=MPI.SUM)
    if r == 0:
        print(count, hashlib.sha1(y.tobytes()).hexdigest(), flush=True)
"""


def _probe(tmp_path: Path, **env: str) -> dict[int, str]:
    """Sum crafted values over 4 ranks: the rounding of the result reveals the order in which
    the algorithm added them, so each algorithm leaves its own fingerprint."""
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    r = subprocess.run(["mpiexec", "-n", "4", sys.executable, str(script)],
                       env=solver_env(**env), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "error" not in r.stderr.lower(), r.stderr
    return {int(c): h for c, h in (line.split() for line in r.stdout.split("\n") if line)}


def _open_mpi_allreduce_algorithms() -> dict[str, int]:
    """This machine's Open MPI allreduce algorithm numbers (skips without Open MPI)."""
    if shutil.which("ompi_info") is None or shutil.which("mpiexec") is None:
        pytest.skip("needs Open MPI's ompi_info and mpiexec")
    pytest.importorskip("mpi4py")
    info = subprocess.run(["ompi_info", "--param", "coll", "tuned", "--level", "9"],
                          capture_output=True, text=True, timeout=60).stdout
    return dict(parse_ompi_algorithms(info, "allreduce"))


@pytest.mark.mpi
def test_open_mpi_accepts_the_file_and_uses_its_algorithms(tmp_path: Path) -> None:
    algs = _open_mpi_allreduce_algorithms()
    # basic linear below 1 KiB, ring from 1 KiB on, at every communicator size
    rows = []
    for p in (2, 4, 8):
        for size in (8, 64, 512, 1024, 8192, 65536):
            for alg in ("basic_linear", "ring"):
                fast = (alg == "basic_linear") == (size < 1024)
                rows.append((p, size, alg, 1.0 if fast else 2.0))
    a, b, m, t = zip(*rows, strict=True)
    dm = decision_map(np.array(a), np.array(b), np.array(m), np.array(t), ("P", "bytes"))
    tree = build_quadtree(square_map(dm))
    rules = tmp_path / "rules.conf"
    rules.write_text(ompi_rules(tree, "allreduce", algs))
    forced = {alg: _probe(tmp_path, OMPI_MCA_coll_tuned_use_dynamic_rules="1",
                          OMPI_MCA_coll_tuned_allreduce_algorithm=str(algs[alg]))
              for alg in ("basic_linear", "ring")}
    default = _probe(tmp_path)
    ruled = _probe(tmp_path, OMPI_MCA_coll_tuned_use_dynamic_rules="1",
                   OMPI_MCA_coll_tuned_dynamic_rules_filename=str(rules))
    # the fingerprints tell the algorithms apart at both sizes, and the default is neither
    assert forced["basic_linear"][64] != forced["ring"][64]
    assert forced["basic_linear"][4096] != forced["ring"][4096]
    assert default[64] != forced["basic_linear"][64]
    assert default[4096] != forced["ring"][4096]
    # the file makes Open MPI use basic linear at 512 B and ring at 32 KiB
    assert ruled[64] == forced["basic_linear"][64]
    assert ruled[4096] == forced["ring"][4096]


def test_a_segmented_winner_keeps_its_segment_size_in_the_rules() -> None:
    dm = collective_map(0, small="segmented_ring/seg8192")
    text = ompi_rules(build_quadtree(square_map(dm)), "allreduce", ALGS)
    assert " 5 0 8192 # " in text  # algorithm 5, topology default, segments of 8192 bytes
    found = {rule_with_segment(text, p, m) for p in (2, 4, 8) for m in (8, 1 << 20)}
    assert (5, 8192) in found
    assert all(seg == 0 for alg, seg in found if alg != 5)
    with pytest.raises(AnalysisError, match="whole number of bytes"):
        ompi_rules(build_quadtree(square_map(collective_map(0, small="ring/segX"))),
                   "allreduce", ALGS)


OP_PROBE = """
import numpy as np
from mpi4py import MPI
sizes = []
def add(inbuf, outbuf, datatype):  # a user-defined sum: Open MPI calls it once per piece
    a, b = np.frombuffer(inbuf), np.frombuffer(outbuf)
    b += a
    sizes.append(a.size)
comm = MPI.COMM_WORLD
x = np.ones(4096)  # 32 KiB of float64
y = np.empty_like(x)
comm.Allreduce(x, y, op=MPI.Op.Create(add, commute=True))
if comm.Get_rank() == 0:
    print(" ".join(map(str, sorted(set(sizes)))), len(sizes), int(y[0]))
"""


@pytest.mark.mpi
def test_a_rules_file_with_a_segment_size_changes_what_runs(tmp_path: Path) -> None:
    """Issue 32: the rules file's segment size reaches Open MPI. A user-defined reduction is
    called once per piece it reduces: plain ring hands it blocks of count / P elements (1024
    at P = 4), segmented ring segments of segment-size bytes (128 elements of 1024 B); without
    a segment size, segmented ring runs as plain ring."""
    algs = _open_mpi_allreduce_algorithms()
    script = tmp_path / "op_probe.py"
    script.write_text(OP_PROBE)
    pieces = {}
    for label in ("segmented_ring/seg1024", "segmented_ring"):
        rows = [(p, size, alg, 1.0 if alg == label else 2.0) for p in (2, 4, 8)
                for size in (8, 1024, 32768, 65536) for alg in (label, "basic_linear")]
        a, b, m, t = zip(*rows, strict=True)
        dm = decision_map(np.array(a), np.array(b), np.array(m), np.array(t), ("P", "bytes"))
        rules = tmp_path / "rules.conf"
        rules.write_text(ompi_rules(build_quadtree(square_map(dm)), "allreduce", algs))
        assert rule_with_segment(rules.read_text(), 4, 32768) == (
            algs["segmented_ring"], 1024 if "/seg" in label else 0)
        done = subprocess.run(
            ["mpiexec", "--oversubscribe", "-n", "4", sys.executable, str(script)],
            env=solver_env(OMPI_MCA_coll_tuned_use_dynamic_rules="1",
                           OMPI_MCA_coll_tuned_dynamic_rules_filename=str(rules)),
            capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        pieces[label] = done.stdout.split()
    assert pieces["segmented_ring/seg1024"] == ["128", "24", "4"]  # 24 segments of 128
    assert pieces["segmented_ring"] == ["1024", "3", "4"]  # plain ring's 3 blocks of 1024
