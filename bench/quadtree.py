"""Decision time per query of a quadtree: in-memory (scalar and vectorised) and compiled C.

Run as ``python bench/quadtree.py``; writes ``bench/results/quadtree.json``. The map is the
paper's shape, 25 x 48 synthetic cells (4 methods, 5 % noise, 3 repetitions, 10 % of cells
unmeasured) reshaped to 64 x 64; trees are limited to depth 3 and 6 (6 is the exact tree here).
Queries are random: P uniform over the measured range, n log-uniform over it, the same points
for every method. Targets: scalar Python <= 2 us, vectorised <= 50 ns and C <= 50 ns per query
(the paper's prototype: about 170 ns at 6 levels).

The scalar time includes the Python loop that calls the query. The C time is one call of the
generated ``*_many`` loop over all points (ctypes once, not per point). The alternative in the
same run is a naive object tree, one Python object per node with four children and the
thresholds of its split (the layout of the paper's prototype), queried by the same rule; the
generated Python function is timed too. The machine is shared, so the 1-minute load average is
recorded before and after.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core: set before numpy loads its BLAS

import ctypes  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from ksptrace.studies.decisions import synthetic as syn  # noqa: E402
from ksptrace.studies.decisions.codegen import c_source, python_source  # noqa: E402
from ksptrace.studies.decisions.maps import decision_map, square_map  # noqa: E402
from ksptrace.studies.decisions.quadtree import QuadTree, build_quadtree  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "quadtree.json"
DEPTHS = (3, 6)
SCALAR_QUERIES = 200_000
VECTOR_QUERIES = 2_000_000
REPEATS = 5
TARGETS_NS = {"scalar_python": 2000.0, "vectorised": 50.0, "c": 50.0}
PAPER_NS = 170.0


@dataclass
class Node:
    """The naive alternative: one object per node (children None at a leaf)."""

    method: int
    a_split: float = 0.0
    b_split: float = 0.0
    children: list[Node] | None = None


def object_tree(tree: QuadTree, node: int = 0, r0: int = 0, c0: int = 0,
                size: int = 0) -> Node:
    size = size or 1 << tree.k
    v = int(tree.code[node])
    if v < 0:
        return Node(-1 - v)
    h = size // 2
    kids = [object_tree(tree, v + q, r0 + h * (q >> 1), c0 + h * (q & 1), h) for q in range(4)]
    return Node(-1, float(tree.axis1[tree.row_source[r0 + h]]),
                float(tree.axis2[tree.col_source[c0 + h]]), kids)


def object_query(root: Node, lo: tuple[float, float], hi: tuple[float, float]
                 ) -> Callable[[float, float], int]:
    def query(a: float, b: float) -> int:
        a = min(max(a, lo[0]), hi[0])
        b = min(max(b, lo[1]), hi[1])
        node = root
        while node.children is not None:
            node = node.children[(2 if a >= node.a_split else 0) + (b >= node.b_split)]
        return node.method
    return query


def per_query_scalar(fn: Callable[[float, float], int], a: list[float], b: list[float]
                     ) -> tuple[float, list[int]]:
    best, out = float("inf"), []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        out = [fn(x, y) for x, y in zip(a, b, strict=True)]
        best = min(best, time.perf_counter() - t0)
    return best / len(a) * 1e9, out


def median_ns(fn: Callable[[], object], n: int) -> float:
    times = []
    fn()  # warm-up, excluded
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) / n * 1e9


def compiled(tree: QuadTree, folder: Path) -> Callable[[np.ndarray, np.ndarray, np.ndarray], None]:
    src, lib = folder / f"qt{tree.stats.max_depth}.c", folder / f"libqt{tree.stats.max_depth}.so"
    src.write_text(c_source(tree, name="qt_decide"))
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    so = ctypes.CDLL(str(lib))
    dbl, cint = ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int)

    def run(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        so.qt_decide_many(a.ctypes.data_as(dbl), b.ctypes.data_as(dbl), ctypes.c_long(a.size),
                          out.ctypes.data_as(cint))
    return run


def bench_tree(tree: QuadTree, rng: np.random.Generator, folder: Path) -> dict[str, object]:
    lo, hi = (tree.axis1[0], tree.axis2[0]), (tree.axis1[-1], tree.axis2[-1])
    a = rng.uniform(lo[0], hi[0], VECTOR_QUERIES)
    b = np.exp(rng.uniform(np.log(lo[1]), np.log(hi[1]), VECTOR_QUERIES))
    sa, sb = a[:SCALAR_QUERIES].tolist(), b[:SCALAR_QUERIES].tolist()
    expected = tree.query_many(a, b)
    ns: dict[str, object] = {}
    exec(compile(python_source(tree), "<generated>", "exec"), ns)
    generated = ns["decide"]
    assert callable(generated)
    scalars = {"scalar_python": tree.query, "generated_python": generated,
               "naive_object_tree": object_query(object_tree(tree), lo, hi)}
    result: dict[str, object] = {"tree": tree.stats.__dict__}
    for name, fn in scalars.items():
        t, out = per_query_scalar(fn, sa, sb)
        if out != expected[:SCALAR_QUERIES].tolist():
            raise SystemExit(f"{name} disagrees with the tree")
        result[f"{name}_ns"] = round(t, 1)
    result["vectorised_ns"] = round(median_ns(lambda: tree.query_many(a, b), a.size), 2)
    plain = dataclasses.replace(tree, index1=None, index2=None)  # binary search per axis
    result["vectorised_searchsorted_ns"] = round(
        median_ns(lambda: plain.query_many(a, b), a.size), 2)
    if not np.array_equal(plain.query_many(a, b), expected):
        raise SystemExit("the bucketed axis lookup disagrees with searchsorted")
    result["vectorised_index_bytes"] = sum(
        int(ix.base.nbytes + ix.candidate.nbytes) for ix in (tree.index1, tree.index2)
        if ix is not None)
    run, out = compiled(tree, folder), np.empty(a.size, dtype=np.intc)
    result["c_ns"] = round(median_ns(lambda: run(a, b, out), a.size), 2)
    if not np.array_equal(out, expected):
        raise SystemExit("the compiled C disagrees with the tree")
    result["naive_over_scalar"] = round(
        float(result["naive_object_tree_ns"]) / float(result["scalar_python_ns"]), 2)  # type: ignore[arg-type]
    result["scalar_over_vectorised"] = round(
        float(result["scalar_python_ns"]) / float(result["vectorised_ns"]), 1)  # type: ignore[arg-type]
    result["c_over_paper"] = round(float(result["c_ns"]) / PAPER_NS, 3)  # type: ignore[arg-type]
    result["meets_targets"] = {k: float(result[f"{k}_ns"]) <= v  # type: ignore[arg-type]
                               for k, v in TARGETS_NS.items()}
    return result


def main() -> int:
    load_start = os.getloadavg()
    rng = np.random.default_rng(2006)
    m = syn.measurements(rng, 25, 48, n_methods=4, repeats=3, noise=0.05, missing=0.1)
    dm = decision_map(m.axis1, m.axis2, m.methods, m.times, ("P", "n"))
    sq = square_map(dm)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for depth in DEPTHS:
            tree = build_quadtree(sq, max_depth=depth)
            results[str(depth)] = bench_tree(tree, rng, Path(tmp))
    load_end = os.getloadavg()
    doc = {
        "benchmark": "quadtree decision time per query, 25 x 48 map reshaped to 64 x 64",
        "scalar_queries": SCALAR_QUERIES, "vectorised_queries": VECTOR_QUERIES,
        "repeats": REPEATS, "targets_ns": TARGETS_NS, "paper_ns_6_levels": PAPER_NS,
        "results_by_depth_limit": results,
        "meets_targets": all(all(r["meets_targets"].values())  # type: ignore[attr-defined]
                             for r in results.values()),
        "load_avg_1min_start": round(load_start[0], 2), "load_avg_1min_end": round(load_end[0], 2),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "machine": platform.machine(),
                    "cc": subprocess.run(["cc", "--version"], capture_output=True, text=True,
                                         check=False).stdout.splitlines()[0]},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(doc, indent=1) + "\n")
    for depth, r in results.items():
        print(f"depth {depth}: scalar {r['scalar_python_ns']} ns, vectorised "
              f"{r['vectorised_ns']} ns, C {r['c_ns']} ns, naive object tree "
              f"{r['naive_object_tree_ns']} ns, generated Python {r['generated_python_ns']} ns")
    print(f"load average {load_start[0]:.2f} -> {load_end[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
