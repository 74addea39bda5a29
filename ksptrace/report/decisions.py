"""The folder ``ksptrace decide`` writes: each map's files and one page for all maps."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ksptrace.errors import KsptraceError
from ksptrace.outputs import check_destination, staged_directory
from ksptrace.report.studies import context
from ksptrace.report.templating import ENV
from ksptrace.studies.decisions import (
    Run,
    Studies,
    build_studies,
    decide_ranking,
    ompi_rules,
    ranked_runs,
    result_of,
    study_figures,
    study_tables,
    write_files,
)
from ksptrace.studies.result import StudyResult


def write_decision(out: str | Path, runs: Sequence[Run], axes: tuple[str, str],
                   method: str, max_depth: int | None = None, threshold: float = 1.0,
                   skipped: Sequence[str] = (),
                   rules: tuple[str, Mapping[str, int]] | None = None,
                   ranked: Sequence[Any] = ()) -> tuple[Path, Studies, StudyResult]:
    """Build the studies and write the ``decide`` folder whole or not at all. ``ranked``: the
    runs as the report's fastest-solver ranking reads them (``runs_from``); when the maps ask
    its question, they rest on the same runs and their first sentence is its answer."""
    folder = Path(out)
    check_destination(folder, ("decision.json",))
    ranking = decide_ranking(ranked, axes, method)
    kept = ranked_runs(runs, ranked, ranking)
    try:
        studies = build_studies(kept, axes, method, max_depth, threshold, strict=True)
    except KsptraceError:
        if ranking is None or len(kept) == len(runs):
            raise
        # the clean runs alone cover no map: all runs, their caveats named (as the report does)
        ranking = decide_ranking(ranked, axes, method, every=True)
        kept = ranked_runs(runs, ranked, ranking)
        studies = build_studies(kept, axes, method, max_depth, threshold, strict=True)
    studies = dataclasses.replace(studies, left_out=studies.left_out + len(runs) - len(kept))
    if rules is not None:  # fail on an unknown collective or algorithm before any timing
        for s in studies.studies:
            ompi_rules(s.chosen.tree, rules[0], rules[1])
    tables_of = [study_tables(s, k, timed=True) for k, s in enumerate(studies.studies)]
    pictures_of = [study_figures(s) for s in studies.studies]
    result = result_of(studies, tables_of, pictures_of, ranking)
    page = ENV.get_template("decision.html.j2").render(
        study=context(result), axes=studies.axes,
        method=studies.method, skipped=list(skipped), standalone=True, home=None)
    with staged_directory(folder, ("decision.json",)) as tmp:
        write_files(tmp, studies, tables_of, pictures_of, rules)
        (tmp / "decision.html").write_text(page, encoding="utf-8")
    return folder, studies, result
