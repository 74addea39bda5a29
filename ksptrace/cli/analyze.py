"""``ksptrace analyze TRACES... --out DIR``: the analysis report of a set of traces.

Traces are read and analysed one at a time (only results are kept). Bad traces (corrupt,
truncated, newer schema, NaN or inf timings) are named once on stderr and skipped; the rest are
analysed. With nothing left, the command fails. The output folder is written whole or not at
all: a full disk or an unwritable --out gives one error line and no partial report.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ksptrace.cli import leftout
from ksptrace.cli.progress import Progress
from ksptrace.errors import UsageError
from ksptrace.jobs.analysis import BACKENDS, prepare
from ksptrace.studies.variability.stats.choices import (
    CACHE_SUFFIX,
    DEFAULT_CANDIDATES,
    FITTABLE,
    INDEPENDENT_UNITS,
)

if TYPE_CHECKING:
    from ksptrace.studies.variability.run.options import AnalysisOptions


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "analyze",
        description=__doc__,
    )
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace files (.h5)")
    p.add_argument("--out", default=None,
                   help="directory for report.html, CSVs, summary.json (required unless "
                        "--cache-only)")
    p.add_argument("--alpha", type=float, default=0.05, help="KS significance level")
    p.add_argument("--reference-rank", type=int, default=0,
                   help="rank whose iteration times are KS-tested against every other rank's "
                        "(default 0, as in the paper)")
    p.add_argument(
        "--candidates",
        default=",".join(DEFAULT_CANDIDATES),
        help="comma-separated families to fit, of " + ", ".join(FITTABLE) + " (the paper also "
             "fitted nct: add it, at several times the time per trace, e.g. --candidates "
             "johnsonsu,nct,lognorm,gamma,norm,genextreme,exponweib)",
    )
    p.add_argument(
        "--fit-size",
        type=int,
        default=10_000,
        help="fit on a random subsample of this many values (0: all)",
    )
    p.add_argument(
        "--independent",
        choices=INDEPENDENT_UNITS,
        default="auto",
        help="independent units N in the max: nodes (the trace's node count), ranks (P), or "
             "auto: ranks for a trace from one node, nodes for one from several",
    )
    p.add_argument(
        "--keep-fill",
        action="store_true",
        help="keep pipelined GMRES's pipeline-fill iterations in bulk statistics",
    )
    p.add_argument("--mc-runs", type=int, default=16, help="Monte Carlo runs per trace")
    p.add_argument("--seed", type=int, default=0, help="seed of subsampling and Monte Carlo")
    p.add_argument(
        "--iteration",
        type=int,
        default=None,
        help="iteration for per-iteration node variances (default: mid-cycle)",
    )
    p.add_argument("--pool-solves", action="store_true",
                   help="in traces of several solves (ksptrace.record), analyse the solves of "
                        "each length together instead of each solve on its own")
    p.add_argument("--no-figures", action="store_true", help="tables only (faster)")
    p.add_argument("--single-file", action="store_true",
                   help="one report.html with every run's section and figure inside it "
                        "(default: a page per run and the figures as PNG files beside them)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="analyse traces in N processes (results do not depend on N; memory "
                        "grows with N times the largest trace)")
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="keep each trace's results here, keyed by the trace's content and the "
                        "options, so that a rerun analyses only new traces (default: the --out "
                        "folder's name + '.cache', beside it)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor keep results")
    p.add_argument("--backend", choices=BACKENDS, default="local",
                   help="local: here; slurm or pbs: one array task per trace, then a merge job "
                        "that writes the report (on the cluster, next to the traces)")
    p.add_argument("--walltime", default="01:00:00",
                   help="time limit of each analysis job (slurm, pbs), HH:MM:SS")
    p.add_argument("--max-array", type=int, default=None,
                   help="most tasks in one job array (default: $KSPTRACE_SLURM_MAX_ARRAY or 1000)")
    p.add_argument("--scheduler", type=Path, default=None, metavar="CAMPAIGN",
                   help="with --backend slurm|pbs: a campaign file whose [scheduler] table "
                   "(partition, account, sbatch_directives or pbs_directives) the analysis jobs "
                   "use too")
    p.add_argument("--dry-run", action="store_true",
                   help="slurm, pbs: write the job scripts into <out>.jobs/ but submit nothing")
    p.add_argument("--cache-only", action="store_true",
                   help="analyse into the --cache folder and write no report (what each array "
                        "task of --backend runs)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress display (skipped traces are still named)")
    p.set_defaults(func=main, answers=True)  # the demo prints them itself, at its end


def main(args: argparse.Namespace) -> int:
    from ksptrace.allocator import keep_freed_memory

    keep_freed_memory()  # fewer page faults: the same numbers, faster (ksptrace/allocator.py)
    if args.traces and args.jobs == 1 and args.backend == "local" and not args.cache_only:
        from ksptrace.trace.read import read_ahead

        read_ahead(args.traces[0])  # a large first trace is read while the analysis is imported
    # the analysis (scipy, pandas, matplotlib) is imported here, not for --help
    from scipy.integrate import IntegrationWarning

    from ksptrace.report.compose import write_report_files
    from ksptrace.studies.variability.pages.runs import cache_files
    from ksptrace.trace.collectives import collectives_flags

    unknown = [c.strip() for c in args.candidates.split(",") if c.strip() not in ("", *FITTABLE)]
    if unknown:
        raise UsageError(f"--candidates: no family {', '.join(unknown)}; use some of "
                         f"{', '.join(FITTABLE)}")
    options = options_of(args)
    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    if args.out is None and not args.cache_only:
        raise UsageError("--out is required (the folder for the report)")
    if (args.cache_only or args.backend != "local") and args.no_cache:
        raise UsageError(f"{'--cache-only' if args.cache_only else '--backend'} works through "
                         "the cache; drop --no-cache")
    if args.cache_only and args.cache is None:
        raise UsageError("--cache-only needs --cache DIR (where the results go)")
    paths: list[str | os.PathLike[str]] = list(args.traces)
    collective_paths = [p for p, yes in zip(paths, collectives_flags(paths), strict=True) if yes]
    paths = [p for p in paths if p not in collective_paths]
    if collective_paths and args.out is not None and not args.cache_only and not paths:
        return _collectives(Path(args.out), collective_paths, with_figures=not args.no_figures)
    cache = None if args.no_cache else Path(args.cache or str(Path(args.out)) + CACHE_SUFFIX)
    cache = _usable(cache, strict=args.cache_only or args.backend != "local")
    if args.backend != "local":
        return _submit(args, [str(p) for p in paths], cache, [str(p) for p in collective_paths])
    if args.cache_only:
        assert cache is not None
        analysed, skipped = cache_files(paths, options, not args.no_figures, args.jobs, cache)
        for s in skipped:
            print(f"ksptrace: skipped {s.reason}", file=sys.stderr)
        if collective_paths:  # a cache holds solver analyses: say which inputs it left out
            print(f"ksptrace: left out {len(collective_paths)} collectives traces "
                  f"({leftout.names(collective_paths)}): the cache holds solver analyses; "
                  "their page is made by ksptrace analyze TRACES --out DIR", file=sys.stderr)
        print(f"cached {analysed} of {len(paths)} traces in {cache}"
              + (f" ({leftout.reasons([(s.path, s.reason) for s in skipped])})"
                 if skipped else ""))
        return 0 if analysed else 7
    with Progress(len(paths), "trace", sys.stderr, enabled=not args.quiet) as progress, \
            warnings.catch_warnings():
        # scipy's optimisers and quadratures warn on hard fits; the report says what failed.
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", IntegrationWarning)
        links = [(f"{COLLECTIVES_FOLDER}/collectives.html",
                  f"Collective operations: {len(collective_paths)} trace"
                  f"{'s' if len(collective_paths) != 1 else ''}")] if collective_paths else []
        extra = []
        if collective_paths:
            from ksptrace.report.collectives import share_answer

            answer = share_answer(collective_paths, paths)
            extra = [answer] if answer is not None else []
        report = write_report_files(args.out, paths, options, _Named(progress),
                                    not args.no_figures, args.jobs, cache, links,
                                    args.single_file, extra)
    if report.units:
        print(report.units)
    if args.answers:
        _answers(report.summary, report.html)
    left = [(s.path, s.reason) for s in report.skipped]
    print(f"wrote {report.html} ({report.analysed} traces analysed, "
          + (leftout.reasons(left) if left else "0 skipped")
          + (f"; per-trace results in {cache}" if cache is not None else "") + ")")
    if collective_paths:
        return _collectives(Path(args.out) / COLLECTIVES_FOLDER, collective_paths,
                            with_figures=not args.no_figures, solver_paths=paths)
    return 0


def _answers(summary: Path, html: Path) -> None:
    """The report's answers as ``make demo`` prints them: each question's first sentence and
    KSPSolve per configuration, at most ``MAX_LINES`` lines."""
    import json

    from ksptrace.report.terminal import summary_lines

    print("\n".join(summary_lines(json.loads(summary.read_text()), str(html))))


def options_of(args: argparse.Namespace) -> AnalysisOptions:
    """The analysis options the flags ask for."""
    from ksptrace.studies.variability.run.options import AnalysisOptions

    return AnalysisOptions(
        alpha=args.alpha,
        reference_rank=args.reference_rank,
        candidates=tuple(c.strip() for c in args.candidates.split(",") if c.strip()),
        fit_size=args.fit_size or None,
        independent=args.independent,
        drop_fill=not args.keep_fill,
        mc_runs=args.mc_runs,
        seed=args.seed,
        iteration=args.iteration,
        pool_solves=args.pool_solves,
    )


def _usable(cache: Path | None, strict: bool) -> Path | None:
    """``cache`` when it may be used; else None with a note (an error when the command works
    through the cache: ``--cache-only``, ``--backend``)."""
    from ksptrace.studies.variability.run.batch import cache_problem

    problem = None if cache is None else cache_problem(cache)
    if problem is None:
        return cache
    if strict:
        raise UsageError(f"the cache {cache} cannot be used: {problem}")
    print(f"ksptrace: note: the cache {cache} is not used: {problem}", file=sys.stderr)
    return None


COLLECTIVES_FOLDER = "collectives"
"""Where the collectives page goes inside a report folder that also has solver traces."""


def _collectives(out: Path, paths: list[str | os.PathLike[str]], with_figures: bool,
                 solver_paths: Sequence[str | os.PathLike[str]] = ()) -> int:
    """The collectives page (see :func:`ksptrace.report.collectives.write_collectives`)."""
    from ksptrace.report.collectives import write_collectives

    written = write_collectives(out, paths, with_figures, solver_paths)
    for reason in written.skipped:
        print(f"ksptrace: skipped {reason}", file=sys.stderr)
    print(f"wrote {written.html} ({written.count} collectives traces"
          + (f", {len(written.skipped)} skipped" if written.skipped else "") + ")")
    return 0


def _option_flags(args: argparse.Namespace) -> list[str]:
    """The analysis options as flags, so that the jobs compute exactly this analysis."""
    flags = ["--alpha", repr(args.alpha), "--reference-rank", str(args.reference_rank),
             "--candidates", args.candidates, "--fit-size", str(args.fit_size),
             "--independent", args.independent, "--mc-runs", str(args.mc_runs),
             "--seed", str(args.seed), "--quiet"]
    if args.keep_fill:
        flags.append("--keep-fill")
    if args.iteration is not None:
        flags += ["--iteration", str(args.iteration)]
    if args.no_figures:
        flags.append("--no-figures")
    if args.single_file:
        flags.append("--single-file")
    return flags


def _submit(args: argparse.Namespace, traces: list[str], cache: Path | None,
            collective: Sequence[str] = ()) -> int:
    """--backend slurm|pbs: the jobs folder beside the report, then the submission; the
    collectives traces are read by the merge job alone (their page needs no array job)."""
    assert cache is not None
    out = Path(args.out).resolve()
    cache = cache.resolve()
    missing = [t for t in traces if not Path(t).is_file()]
    if missing:
        raise UsageError(f"{missing[0]} is not a file ({len(missing)} missing); the jobs read "
                         "the traces where they are")
    absolute = [str(Path(t).resolve()) for t in traces]
    beside = [str(Path(t).resolve()) for t in collective]
    base = [sys.executable, "-m", "ksptrace", "analyze"]
    flags = _option_flags(args)
    max_array = args.max_array or int(os.environ.get("KSPTRACE_SLURM_MAX_ARRAY", "1000"))
    jobs = prepare(args.backend, Path(str(out) + ".jobs"), absolute,
                   [*base, "--cache-only", "--cache", str(cache), *flags],
                   [*base, *absolute, *beside, "--out", str(out), "--cache", str(cache),
                    *flags],
                   walltime=args.walltime, max_array=max_array,
                   directives=_site_directives(args), dry_run=args.dry_run)
    also = (f"; the merge also reads {len(beside)} collectives traces "
            f"({leftout.names(collective)})" if beside else "")
    if args.dry_run:
        print(f"wrote {len(jobs.arrays)} array script(s) and {jobs.merge} (nothing submitted"
              f"{also})")
        return 0
    print(f"submitted {len(absolute)} trace analyses as array job(s) "
          f"{', '.join(jobs.job_ids[:-1])} and the merge as job {jobs.job_ids[-1]}, which "
          f"writes {out}/report.html{also}; logs in {jobs.folder / 'logs'}")
    return 0


def _site_directives(args: argparse.Namespace) -> list[str]:
    """The partition, account and extra directives of ``--scheduler``'s [scheduler] table."""
    if args.scheduler is None:
        return []
    from ksptrace.jobs.expand import load_spec

    return load_spec(args.scheduler).scheduler.site_lines(args.backend)


class _Named:
    """The progress display, and with --quiet still one line per skipped trace."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def step(self, text: str) -> None:
        self.progress.step(text)

    def advance(self, item: str, verdict: str = "ok") -> None:
        if verdict.startswith("skipped") and not self.progress.enabled:
            reason = verdict.removeprefix("skipped: ")
            print(f"ksptrace: skipped {item}: {reason}", file=sys.stderr)
        self.progress.advance(item, verdict)

    def note(self, text: str) -> None:
        self.progress.note(text)
