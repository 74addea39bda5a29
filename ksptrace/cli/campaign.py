"""``ksptrace campaign plan|run|status``: sweeps described once, run locally or submitted."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from ksptrace.cli.progress import Progress
from ksptrace.cli.signals import sigint_ignored
from ksptrace.errors import Interrupted
from ksptrace.jobs import state
from ksptrace.jobs.backends import BACKENDS, Script, alive_any, get_backend
from ksptrace.jobs.cost import estimate
from ksptrace.jobs.expand import MAX_RUNS, WARN_RUNS, load_spec
from ksptrace.jobs.runner import run_campaign
from ksptrace.jobs.spec import COLLECTIVES, PROGRAM, CampaignSpec, RunSpec


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "campaign", description="Sweeps described once in a TOML file, run locally or submitted.")
    sub = parser.add_subparsers(dest="campaign_command", metavar="ACTION")
    sub.required = True

    plan = sub.add_parser("plan", help="list the runs of a campaign file and what each costs")
    plan.add_argument("file", type=Path, help="campaign file (TOML)")
    plan.add_argument("--out", type=Path, help="output folder (overrides the file's)")
    plan.add_argument("--allow-large", action="store_true",
                      help=f"accept a sweep of more than {MAX_RUNS:,} runs")
    plan.set_defaults(func=main)

    run = sub.add_parser("run", help="run or submit the runs that are not done yet (resumes)")
    run.add_argument("file", type=Path, help="campaign file (TOML)")
    run.add_argument("--backend", required=True, metavar="NAME",
                     help=f"where runs go: {', '.join(BACKENDS)}")
    run.add_argument("--dry-run", action="store_true",
                     help="write the scripts and the manifest, but run and submit nothing")
    run.add_argument("--out", type=Path, help="output folder (overrides the file's)")
    run.add_argument("--allow-large", action="store_true",
                     help=f"accept a sweep of more than {MAX_RUNS:,} runs")
    run.set_defaults(func=main)

    status = sub.add_parser("status", help="done, running, failed and missing runs of a folder")
    status.add_argument("folder", type=Path, help="a campaign's output folder")
    status.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if args.campaign_command == "plan":
        return plan(load_spec(args.file, args.out, args.allow_large), sys.stdout)
    if args.campaign_command == "run":
        get_backend(args.backend)  # an unknown name fails before the file is read
        spec = load_spec(args.file, args.out, args.allow_large)
        warn_if_large(spec, sys.stderr)
        return run(spec, args.backend, args.dry_run, sys.stdout)
    return status(args.folder, sys.stdout)


def _duration(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def _plan_collectives(spec: CampaignSpec, out: TextIO) -> int:
    print(f"campaign {spec.name}: {len(spec.runs)} collectives runs -> {spec.output}", file=out)
    print(f"{'#':>4} {'run_id':12} {'op':18} {'algorithm':22} {'P':>5} {'bytes':>14} "
          f"{'reps':>5} {'rep':>3} {'est.time':>9}", file=out)
    total = 0.0
    for r in spec.runs:
        c = estimate(r, spec.scheduler)
        total += c.seconds
        sizes = f"{r.param('min_bytes')}..{r.param('max_bytes')}"
        print(f"{r.index:>4} {r.run_id:12} {str(r.param('op'))[:18]:18} "
              f"{str(r.param('algorithm'))[:22]:22} {r.nprocs:>5} {sizes:>14} "
              f"{r.param('repetitions'):>5} {r.repetition:>3} {_duration(c.seconds):>9}",
              file=out)
    print(f"total: {_duration(total)} run one after the other (rough estimate)", file=out)
    return 0


def _plan_program(spec: CampaignSpec, out: TextIO) -> int:
    """A program campaign's runs: the command each traces (its cost is the program's own)."""
    print(f"campaign {spec.name}: {len(spec.runs)} program runs (ksptrace trace) -> "
          f"{spec.output}", file=out)
    print(f"{'#':>4} {'run_id':12} {'P':>5} {'rep':>3} {'nodes':>5}  command", file=out)
    for r in spec.runs:
        print(f"{r.index:>4} {r.run_id:12} {r.nprocs:>5} {r.repetition:>3} "
              f"{spec.scheduler.nodes(r.nprocs):>5}  {shlex.join(r.param('argv'))}", file=out)
    print("no time estimate: each run takes as long as your program", file=out)
    return 0


def warn_if_large(spec: CampaignSpec, err: TextIO) -> None:
    """One warning line when a campaign has more than WARN_RUNS runs."""
    if len(spec.runs) > WARN_RUNS:
        arrays = -(-len(spec.runs) // spec.scheduler.max_array_size)
        print(f"ksptrace: warning: campaign {spec.name} has {len(spec.runs):,} runs (more than "
              f"{WARN_RUNS:,}); on a scheduler that is at least {arrays} job arrays of at most "
              f"{spec.scheduler.max_array_size} tasks; check the sweep is what you mean",
              file=err, flush=True)


def plan(spec: CampaignSpec, out: TextIO, err: TextIO | None = None) -> int:
    warn_if_large(spec, sys.stderr if err is None else err)
    if spec.runs and spec.runs[0].kind == COLLECTIVES:
        return _plan_collectives(spec, out)
    if spec.runs and spec.runs[0].kind == PROGRAM:
        return _plan_program(spec, out)
    header = f"{'#':>4} {'run_id':12} {'problem':10} {'n':>10} {'ksp':9} {'pc':7} {'P':>5} " \
             f"{'K':>6} {'rep':>3} {'nodes':>5} {'est.time':>9} {'core-h':>8}"
    # The noise column only when a run has noise: it is what tells such runs apart.
    noisy = any(dict(r.params).get("noise", "none") != "none" for r in spec.runs)
    if noisy:
        header += "  noise"
    print(f"campaign {spec.name}: {len(spec.runs)} runs -> {spec.output}", file=out)
    print(header, file=out)
    total_s = total_ch = 0.0
    for r in spec.runs:
        c = estimate(r, spec.scheduler)
        total_s += c.seconds
        total_ch += c.core_hours
        print(f"{r.index:>4} {r.run_id:12} {str(r.param('problem'))[:10]:10} {r.param('n'):>10} "
              f"{str(r.param('ksp'))[:9]:9} {str(r.param('pc'))[:7]:7} {r.nprocs:>5} "
              f"{r.param('iterations'):>6} {r.repetition:>3} {c.nodes:>5} "
              f"{_duration(c.seconds):>9} {c.core_hours:>8.2f}"
              + (f"  {dict(r.params).get('noise', 'none')}" if noisy else "")
              + ("  oversubscribed" if spec.scheduler.oversubscribed(r.nprocs) else ""),
              file=out)
        if c.seconds > spec.scheduler.walltime_seconds:
            print(f"     warning: estimate exceeds the walltime "
                  f"{_duration(spec.scheduler.walltime_seconds)}", file=out)
    print(f"total: {_duration(total_s)} run one after the other, {total_ch:.2f} core-hours "
          "(rough estimates)", file=out)
    return 0


class RunProgress:
    """The campaign's runs on the one progress display (:class:`ksptrace.cli.progress.Progress`):
    a bar on a terminal, one timestamped line per run in a log."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr  # the stderr of now, not
        self.display: Progress | None = None  # of the import (tests replace it)

    def __call__(self, done: int, total: int, run: RunSpec, ok: bool, elapsed: float) -> None:
        if self.display is None:
            self.display = Progress(total, "run", self.stream)
        self.display.advance(run.run_id, "ok" if ok else f"FAILED, see {run.log}")
        if done == total:
            self.close()

    def close(self) -> None:
        if self.display is not None:
            self.display.close()
            self.display = None


