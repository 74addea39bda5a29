"""The collectives page: the collectives study's tables, notes and figures as one HTML file."""

from __future__ import annotations

import base64

from ksptrace.report.templating import ENV, css
from ksptrace.studies.collectives.report import CollectivesReport


def html(report: CollectivesReport, count: int, pictures: list[tuple[str, bytes]]) -> str:
    """The page for ``count`` traces, with ``pictures`` as (title, PNG bytes)."""
    figs = [{"title": t, "src": "data:image/png;base64," + base64.b64encode(b).decode()}
            for t, b in pictures]
    tabs = [{"title": t.title, "empty": t.empty, "html": t.to_html(), "notes": t.notes,
             "csv": f"{t.name}.csv"} for t in report.tables]
    return ENV.get_template("collectives.html.j2").render(
        css=css(), count=count, notes=report.notes, figures=figs, tables=tabs)
