"""The report's answers for a terminal (what ``ksptrace demo`` prints last): each question with
its first sentence, and one line per configuration (problem, n, P) with every solver's KSPSolve
and the headline model's signed error, sorted, marked as the report's one ranking
(summary.json's ``fastest``) says; a cell with repetitions shows their median. Pure: the
report's summary.json in, lines out; at most ``MAX_LINES`` for any number of runs."""

from __future__ import annotations

import statistics
import textwrap
from typing import Any

from ksptrace.studies.numbers import seconds_text

MAX_LINES = 25
WIDTH = 118
ANSWER_LINES = 3
"""At most this many lines of each answer's first sentence (the rest is on the page), so
that the table keeps its room."""


def _time(seconds: float) -> str:
    return seconds_text(seconds, 3) or f"{seconds * 1e9:.0f} ns"


def _n(value: Any) -> str:
    return "-" if value is None else f"{int(value):,}".replace(",", " ")


Key = tuple[str, int, int]
"""(problem, n, P): one line of the table."""


def _key(t: dict[str, Any]) -> Key:
    return (str(t.get("problem") or "?"), int(t.get("n") or 0), int(t["nprocs"]))


def marks_of(fastest: dict[str, Any] | None) -> dict[tuple[Key, str], str]:
    """(line, solver) -> its marks from summary.json's ``fastest`` (the report's one ranking):
    ``*`` fastest, ``=`` cannot be told apart from the fastest, ``^`` a P-scaling anomaly."""
    out: dict[tuple[Key, str], str] = {}
    if not fastest:
        return out
    for c in fastest.get("configurations", []):
        key = _key(c)
        if c.get("fastest"):
            out[(key, str(c["fastest"]).lower())] = "*"
        for s in c.get("cannot_tell", []):
            out[(key, str(s).lower())] = "="
    for a in fastest.get("scaling_anomalies", []):
        name = (_key(a), str(a["ksp"]).lower())
        out[name] = out.get(name, "") + "^"
    return out


def _cell(runs: list[dict[str, Any]], mark: str) -> str:
    """The median KSPSolve of the cell's clean runs (of all, marked ``!``, when none is clean),
    as the ranking counts them."""
    clean = [t for t in runs if not t.get("caveats")]
    used = clean or [t for t in runs if not _noisy(t)] or runs  # injected noise stands in last
    if not clean:
        mark += "!"
    err = used[0].get("headline_error_pct")
    shown = f"{_time(statistics.median(float(t['kspsolve']) for t in used))}{mark or ' '}"
    if not isinstance(err, int | float):
        return shown
    return shown + (" (0 %)" if abs(err) < 0.5 else f" ({err:+.0f} %)")


def _noisy(trace: dict[str, Any]) -> bool:
    return "with injected noise" in trace.get("caveats", [])


def table_lines(traces: list[dict[str, Any]], limit: int,
                fastest: dict[str, Any] | None = None) -> list[str]:
    """One line per (problem, n, P), a column per solver, marked as ``fastest`` (summary.json's
    ranking) says; at most ``limit`` lines (the rows past it are counted in the last line)."""
    solvers = sorted({str(t["ksp"]) for t in traces})
    rows: dict[Key, dict[str, list[dict[str, Any]]]] = {}
    for t in traces:
        rows.setdefault(_key(t), {}).setdefault(str(t["ksp"]), []).append(t)
    marks = marks_of(fastest)
    keys = sorted(rows)
    if limit < 2:  # no room for a row: name what the table would hold
        sizes = ", ".join(dict.fromkeys(f"{k[0]} n = {_n(k[1] or None)}" for k in keys))
        return [f"... {len(keys)} configurations in table1_models.csv ({sizes})"[:WIDTH]]
    wide = max([10, *(len(k[0]) for k in keys)]) + 1  # a long name keeps the columns
    head = f"{'problem':<{wide}}{'n':>9}{'P':>4}  " + "".join(f"{s:<22}" for s in solvers)
    lines = [head.rstrip()]
    room = limit - 1
    shown = keys if len(keys) <= room else keys[: room - 1]
    for key in shown:
        cells = rows[key]
        shown_cells = [_cell(cells[s], marks.get((key, s.lower()), "")) if s in cells else "-"
                       for s in solvers]
        text = "".join(f"{c:<22}" for c in shown_cells)
        lines.append(f"{key[0]:<{wide}}{_n(key[1] or None):>9}{key[2]:>4}  {text}".rstrip())
    if len(shown) < len(keys):  # never silently: say which sizes were left out
        left = keys[len(shown):]
        sizes = ", ".join(dict.fromkeys(f"{k[0]} n = {_n(k[1] or None)}" for k in left))
        lines.append(f"... {len(left)} more configurations in table1_models.csv ({sizes})"
                     [:WIDTH])
    return lines


def summary_lines(digest: dict[str, Any], report: str) -> list[str]:
    """The terminal summary of a report's ``digest`` (summary.json), at most MAX_LINES lines."""
    traces = digest.get("traces", [])
    flagged = sum(1 for t in traces if t.get("caveats"))
    counts: dict[str, int] = {}
    for t in traces:
        for c in t.get("caveats", []):
            counts[str(c)] = counts.get(str(c), 0) + 1
    named = ", ".join(f"{v} {k}" for k, v in counts.items())
    lines = [f"{len(traces)} runs" + (f" ({flagged} with a caveat: {named})" if flagged else "")
             + f"; the report: {report}"]
    fastest = digest.get("fastest")
    basis = str(fastest["basis"]) if fastest else ""
    for i, answer in enumerate(digest.get("answers", []), start=1):
        first = answer["sentences"][0] if answer["sentences"] else ""
        if basis.startswith("all "):  # the first line names the caveats once
            first = first.replace(basis, basis.split(",", 1)[0] + ", none clean")
        wrapped = textwrap.wrap(f"{i}. {answer['question']} {first}", WIDTH,
                                subsequent_indent="   ")
        if len(wrapped) > ANSWER_LINES:
            wrapped = [*wrapped[:ANSWER_LINES - 1],
                       wrapped[ANSWER_LINES - 1][:WIDTH - 2].rstrip() + " …"]
        lines += wrapped
    slowdown = float(fastest.get("slowdown", 2.0)) if fastest else 2.0
    lines += textwrap.wrap(
        "KSPSolve per configuration (* fastest, = cannot tell from the fastest: Q4's runs and "
        f"rule; ! loaded or flagged run; ^ slower (x{slowdown:g} or more) than at the next "
        "smaller P; in brackets the headline model's in-sample fit error):", WIDTH)
    lines += table_lines(traces, MAX_LINES - len(lines), fastest)
    return lines[:MAX_LINES]
