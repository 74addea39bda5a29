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
    """Whether the result has anything to show (a study may only add to summary.json)."""
    return bool(result.parts or result.findings)


def context(result: StudyResult) -> dict[str, Any]:
    """What ``study_section.html.j2`` reads of one study."""
    return {
        "key": result.key, "title": result.title, "lead": result.lead,
        "findings": list(result.findings), "notes": list(result.notes),
        "footer": result.footer, "first": result.first,
        "parts": [{"title": p.title, "anchor": p.anchor, "findings": list(p.findings),
                   "tables": [_table(t) for t in p.tables],
                   "figures": [_figure(f) for f in p.figures]} for p in result.parts],
    }
