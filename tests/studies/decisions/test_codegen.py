"""Generated decision functions: the C (compiled with cc, called through ctypes) and the Python
source return what the quadtree returns, on every measured cell and off the grid."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ksptrace.errors import UsageError
from ksptrace.studies.decisions import synthetic as syn
from ksptrace.studies.decisions.codegen import c_source, python_source
from ksptrace.studies.decisions.maps import DecisionMap, decision_map, square_map
from ksptrace.studies.decisions.quadtree import QuadTree, build_quadtree

LIMITS = [(None, 1.0), (3, 1.0), (1, 1.0), (0, 1.0), (None, 0.6), (4, 0.9)]


def synthetic(seed: int, n1: int, n2: int) -> DecisionMap:
    m = syn.measurements(np.random.default_rng(seed), n1, n2, missing=0.05)
    return decision_map(m.axis1, m.axis2, m.methods, m.times, ("P", "n"))


def points(dm: DecisionMap, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every measured cell, then random points inside and beyond the measured range, then the
    measured values nudged down and up by one ulp."""
    rng = np.random.default_rng(seed)
    aa, bb = np.meshgrid(dm.axis1, dm.axis2, indexing="ij")
    a_rand = rng.uniform(dm.axis1[0] - 5, dm.axis1[-1] + 5, 3000)
    b_rand = np.exp(rng.uniform(np.log(dm.axis2[0] / 10), np.log(dm.axis2[-1] * 10), 3000))
    nudged_a = np.concatenate([np.nextafter(aa.ravel(), -np.inf), np.nextafter(aa.ravel(), np.inf)])
    nudged_b = np.concatenate([np.nextafter(bb.ravel(), np.inf), np.nextafter(bb.ravel(), -np.inf)])
    return (np.concatenate([aa.ravel(), a_rand, nudged_a]),
            np.concatenate([bb.ravel(), b_rand, nudged_b]))


def trees(dm: DecisionMap) -> list[QuadTree]:
    sq = square_map(dm)
    return [build_quadtree(sq, max_depth=d, threshold=t) for d, t in LIMITS]


def load_python(source: str) -> dict[str, object]:
    namespace: dict[str, object] = {}
    exec(compile(source, "<generated>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize(("seed", "n1", "n2"), [(0, 25, 48), (1, 7, 9), (2, 16, 3)])
def test_generated_python_agrees_with_the_tree(seed: int, n1: int, n2: int) -> None:
    dm = synthetic(seed, n1, n2)
    a, b = points(dm, seed)
    for tree in trees(dm):
        ns = load_python(python_source(tree))
        decide = ns["decide"]
        assert callable(decide)
        assert ns["METHODS"] == dm.methods
        assert [decide(x, y) for x, y in zip(a, b, strict=True)] == tree.query_many(a, b).tolist()


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler 'cc' on PATH")
@pytest.mark.parametrize(("seed", "n1", "n2"), [(0, 25, 48), (1, 7, 9)])
def test_generated_c_agrees_with_the_tree_and_the_python(seed: int, n1: int, n2: int,
                                                         tmp_path: Path) -> None:
    dm = synthetic(seed, n1, n2)
    a, b = points(dm, seed)
    for number, tree in enumerate(trees(dm)):
        src = tmp_path / f"decide{number}.c"
        lib = tmp_path / f"libdecide{number}.so"
        src.write_text(c_source(tree, name="qt_decide"))
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-Wall", "-Werror", "-o", str(lib),
                        str(src)], check=True, capture_output=True)
        so = ctypes.CDLL(str(lib))
        so.qt_decide.restype = ctypes.c_int
        so.qt_decide.argtypes = [ctypes.c_double, ctypes.c_double]
        one_by_one = [so.qt_decide(x, y) for x, y in zip(a, b, strict=True)]
        expected = tree.query_many(a, b).tolist()
        assert one_by_one == expected
        out = np.empty(a.size, dtype=np.intc)
        dbl = ctypes.POINTER(ctypes.c_double)
        so.qt_decide_many(a.ctypes.data_as(dbl), b.ctypes.data_as(dbl), ctypes.c_long(a.size),
                          out.ctypes.data_as(ctypes.POINTER(ctypes.c_int)))
        assert out.tolist() == expected
        decide = load_python(python_source(tree))["decide"]
        assert callable(decide)
        assert [decide(x, y) for x, y in zip(a, b, strict=True)] == one_by_one
        labels = ctypes.cast(so.qt_decide_methods, ctypes.POINTER(ctypes.c_char_p))
        assert [labels[i].decode() for i in range(len(dm.methods))] == list(dm.methods)


def test_exact_tree_source_reproduces_the_map() -> None:
    dm = synthetic(3, 12, 10)
    decide = load_python(python_source(build_quadtree(square_map(dm))))["decide"]
    assert callable(decide)
    got = np.array([[decide(x, y) for y in dm.axis2] for x in dm.axis1])
    assert np.array_equal(got, dm.best)


def test_depth_zero_source_is_a_single_return() -> None:
    dm = synthetic(4, 4, 4)
    tree = build_quadtree(square_map(dm), max_depth=0)
    body = c_source(tree, batch=False).split("{", 2)[2]
    assert body.count("return") == 1
    assert body.count("if (") == 4  # the clamps (two per axis), no test


def test_bad_function_name_is_refused() -> None:
    tree = build_quadtree(square_map(synthetic(5, 4, 4)))
    with pytest.raises(UsageError, match="not an identifier"):
        c_source(tree, name="1decide")
    with pytest.raises(UsageError, match="not an identifier"):
        python_source(tree, name="de-cide")
