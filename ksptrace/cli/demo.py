"""``ksptrace demo``: the main job.

1. the demo campaign (both problems, four solvers, P = 1 and 2) runs locally, resumably, and
   a small paired noise campaign beside it (Q2 with injected noise, repetitions for Q3);
2. a table of every run;
3. ``analyze`` writes the report (Table 1 analogue, fits, models, figures);
4. a strong-scaling sweep past the cores (P = 1..8 on this machine) and ``segment``, which
   should find where oversubscription changes the behaviour.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path
from typing import Any

from ksptrace.cli import analyze, segment
from ksptrace.errors import UsageError


def register(sub: Any) -> None:
    p = sub.add_parser("demo", allow_abbrev=False)
    p.add_argument("--out", type=Path, default=Path("demo-out"), help="folder for everything")
    p.add_argument("--campaign", type=Path, default=Path("examples/demo.toml"),
                   help="the demo campaign file")
    p.add_argument("--paired", type=Path, default=Path("examples/demo_paired.toml"),
                   help="the paired noise campaign (Q2 with injected noise; repetitions for "
                        "Q3 out of sample), analysed with the demo ('none' to skip)")
    p.add_argument("--scaling", type=Path, default=Path("examples/oversubscription.toml"),
                   help="the P = 1..8 campaign for segmentation ('none' to skip)")
    p.set_defaults(func=main)


def _noise(r: dict[str, Any]) -> str:
    value = r.get("noise")
    return value if isinstance(value, str) and value else "none"


def _n(r: dict[str, Any]) -> int:
    value = r.get("n")
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def format_table(rows: list[dict[str, Any]]) -> str:
    """The demo's table: one line per run, times in milliseconds (and the noise, if any)."""
    noisy = any(_noise(r) != "none" for r in rows)
    head = (f"{'problem':<10} {'n':>8} {'solver':<9} {'P':>2} {'K':>5} {'KSPSolve max':>13} "
            f"{'sum_k max_p T':>14} {'mean T_p^k':>11} {'rank spread':>12}"
            + ("  noise" if noisy else ""))
    lines = [head, "-" * len(head)]
    for r in sorted(rows, key=lambda r: (r["problem"], _n(r), r["nprocs"], r["ksp"], _noise(r))):
        lines.append(
            f"{r['problem']:<10} {_n(r):>8} {r['ksp']:<9} {r['nprocs']:>2} {r['iterations']:>5} "
            f"{r['solve_max'] * 1e3:>10.2f} ms {r['sum_max_iteration'] * 1e3:>11.2f} ms "
            f"{r['mean_iteration'] * 1e6:>8.2f} us {r['rank_spread'] * 1e3:>9.3f} ms"
            + (f"  {_noise(r)}" if noisy else "")
        )
    return "\n".join(lines)


def _campaign(path: Path, out: Path) -> list[Path]:
    from ksptrace.cli.campaign import run as run_campaign  # the jobs layer: not for --help
    from ksptrace.jobs.expand import load_spec

    if not path.is_file():
        raise UsageError(f"campaign file {path} not found; run the demo from the repository root")
    spec = load_spec(path, out)
    code = run_campaign(spec, "local", False, sys.stderr)
    if code != 0:
        raise UsageError(f"the campaign in {out} did not complete; rerun 'make demo' to resume")
    # Exactly this campaign's runs: the folder may hold traces of an earlier version of the file.
    return [spec.output / run.trace for run in spec.runs]


