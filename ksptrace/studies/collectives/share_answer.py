"""The report's answer on collectives: the share of an iteration that a solver's global
reductions explain, from the reductions table (:func:`reductions_table`). Pure: a table in,
sentences out."""

from __future__ import annotations

from ksptrace.studies.table import Table

QUESTION = "How much of an iteration do the collectives explain?"
SHOWN = 4
"""Solver traces spelled out; the median covers all of them."""


def _us(value: float) -> str:
    return f"{value / 1e3:.3g} ms" if value >= 1e3 else f"{value:.3g} µs"


def share_sentences(table: Table) -> tuple[str, ...]:
    """One sentence per solver trace (the first ``SHOWN``, by solver and P), then the median;
    or why there is no number."""
    rows = sorted(table.records(), key=lambda r: (str(r["ksp"]), int(r["P"] or 0)))
    if not rows:
        why = table.notes[0] if len(table.notes) > 1 else "no solver trace to compare"
        return (f"Cannot tell on this data: {why}.",)
    out = []
    for r in rows[:SHOWN]:
        bound = " at most" if r["upper_bound"] else ""
        out.append(
            f"{str(r['ksp']).upper()} at P = {r['P']}: {r['reductions_per_iteration']:.3g} "
            f"reductions per iteration of {_us(float(r['allreduce_mean_us']))} each explain"
            f"{bound} {100 * float(r['mean_share']):.1f} % of the mean iteration "
            f"({_us(float(r['iteration_mean_us']))}) and {100 * float(r['variance_share']):.1f} "
            "% of its variance.")
    shares = sorted(100 * float(r["mean_share"]) for r in rows)
    middle = shares[len(shares) // 2] if len(shares) % 2 else sum(
        shares[len(shares) // 2 - 1: len(shares) // 2 + 1]) / 2
    out.append(f"Over the {len(rows)} solver trace{'s' if len(rows) != 1 else ''} beside an "
               f"allreduce of their P, the median share of the mean iteration is {middle:.1f} %.")
    return tuple(out)
