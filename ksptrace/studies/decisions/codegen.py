"""Decision functions generated from a quadtree, as C and as Python source.

Each internal node becomes two nested binary tests: first on the first axis (which half of the
rows), then on the second (which half of the columns); the paper's generator writes four
``if (NW) else if (NE) ...`` range tests per node instead, with the same result and more
comparisons. A row half whose two quadrants are leaves with one method returns it without
testing the second axis. Both functions first clamp their arguments to the measured range (the
paper's boundary rule), and then a value between two measured values follows the lower one,
exactly like ``QuadTree.query``: a test ``a < T`` uses as T the measured value of the first map
row of the upper half.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from ksptrace import escape
from ksptrace.errors import AnalysisError, UsageError
from ksptrace.studies.decisions.quadtree import QuadTree

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

Emit = Callable[[int, str], None]


def c_source(tree: QuadTree, name: str = "ksptrace_decide", batch: bool = True) -> str:
    """A C translation unit defining ``int name(double a, double b)`` (the method index),
    ``name_methods`` (the labels) and, with ``batch``, ``void name_many(const double *a,
    const double *b, long n, int *out)``."""
    _check_name(name)
    lines: list[str] = []

    def emit(depth: int, text: str) -> None:
        lines.append("    " * depth + text)

    labels = ", ".join(escape.c_string(m) for m in tree.methods)
    lo1, hi1, lo2, hi2 = _ranges(tree)
    emit(0, f"/* {_header(tree)} */")
    emit(0, f"const char *const {name}_methods[{len(tree.methods)}] = {{{labels}}};")
    emit(0, "")
    emit(0, f"int {name}(double a, double b)")
    emit(0, "{")
    emit(1, f"if (a < {lo1}) a = {lo1}; else if (a > {hi1}) a = {hi1};")
    emit(1, f"if (b < {lo2}) b = {lo2}; else if (b > {hi2}) b = {hi2};")
    _walk(tree, emit, 0, 0, 0, 1 << tree.k, 1, _CSyntax())
    emit(0, "}")
    if batch:
        emit(0, "")
        emit(0, f"void {name}_many(const double *a, const double *b, long n, int *out)")
        emit(0, "{")
        emit(1, f"for (long i = 0; i < n; ++i) out[i] = {name}(a[i], b[i]);")
        emit(0, "}")
    return "\n".join(lines) + "\n"


def python_source(tree: QuadTree, name: str = "decide") -> str:
    """A Python module defining ``name(a, b) -> int`` (the method index) and ``METHODS``."""
    _check_name(name)
    lines: list[str] = []

    def emit(depth: int, text: str) -> None:
        lines.append("    " * depth + text)

    lo1, hi1, lo2, hi2 = _ranges(tree)
    emit(0, f'"""{_header(tree)}"""')
    emit(0, "")
    emit(0, "METHODS = (" + "".join(escape.python_string(m) + ", " for m in tree.methods) + ")")
    emit(0, "")
    emit(0, "")
    emit(0, f"def {name}(a: float, b: float) -> int:")
    emit(1, f"a = min(max(a, {lo1}), {hi1})")
    emit(1, f"b = min(max(b, {lo2}), {hi2})")
    _walk(tree, emit, 0, 0, 0, 1 << tree.k, 1, _PySyntax())
    return "\n".join(lines) + "\n"


class _CSyntax:
    def open_if(self, cond: str) -> str:
        return f"if ({cond}) {{"

    def open_else(self) -> str:
        return "} else {"

    def close(self) -> str | None:
        return "}"

    def ret(self, method: int, label: str) -> str:
        return f"return {method};  /* {_comment(label)} */"


class _PySyntax:
    def open_if(self, cond: str) -> str:
        return f"if {cond}:"

    def open_else(self) -> str:
        return "else:"

    def close(self) -> str | None:
        return None

    def ret(self, method: int, label: str) -> str:
        return f"return {method}  # {_comment(label)}"


def _walk(tree: QuadTree, emit: Emit, node: int, r0: int, c0: int, size: int, depth: int,
          syn: _CSyntax | _PySyntax) -> None:
    v = int(tree.code[node])
    if v < 0:
        emit(depth, syn.ret(-1 - v, tree.methods[-1 - v]))
        return
    h = size // 2
    row_split = _literal(tree.axis1[tree.row_source[r0 + h]])
    col_split = _literal(tree.axis2[tree.col_source[c0 + h]])
    for half, (first, r) in enumerate(((v, r0), (v + 2, r0 + h))):
        emit(depth, syn.open_if(f"a < {row_split}") if half == 0 else syn.open_else())
        low, high = int(tree.code[first]), int(tree.code[first + 1])
        if low < 0 and low == high:
            emit(depth + 1, syn.ret(-1 - low, tree.methods[-1 - low]))
            continue
        emit(depth + 1, syn.open_if(f"b < {col_split}"))
        _walk(tree, emit, first, r, c0, h, depth + 2, syn)
        emit(depth + 1, syn.open_else())
        _walk(tree, emit, first + 1, r, c0 + h, h, depth + 2, syn)
        closing = syn.close()
        if closing:
            emit(depth + 1, closing)
    closing = syn.close()
    if closing:
        emit(depth, closing)


def _ranges(tree: QuadTree) -> tuple[str, str, str, str]:
    return (_literal(tree.axis1[0]), _literal(tree.axis1[-1]), _literal(tree.axis2[0]),
            _literal(tree.axis2[-1]))


def _header(tree: QuadTree) -> str:
    s = tree.stats
    limit = "none" if tree.max_depth_limit is None else str(tree.max_depth_limit)
    methods = ", ".join(f"{i} = {m}" for i, m in enumerate(tree.methods))
    text = (f"Decision function generated by ksptrace from a quadtree: a = {tree.axis_names[0]}, "
            f"b = {tree.axis_names[1]}; depth limit {limit}, accuracy threshold "
            f"{tree.threshold:g}, {s.leaves} leaves, mean depth {s.mean_depth:.2f}. "
            f"Methods: {methods}.")
    return escape.comment(text, limit=2000)


def _literal(x: float) -> str:
    """A float literal that reads back exactly, in C and in Python."""
    value = float(x)
    if not math.isfinite(value):
        raise AnalysisError(f"an axis value is {value}; a decision function needs finite "
                            "axis values (check the traces' attributes)")
    return repr(value)


def _comment(label: str) -> str:
    return escape.comment(label)


def _check_name(name: str) -> None:
    if not _IDENT.match(name):
        raise UsageError(f"the decision function name {name!r} is not an identifier; use "
                         "letters, digits and underscores, not starting with a digit")
