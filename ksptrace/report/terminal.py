"""The report's answers for a terminal (what ``ksptrace demo`` prints last): each question with
its first sentence, and one line per configuration (problem, n, P) with every solver's KSPSolve
and the headline model's signed error, sorted, the fastest solver marked. Pure: the report's
summary.json in, lines out; at most ``MAX_LINES`` for any number of runs."""

from __future__ import annotations

import textwrap
from typing import Any

MAX_LINES = 25
WIDTH = 118


def _time(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def _n(value: Any) -> str:
    return "-" if value is None else f"{int(value):,}".replace(",", " ")


def _cell(trace: dict[str, Any], fastest: bool) -> str:
    err = trace.get("headline_error_pct")
    mark = "*" if fastest else " "
    shown = f"{_time(float(trace['kspsolve']))}{mark}"
    if not isinstance(err, int | float):
        return shown
    return shown + (" (0 %)" if abs(err) < 0.5 else f" ({err:+.0f} %)")


def _noisy(trace: dict[str, Any]) -> bool:
    return "with injected noise" in trace.get("caveats", [])


def table_lines(traces: list[dict[str, Any]], limit: int) -> list[str]:
    """One line per (problem, n, P), a column per solver; at most ``limit`` lines (the rows past
    it are counted in the last line)."""
    solvers = sorted({str(t["ksp"]) for t in traces})
    rows: dict[tuple[str, int, int], dict[str, dict[str, Any]]] = {}
    for t in traces:
        key = (str(t.get("problem") or "?"), int(t.get("n") or 0), int(t["nprocs"]))
        cells = rows.setdefault(key, {})
        held = cells.setdefault(str(t["ksp"]), t)
        if _noisy(held) and not _noisy(t):  # a run with injected noise stands in for none
            cells[str(t["ksp"])] = t
    head = f"{'problem':<11}{'n':>9}{'P':>4}  " + "".join(f"{s:<22}" for s in solvers)
    lines = [head.rstrip()]
    keys = sorted(rows)
    room = limit - 1
    shown = keys if len(keys) <= room else keys[: room - 1]
    for key in shown:
        cells = rows[key]
        best = min(cells, key=lambda s: float(cells[s]["kspsolve"]))
        shown_cells = [_cell(cells[s], s == best and len(cells) > 1) if s in cells else "-"
                       for s in solvers]
        text = "".join(f"{c:<22}" for c in shown_cells)
        lines.append(f"{key[0]:<11}{_n(key[1] or None):>9}{key[2]:>4}  {text}".rstrip())
    if len(shown) < len(keys):
        lines.append(f"... {len(keys) - len(shown)} more configurations in table1_models.csv")
    return lines


def summary_lines(digest: dict[str, Any], report: str) -> list[str]:
    """The terminal summary of a report's ``digest`` (summary.json), at most MAX_LINES lines."""
    traces = digest.get("traces", [])
    flagged = sum(1 for t in traces if t.get("caveats"))
    lines = [f"{len(traces)} runs" + (f" ({flagged} with a caveat: loaded, oversubscribed or "
                                      "log on)" if flagged else "") + f"; the report: {report}"]
    for i, answer in enumerate(digest.get("answers", []), start=1):
        first = answer["sentences"][0] if answer["sentences"] else ""
        lines += textwrap.wrap(f"{i}. {answer['question']} {first}", WIDTH,
                               subsequent_indent="   ")
    lines.append("KSPSolve per configuration (* fastest; in brackets the headline model's "
                 "in-sample fit error):")
    lines += table_lines(traces, MAX_LINES - len(lines))
    return lines[:MAX_LINES]
