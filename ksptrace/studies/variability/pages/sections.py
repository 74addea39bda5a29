"""The variability study's per-run view: the findings table's rows, each run's section (its
figures sorted into the paper's sections, its tables, what was measured) as the report's
template reads them.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

from ksptrace.studies.result import Figure
from ksptrace.studies.variability.conclusions import findings
from ksptrace.studies.variability.pages import tables
from ksptrace.studies.variability.pages.runs import Analysed, config_key
from ksptrace.studies.variability.run.flags import Flag
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis

SECTIONS = (
    ("distributions", "Distributions of Tₚᵏ"),
    ("ks", "Kolmogorov–Smirnov tests between ranks"),
    ("nodes", "Within- and between-node variance"),
    ("fits", "Bulk distribution fits"),
    ("models", "Stationary and non-stationary models, bounds"),
    ("montecarlo", "Johnson S_U Monte Carlo"),
)
"""The per-configuration sections, in the paper's order."""


def section_of(key: str) -> str:
    """The section a figure belongs to, from its stable key."""
    k = key.lower()
    for words, section in (
        (("ks",), "ks"),
        (("node", "vs-rank", "scatter"), "nodes"),
        (("bulk", "fit-pdf", "fits-bulk"), "fits"),
        (("parameter", "jsu", "a_k", "s_k", "montecarlo", "monte-carlo"), "montecarlo"),
        (("uniform",), "models"),
    ):
        if any(w in k for w in words):
            return section
    return "distributions"


def image(p: Figure) -> dict[str, Any]:
    """A figure as the templates show it: inline (``src``, a data URI) and as the PNG bytes
    a page written beside its figures uses instead (``png``)."""
    return {"key": p.key, "title": p.title, "caption": p.caption, "png": p.png,
            "src": "data:image/png;base64," + base64.b64encode(p.png).decode("ascii")}


def omission_section(line: str) -> str:
    """The section a "figure left out" line belongs to (the first that it concerns)."""
    for words, section in (
        (("uniform-fit", "uniform fit"), "models"),
        (("aₖ", "sₖ", "a_k", "s_k", "Johnson"), "montecarlo"),
        (("KS",), "ks"),
        (("scatter", "node"), "nodes"),
        (("bulk", "fitted pdf"), "fits"),
    ):
        if any(w in line for w in words):
            return section
    return "distributions"


def finding_row(f: findings.Finding) -> dict[str, Any]:
    best = f.best
    if f.within_pct is not None:
        nodes = f"{f.within_pct:.0f} % within / {100 - f.within_pct:.0f} % between"
    else:
        nodes = f.nodes_why
    return {
        "anchor": f.anchor, "problem": f.problem, "solver": f.ksp, "n": findings.fmt_n(f.n),
        "P": f.nprocs, "N": f"{f.count:g}", "rep": f.repetition,
        "noise": "" if f.noise == "none" else f.noise,
        "reps": f.repetitions, "file": f.file,
        "measured": findings.fmt_time(f.measured),
        "best": "no model" if best is None else best.name,
        "best_error": "" if best is None else findings.fmt_pct(best.error_pct),
        "best_far": best is not None and abs(best.error_pct or 0) > findings.FAR,
        "ks": f.ks_why if f.ks_rejected_pct is None else f"{f.ks_rejected_pct:.0f} %",
        "ks_missing": f.ks_rejected_pct is None,
        "nodes": nodes, "nodes_missing": f.within_pct is None,
        "flags": flag_summary(f.flags),
    }


def _short_subject(subject: str) -> str:
    return re.sub(r"^stationary model \((.*)\)$", r"\1", subject)


def flag_summary(flags: Sequence[Flag]) -> list[dict[str, Any]]:
    """The findings table's view of a run's flags: one line per code naming what is flagged
    (far predictions with their signed error), the full reasons one click away."""
    grouped: dict[str, list[Flag]] = {"prediction-far": []}  # the far predictions first
    for fl in flags:
        grouped.setdefault(fl.code, []).append(fl)
    out = []
    for code, members in grouped.items():
        if not members:
            continue
        names = []
        for fl in members:
            name = _short_subject(fl.subject)
            pct = re.search(r"\(([+\-\u2212]\d[\d.,]*\s?%)\)", fl.message)
            if code == "prediction-far" and pct:
                name += " " + pct.group(1).replace("-", "\u2212")
            if name not in names:
                names.append(name)
        out.append({"code": code, "subject": ", ".join(names),
                    "messages": [f"{fl.subject}: {fl.message}" for fl in members]})
    return out


