"""The decision maps as HTML: the section of the report, and the folder ``ksptrace decide``
writes (the page beside each map's files)."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ksptrace.outputs import check_destination, staged_directory
from ksptrace.report.templating import ENV
from ksptrace.studies.decisions.report import (
    Picture,
    Run,
    Studies,
    build_studies,
    limit_name,
    sentences,
    study_figures,
    study_tables,
    write_files,
)
from ksptrace.studies.decisions.rules import ompi_rules
from ksptrace.studies.table import Table


def section_context(
    studies: Studies, pictures_of: Sequence[Sequence[Picture]] | None = None,
    tables_of: Sequence[Sequence[Table]] | None = None,
) -> dict[str, Any] | None:
    """What the HTML templates show of the studies (None when there is no map)."""
    if not studies.studies:
        return None
    if pictures_of is None:
        pictures_of = [study_figures(s) for s in studies.studies]

    maps = []
    for k, s in enumerate(studies.studies):
        ts = list(tables_of[k]) if tables_of is not None else study_tables(s, k)
        maps.append({
            "title": s.title,
            "anchor": f"decision-{k + 1}",
            "sentences": sentences(s),
            "tables": [{"title": t.title, "html": t.to_html(), "notes": t.notes,
                        "csv": f"{t.name}.csv", "empty": t.empty} for t in ts[:6]],
            "figures": [{"title": p.title, "caption": p.caption,
                         "src": "data:image/png;base64," + base64.b64encode(p.png).decode()}
                        for p in pictures_of[k]],
            "chosen": limit_name(s.chosen),
        })
    return {"axes": studies.axes, "method": studies.method, "maps": maps,
            "notes": list(studies.notes)}


def write_decision(out: str | Path, runs: Sequence[Run], axes: tuple[str, str],
                   method: str, max_depth: int | None = None, threshold: float = 1.0,
                   skipped: Sequence[str] = (),
                   rules: tuple[str, Mapping[str, int]] | None = None) -> tuple[Path, Studies]:
    """Build the studies and write the ``decide`` folder whole or not at all."""
    folder = Path(out)
    check_destination(folder, ("decision.json",))
    studies = build_studies(runs, axes, method, max_depth, threshold, strict=True)
    if rules is not None:  # fail on an unknown collective or algorithm before any timing
        for s in studies.studies:
            ompi_rules(s.chosen.tree, rules[0], rules[1])
    tables_of = [study_tables(s, k, timed=True) for k, s in enumerate(studies.studies)]
    pictures_of = [study_figures(s) for s in studies.studies]
    page = ENV.get_template("decision.html.j2").render(
        decision=section_context(studies, pictures_of, tables_of), skipped=list(skipped),
        standalone=True)
    with staged_directory(folder, ("decision.json",)) as tmp:
        write_files(tmp, studies, tables_of, pictures_of, rules)
        (tmp / "decision.html").write_text(page, encoding="utf-8")
    return folder, studies