def run(spec: CampaignSpec, backend_name: str, dry_run: bool, out: TextIO) -> int:
    backend = get_backend(backend_name)
    def written(adapted: CampaignSpec, scripts: list[Script]) -> None:
        for s in scripts:
            print(f"wrote {adapted.output / s.path} ({len(s.runs)} runs)", file=out, flush=True)
        if backend_name == "local" and not dry_run and sigint_ignored():  # checked: it runs
            print(f"ksptrace: SIGINT is ignored (started in the background); stop with "
                  f"'kill {os.getpid()}' (SIGTERM), and rerun to resume", file=sys.stderr,
                  flush=True)

    progress = RunProgress()
    try:
        outcome = run_campaign(spec, backend, dry_run, progress=progress, on_written=written)
    except Interrupted as exc:
        progress.close()
        print(f"ksptrace: {exc}", file=sys.stderr)
        status(spec.output, out)
        return exc.exit_code
    if not outcome.pending:
        return _nothing_pending(spec, out)
    skipped = f", {outcome.skipped} done or running skipped" if outcome.skipped else ""
    if dry_run:
        print(f"dry run: {len(outcome.pending)} runs rendered{skipped}; nothing submitted",
              file=out)
        return 0
    if outcome.jobs:
        print(f"submitted {len(outcome.pending)} runs{skipped} as job(s) "
              f"{', '.join(outcome.jobs)}; follow with: ksptrace campaign status "
              f"{spec.output}", file=out)
        return 0
    return status(spec.output, out, require_done=True)


def _nothing_pending(spec: CampaignSpec, out: TextIO) -> int:
    """'Nothing to do' only when it is so: runs whose scheduler cannot be asked whether their
    job still runs (a PBS server down) are named instead, and the exit code is 1."""
    rows = state.statuses(spec.output, state.run_dicts(spec), alive_any) \
        if spec.output.exists() else []
    unknown = [r for r in rows if r.state == "unknown"]
    if not unknown:
        print(f"campaign {spec.name}: all {len(spec.runs)} runs are done or running; "
              f"nothing to do ({spec.output})", file=out)
        return 0
    print(f"campaign {spec.name}: {len(unknown)} of {len(spec.runs)} runs are in an unknown "
          f"state (their scheduler cannot be asked whether their jobs still run; its server "
          f"down?), the others done or running; nothing submitted. Start the scheduler, or see "
          f"ksptrace campaign status {spec.output}", file=out)
    return 1


def status(folder: Path, out: TextIO, require_done: bool = False) -> int:
    """Print the campaign's state; non-zero when a run failed (or, with ``require_done``, when
    any run is not done: what a local run that has finished must answer)."""
    data = state.read_manifest(folder)
    queued: set[str] = set()
    for name in BACKENDS:
        queued |= get_backend(name).queued(folder)
    rows = state.statuses(folder, data["runs"], alive_any, queued)
    swept = state.sweep_dead_writers(folder)
    if swept:
        print(f"removed {len(swept)} temporary trace file(s) left by killed runs", file=out)
    counts = Counter(r.state for r in rows)
    summary = ", ".join(f"{counts.get(s, 0)} {s}" for s in state.STATES
                        if s not in ("interrupted", "unknown") or counts.get(s))
    print(f"campaign {data['campaign']} ({folder}): {len(rows)} runs: {summary}", file=out)
    for r in rows:
        if r.state == "done":
            continue
        log = f"  log: {folder / r.log}" if r.log and r.state == "failed" else ""
        detail = f" ({r.detail})" if r.detail else ""
        print(f"  {r.state:8} {r.run_id}{detail}{log}", file=out)
    if require_done and counts.get("done", 0) != len(rows):
        return 1
    return 0 if counts.get("failed", 0) == 0 else 1