def run_section(d: Analysed, f: findings.Finding, options: AnalysisOptions) -> dict[str, Any]:
    a = d.analysis
    by_section: dict[str, list[dict[str, str]]] = {s: [] for s, _ in SECTIONS}
    for p in d.pictures:
        by_section[section_of(p.key)].append(image(p))
    tables_of: dict[str, list[tables.Table]] = {
        "distributions": [],
        "ks": [tables.ks_table(a)],
        "nodes": [tables.node_table(a)],
        "fits": [tables.fit_table(a)],
        "models": [tables.models_table(a)],
        "montecarlo": [tables.jsu_table(a)],
    }
    parts: list[dict[str, Any]] = []
    for key, title in SECTIONS:
        omitted = [o for o in d.omitted if omission_section(o) == key]
        parts.append({
            "id": f"{f.anchor}-{key}", "title": title, "figures": by_section[key],
            "tables": [{"title": t.title, "html": t.to_html(), "notes": t.notes,
                        "empty": t.empty} for t in tables_of[key]],
            "omitted": omitted,
        })
    sim = a.simulation
    mc_error = findings.error_pct(a.simulated, a.measured)
    if sim is not None and a.simulated is None:
        mc = (f"Monte Carlo: {sim.runs} runs of K = {sim.iterations} iterations on "
              f"N = {sim.count} units (seed {sim.seed}) {a.simulated_status} "
              f"{findings.fmt_time(a.measured)} (see the flags).")
    elif sim is not None:
        mc = (f"Monte Carlo: {sim.runs} runs of K = {sim.iterations} iterations on "
              f"N = {sim.count} units (seed {sim.seed}); mean {findings.fmt_time(a.simulated)}"
              + (f" ± {findings.fmt_time(a.simulated_stderr)} (standard error)"
                 if a.simulated_stderr is not None else " (one run: no standard error)")
              + f" against this run's own KSPSolve {findings.fmt_time(a.measured)} "
              f"({findings.fmt_pct(mc_error)} in sample: aₖ and sₖ fitted on this run).")
    else:
        mc = f"No Monte Carlo: {findings._montecarlo_why(a)}."
    parts[-1]["lead"] = mc
    if a.variance is not None:
        v = a.variance
        parts[0]["lead"] = (
            f"Where an iteration sits explains {100 * v.deterministic:.0f} % of this run's "
            f"iteration-time variance (restart-cycle position {100 * v.cycle:.0f} %, pipeline "
            f"fill {100 * v.fill:.0f} %, first iteration {100 * v.first:.0f} %); the other "
            f"{100 * v.rest:.0f} % is what the fitted distributions describe.")
    if not parts[0]["figures"] and not parts[0]["omitted"]:
        parts[0]["omitted"] = ["One rank: no per-rank histograms; the histogram of every Tₚᵏ "
                               "is in section 4." if a.nprocs == 1 else
                               "No distribution figure was drawn for this run."]
    parts[1]["lead"] = findings.ks_alpha_note(options.alpha, options.reference_rank)
    if a.count <= 1.0:
        parts[4]["lead"] = ("N = 1 independent unit (one node): every stationary model collapses "
                            "to K·mean and the bounds to K·μ.")
    measured = [
        *_solve_lines(a),
        ("Σₖ maxₚ Tₚᵏ (measured over the kept iterations)", findings.fmt_time(a.lockstep_sum)),
        ("maxₚ Σₖ Tₚᵏ (measured over the kept iterations)", findings.fmt_time(a.rank_sum_max)),
        ("iterations K recorded / kept for bulk statistics", f"{a.iterations} / {a.kept}"),
        ("ranks P, nodes, N in the maximum", f"{a.nprocs}, {a.n_nodes}, {a.count:g}"),
        *_noise_lines(a),
        ("file", a.path or "in memory"),
    ]
    notes = list(a.notes)
    return {"anchor": f.anchor, "name": f.config, "file": f.file, "measured": measured,
            "flags": [{"subject": fl.subject, "message": fl.message, "code": fl.code}
                      for fl in sorted(a.flags, key=lambda fl: fl.code != "prediction-far")],
            "notes": notes, "parts": parts}


def _timed_by(a: TraceAnalysis) -> str:
    """How the trace timed KSPSolve (its ``solve_time_source``), never "PETSc's event log"
    for a solve timed with the log off (issue 63)."""
    source = dict(a.attrs).get("solve_time_source")
    if source:
        return str(source).removesuffix(" on each rank")
    return "timed as recorded (the trace does not say how)"


def _solve_lines(a: TraceAnalysis) -> list[tuple[str, str]]:
    """What KSPSolve time the models are compared with, and how it was timed (the trace's
    ``solve_time_source``: never "PETSc's event log" for a solve timed with the log off, issue
    63); for a ``ksptrace trace`` solve also its set-up, its time outside the iterations and
    the solves left out, each as recorded (issue 64)."""
    attrs = dict(a.attrs)
    less = "" if a.setup is None else "; less its time outside the iterations"
    lines = [(f"KSPSolve (slowest rank, {_timed_by(a)}{less})", findings.fmt_time(a.measured))]
    if attrs.get("generator") != "ksptrace trace":
        return lines
    setup = attrs.get("setup_seconds")
    lines.append(("set-up kept apart (KSPSetUp, PCSetUp before the first iteration)",
                  findings.fmt_time(float(setup)) if isinstance(setup, int | float)
                  else "not recorded"))
    lines.append(("time outside the iterations (before the first monitor call, after the last)",
                  "cannot tell (a rank's solve time is shorter than its stamps' span)"
                  if a.setup is None else findings.fmt_time(a.setup)))
    lines.append(("solves of the program left out of this trace",
                  str(attrs.get("solves_left_out", "not recorded"))))
    return lines


def _noise_lines(a: TraceAnalysis) -> list[tuple[str, str]]:
    inj = a.injection
    if inj is None or not inj.spec.active:
        return []
    return [
        ("injected noise", inj.spec.text()),
        ("injected per rank and iteration (mean) / most into one rank's solve",
         f"{findings.fmt_time(inj.injected_mean)} / {findings.fmt_time(inj.injected_rank_max)}"),
        ("natural iteration time (Tₚᵏ minus the detours, mean)",
         findings.fmt_time(inj.natural_mean)),
    ]


def anchors(analysed: Sequence[Analysed]) -> list[findings.Finding]:
    counts: dict[tuple[str, ...], int] = {}
    for d in analysed:
        counts[config_key(d.analysis)] = counts.get(config_key(d.analysis), 0) + 1
    seen: dict[tuple[str, ...], int] = {}
    rows = []
    for i, d in enumerate(analysed):
        key = config_key(d.analysis)
        seen[key] = seen.get(key, 0) + 1
        rows.append(findings.finding(d.analysis, f"run-{i + 1}", seen[key], counts[key]))
    return rows