def main(args: argparse.Namespace) -> int:
    import contextlib
    import json

    from ksptrace.report.index import render_index  # not for --help
    from ksptrace.report.terminal import summary_lines
    from ksptrace.trace.frame import traces_to_frame  # pandas, h5py: not for --help
    from ksptrace.trace.read import read_trace

    out: Path = args.out
    print(f"== demo campaign ({args.campaign}) -> {out / 'campaign'}", file=sys.stderr)
    traces = _campaign(args.campaign, out / "campaign")
    if str(args.paired) != "none":
        print(f"\n== paired noise campaign ({args.paired}) -> {out / 'paired'}",
              file=sys.stderr)
        traces += _campaign(args.paired, out / "paired")
    # The details go to stderr with the progress; stdout holds the summary (at most 25 lines).
    print(format_table(traces_to_frame(read_trace(p) for p in traces).to_dict("records")),
          file=sys.stderr)

    print(f"\n== analysis report -> {out / 'report'}", file=sys.stderr)
    parser = argparse.ArgumentParser(allow_abbrev=False)
    sub = parser.add_subparsers()
    analyze.register(sub)
    segment.register(sub)
    # Progress on stderr: one line per trace (elapsed, ETA), or a bar on a terminal.
    with contextlib.redirect_stdout(sys.stderr):
        # A process per core (at most 4): the results do not depend on the number.
        jobs = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                          else os.cpu_count() or 1))
        analysis = parser.parse_args(
            ["analyze", *map(str, traces), "--out", str(out / "report"), "--jobs", str(jobs)])
        analysis.answers = False  # printed last, below
        code = analyze.main(analysis)
    if code != 0:
        return code
    pairs = out / "report" / "noise_pairs.csv"
    noise = []
    if pairs.is_file():
        with pairs.open() as f:
            noise = ["", *noise_lines(list(csv.DictReader(f)))]

    extra = []
    if str(args.scaling) != "none":
        print(f"\n== oversubscription sweep ({args.scaling}) -> {out / 'scaling'}", file=sys.stderr)
        scaling = _campaign(args.scaling, out / "scaling")
        with contextlib.redirect_stdout(sys.stderr):
            code = segment.main(parser.parse_args(
                ["segment", *map(str, scaling), "--out", str(out / "segment"),
                 "--metrics", "undisturbed_time,solve_time,mean_iteration_time"]))
        if code != 0:
            return code
        extra.append(f"where scaling changes (segmentation): {out / 'segment' / 'segment.html'}")
    pages = [("report/report.html", "The variability report",
              "the answers, a page per run, the studies")]
    if str(args.scaling) != "none":
        pages.append(("segment/segment.html", "Where scaling changes",
                      "segmentation of the P = 1..8 sweep"))
    (out / "index.html").write_text(render_index("ksptrace demo", pages), encoding="utf-8")
    digest = json.loads((out / "report" / "summary.json").read_text())
    lines = summary_lines(digest, str(out / "report" / "report.html"))
    print("\n".join(closing_lines(lines, extra, noise, paired=str(args.paired) != "none",
                                   index=out / "index.html")))
    return 0


def closing_lines(summary: list[str], extra: list[str], noise: list[str],
                  paired: bool, index: Path) -> list[str]:
    """What the demo prints last: the report's summary, ``extra`` and the page that links
    everything (``index``) within MAX_LINES, then the noise table of a noise campaign (make
    noise-demo). Beside the paired design Q2 answers in a sentence and the table is left to the
    report (noise_pairs.csv): MAX_LINES holds."""
    from ksptrace.report.terminal import MAX_LINES

    last = [*extra, f"everything the demo wrote, one page: {index}"]
    return [*summary[: MAX_LINES - len(last)], *last, *([] if paired else noise)]


def _pct(value: str) -> str:
    return f"{float(value):+.0f} %" if value else "-"


def _predicted(pred: str, err: str) -> str:
    """Ê's gap, with its error unless the measured gap is too near 0 for a per cent."""
    if not pred:
        return "-"
    return f"{float(pred) * 1e3:.1f} ms ({_pct(err) if err else 'gap ~ 0'})"


def noise_lines(rows: list[dict[str, str]]) -> list[str]:
    """The noise demo's table (from noise_pairs.csv): per standard/pipelined pair and noise, the
    slowdowns against the noise-free runs, the standard method's extra slowdown as measured and
    as the non-stationary model predicts it, the KS rejection shares, and the stationary
    model's error on the standard method."""
    head = (f"{'methods':<16} {'P':>2} {'noise':<12} {'slowdown std/pipe':>18} "
            f"{'extra, measured':>15} {'Ê predicts':>18} {'KS rej. std/pipe':>16} "
            f"{'stationary err':>14} {'detour cost std/pipe':>20}")
    lines = ["Injected noise (slowdown against the noise-free run; extra = how much more the "
             "standard method slowed down)", head, "-" * len(head)]
    for r in rows:
        over = "*" if r.get("oversubscribed") == "True" else ""
        extra = r.get("measured_gap_s", "")
        pred = r.get("nonstationary_gap_s", "")
        err = r.get("err_pct_nonstationary_gap", "")
        ks = "/".join(f"{float(v):.0f}%" if v else "-" for v in (
            r.get("ks_rejected_pct_standard", ""), r.get("ks_rejected_pct_pipelined", "")))
        cost = " / ".join(f"{float(v):.2f}" if v else "-" for v in (
            r.get("detour_cost_ratio_standard", ""), r.get("detour_cost_ratio_pipelined", "")))
        slow = " / ".join(_pct(r.get(f"slowdown_pct_{m}", "")) for m in ("standard", "pipelined"))
        lines.append(
            f"{r['standard'] + '/' + r['pipelined']:<16} {r['P'] + over:>2} "
            f"{r['noise'].partition(':')[0]:<12} {slow:>18} "
            f"{(f'{float(extra) * 1e3:.1f} ms' if extra else '-'):>15} "
            f"{_predicted(pred, err):>18} "
            f"{ks:>16} {_pct(r.get('err_pct_stationary_standard', '')):>14} {cost:>20}")
    lines.append("detour cost: KSPSolve minus K detour-free iterations, in units of "
                 "sum_k max_p D (1: every iteration's slowest detour was paid)")
    if any(r.get("oversubscribed") == "True" for r in rows):
        lines.append("* oversubscribed: more ranks than cores")
    return lines
