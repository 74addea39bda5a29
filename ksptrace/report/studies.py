"""A study's result as the templates show it: tables as HTML, figures as inline PNG."""

from __future__ import annotations

import base64
from typing import Any

from ksptrace.studies.result import Figure, StudyResult
from ksptrace.studies.table import Table


def _table(t: Table) -> dict[str, Any]:
    return {"title": t.title, "html": t.to_html(), "notes": t.notes, "empty": t.empty,
            "csv": f"{t.name}.csv"}


def _figure(f: Figure) -> dict[str, Any]:
    return {"key": f.key, "title": f.title, "caption": f.caption, "png": f.png,
            "src": "data:image/png;base64," + base64.b64encode(f.png).decode("ascii")}


def shown(result: StudyResult) -> bool:
    """Whether the result has a page of its own: findings, or a part placed there with
    something to show (a study may only answer questions, or only add CSV files or keys to
    summary.json)."""
    return bool(result.findings) or any(p.findings or p.tables or p.figures
                                        for p in result.placed(""))


def placed_table(t: Table) -> dict[str, Any]:
    """A table shown outside its study's page (under an answer, across configurations)."""
    return {"title": t.title, "html": t.to_html(), "notes": t.notes,
            "empty": t.shows_nothing, "csv": f"{t.name}.csv", "summary": ""}


def context(result: StudyResult) -> dict[str, Any]:
    """What ``study_section.html.j2`` reads of one study (the parts on its own page)."""
    return {
        "key": result.key, "title": result.title, "lead": result.lead,
        "findings": list(result.findings), "notes": list(result.notes),
        "footer": result.footer, "first": result.first,
        "parts": [{"title": p.title, "anchor": p.anchor, "findings": list(p.findings),
                   "tables": [_table(t) for t in p.tables],
                   "figures": [_figure(f) for f in p.figures]} for p in result.placed("")],
    }
