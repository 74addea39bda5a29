"""The report's main page beyond its answers: the run table (one row per trace, linked to the
run's own page), the predictions that fail with their reasons, and the line that says which
independent units the models used. Pure: findings rows and analyses in, plain rows out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ksptrace.studies.variability.conclusions import findings
from ksptrace.studies.variability.conclusions.answers import caveats
from ksptrace.studies.variability.pages.sections import finding_row
from ksptrace.studies.variability.run.pipeline import TraceAnalysis


def run_href(anchor: str) -> str:
    """A run's page, relative to the main page."""
    return f"runs/{anchor}.html"


def run_rows(rows: Sequence[findings.Finding], analyses: Sequence[TraceAnalysis],
             href: Any = run_href) -> list[dict[str, Any]]:
    """The run table: the findings rows with the run's K, conditions and page, sorted by
    problem, n, P, solver and repetition."""
    out = []
    for f, a in zip(rows, analyses, strict=True):
        row = finding_row(f)
        row.update(K=a.kept, caveats=", ".join(caveats(a)), href=href(f.anchor),
                   order=(f.problem, f.n or 0, f.nprocs, f.ksp, f.repetition))
        out.append(row)
    return sorted(out, key=lambda r: r["order"])


def failure_rows(rows: Sequence[findings.Finding], analyses: Sequence[TraceAnalysis],
                 href: Any = run_href) -> list[dict[str, str]]:
    """Every prediction more than 50 % off, with its run and the reason the analysis found."""
    out = []
    for f, a in sorted(zip(rows, analyses, strict=True),
                       key=lambda fa: (fa[0].problem, fa[0].n or 0, fa[0].nprocs, fa[0].ksp)):
        for flag in a.flagged("prediction-far"):
            out.append({"run": f.config, "href": href(f.anchor), "subject": flag.subject,
                        "message": flag.message})
    return out


def units_line(analyses: Sequence[TraceAnalysis], independent: str) -> str | None:
    """One line on the independent units N when the default chose them: which traces got
    N = P (one node) and which the node count."""
    if independent != "auto" or not analyses:
        return None
    one = sum(1 for a in analyses if a.n_nodes <= 1)
    several = len(analyses) - one
    parts = []
    if one:
        parts.append(f"N = P (every rank an independent unit) for the {one} trace"
                     f"{'s' if one != 1 else ''} from one node")
    if several:
        parts.append(f"N = the node count for the {several} from several nodes")
    return ("Independent units: " + "; ".join(parts)
            + " (--independent nodes or ranks chooses for all).")
