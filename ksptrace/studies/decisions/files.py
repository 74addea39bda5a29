"""The files ``ksptrace decide`` writes beside its report: generated C and Python, an Open MPI
rules file, PETSc options per region, and a follow-up campaign; and the runs read back from
traces.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ksptrace import escape
from ksptrace.studies.decisions.codegen import c_source, python_source
from ksptrace.studies.decisions.grouping import OPTION_OF_METHOD, Run, Studies, run_of
from ksptrace.studies.decisions.next_points import campaign_toml
from ksptrace.studies.decisions.rules import ompi_rules
from ksptrace.studies.decisions.study import DecisionStudy
from ksptrace.studies.decisions.tables import fmt_number, limit_name, range_text, summary_of
from ksptrace.studies.result import Figure
from ksptrace.studies.table import Table
from ksptrace.studies.variability.conclusions.ranked import RankedRun, of_trace


def slug(title: str) -> str:
    text = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()
    return text[:80] or "map"


def options_files(s: DecisionStudy, method: str) -> dict[str, str]:
    """File name -> PETSc options file, one per region of the chosen tree whose method is a
    valid PETSc type name (see :func:`options_refused` for the others)."""
    option = OPTION_OF_METHOD.get(method)
    if option is None:
        return {}
    a1, a2 = s.dm.axis_names
    out: dict[str, str] = {}
    for k, r in enumerate(s.regions):
        if not escape.petsc_name(r.method):
            continue
        comment = escape.comment(
            f"ksptrace decide: region {k + 1} of {len(s.regions)} ({s.title})", limit=400)
        where = escape.comment(
            f"{a1} {range_text(r.axis1_values, r.axis1_upper)}, "
            f"{a2} {range_text(r.axis2_values, r.axis2_upper)}; values below the measured range "
            "count as its lowest", limit=400)
        measured = escape.comment(
            f"measured {a1}: {', '.join(fmt_number(v) for v in r.axis1_values)}; "
            f"{a2}: {', '.join(fmt_number(v) for v in r.axis2_values)}", limit=2000)
        out[f"region-{k + 1:03d}-{escape.bounded_stem(r.method, 60)}.opts"] = (
            f"# {comment}\n# {where}\n# {measured}\n{option} {r.method}\n")
    return out


def options_refused(s: DecisionStudy, method: str) -> list[str]:
    """Why some regions got no options file: their method is no PETSc type name."""
    if method not in OPTION_OF_METHOD:
        return []
    bad = sorted({r.method for r in s.regions if not escape.petsc_name(r.method)})
    return [f"no PETSc options file for the method {escape.comment(m, 60)!r}: a PETSc type "
            "name is made of letters, digits and underscores only" for m in bad]


def write_files(folder: Path, studies: Studies, tables_of: Sequence[Sequence[Table]],
                pictures_of: Sequence[Sequence[Figure]],
                rules: tuple[str, Mapping[str, int]] | None = None) -> list[Path]:
    """Write everything ``decide`` produces for each study into ``folder`` (already staged)."""
    written: list[Path] = []
    index: list[dict[str, Any]] = []
    for k, s in enumerate(studies.studies):
        sub = folder / f"{k + 1:02d}-{slug(s.title)}"
        sub.mkdir()
        for t in tables_of[k]:
            p = sub / f"{t.name.split('_', 1)[1]}.csv"
            p.write_text(t.to_csv())
            written.append(p)
        for pic in pictures_of[k]:
            p = sub / f"{pic.key}.png"
            p.write_bytes(pic.png)
            written.append(p)
        (sub / "decide.c").write_text(c_source(s.chosen.tree))
        (sub / "decide.py").write_text(python_source(s.chosen.tree))
        if s.next_points.points:
            settings = studies.settings[k] if k < len(studies.settings) else {}
            (sub / "next.toml").write_text(campaign_toml(
                s.next_points, settings, s.dm.methods, studies.method,
                f"next-{slug(s.title)}"[:60]))
            written.append(sub / "next.toml")
        if rules is not None:
            collective, algorithms = rules
            p = sub / f"ompi-rules-{collective}.conf"
            p.write_text(ompi_rules(s.chosen.tree, collective, algorithms))
            written.append(p)
        opts = options_files(s, studies.method)
        if opts:
            (sub / "petsc-options").mkdir()
            for name, text in opts.items():
                (sub / "petsc-options" / name).write_text(text)
        written.extend([sub / "decide.c", sub / "decide.py"])
        entry = summary_of(s)
        entry["folder"] = sub.name
        entry["chosen_tree"] = limit_name(s.chosen)
        entry["regions"] = len(s.regions)
        entry["options_files"] = sorted(opts)
        refused = options_refused(s, studies.method)
        if refused:
            entry["options_files_refused"] = refused
        index.append(entry)
    (folder / "decision.json").write_text(json.dumps(
        {"axes": list(studies.axes), "method": studies.method, "maps": index,
         "notes": list(studies.notes)}, indent=2) + "\n")
    written.append(folder / "decision.json")
    return written


def runs_from(items: Iterable[Any]) -> tuple[list[Run], list[str], list[RankedRun]]:
    """Runs from traces (``Trace`` or the reader's error), keeping only attributes and the
    iterations' time (set-up left out, as in the report); and each run as the report's
    fastest-solver ranking reads it
    (:func:`~ksptrace.studies.variability.conclusions.ranked.of_trace`)."""
    runs: list[Run] = []
    skipped: list[str] = []
    ranked: list[RankedRun] = []
    for item in items:
        if isinstance(item, Exception):
            skipped.append(str(item))
            continue
        ranked.append(of_trace(item))
        runs.append(run_of(item.attrs, item.nprocs, ranked[-1].entry.seconds,
                           item.path or item.label))
    return runs, skipped, ranked
