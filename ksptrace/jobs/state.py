"""A campaign folder's state: manifest, run markers, submissions, and the status of each run.

A run is *done* when its trace exists and validates (and belongs to the run), *running* when a
marker says so and its job is alive, *failed* when a marker says it failed, its trace is corrupt,
or its job died, and *missing* otherwise. Resuming reruns everything that is not done or running.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ksptrace.errors import CampaignError, TraceError
from ksptrace.jobs.killed import scheduler_kill
from ksptrace.jobs.spec import (
    KINDS,
    MANIFEST,
    PROGRAM,
    SOLVER,
    STATE_DIR,
    TRACES_DIR,
    CampaignSpec,
    RunSpec,
)
from ksptrace.trace import temporaries

SUBMISSIONS = "submissions.jsonl"
STATES = ("done", "running", "failed", "interrupted", "unknown", "missing")


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def manifest(spec: CampaignSpec) -> dict[str, Any]:
    return {
        "campaign": spec.name,
        "source": spec.source,
        "campaign_hash": spec.campaign_hash,
        "runs": [
            {"run_id": r.run_id, "index": r.index, "nprocs": r.nprocs,
             "repetition": r.repetition, "params": dict(r.params), "kind": r.kind,
             "petsc_options": dict(r.petsc_options), "trace": r.trace, "log": r.log}
            for r in spec.runs
        ],
    }


def write_manifest(spec: CampaignSpec) -> Path:
    path = spec.output / MANIFEST
    atomic_write(path, json.dumps(manifest(spec), indent=1) + "\n")
    return path


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise CampaignError(f"{folder}: no {MANIFEST}; is this a campaign output folder? "
                            "(it is written by 'ksptrace campaign run')") from None
    except (OSError, ValueError) as exc:
        raise CampaignError(f"{path}: unreadable manifest ({exc}); rerun 'ksptrace campaign "
                            "run' to rewrite it") from None
    problem = manifest_fault(data)
    if problem:
        raise CampaignError(f"{path}: not a campaign manifest ({problem}); rerun 'ksptrace "
                            "campaign run' on its campaign file to rewrite it")
    return data


def manifest_fault(data: Any) -> str | None:
    """What is wrong with the shape of a manifest, or None."""
    if not isinstance(data, dict):
        return f"a {type(data).__name__}, not an object"
    if not isinstance(data.get("campaign"), str):
        return "no campaign name"
    runs = data.get("runs")
    if not isinstance(runs, list):
        return "'runs' is not a list"
    for i, r in enumerate(runs):
        if not isinstance(r, dict):
            return f"run {i} is not an object"
        if not isinstance(r.get("run_id"), str) or not r["run_id"].isalnum():
            return f"run {i} has no valid run_id"
        if not isinstance(r.get("nprocs"), int) or isinstance(r.get("nprocs"), bool):
            return f"run {i} has no integer nprocs"
        params = r.get("params")
        if r.get("kind", SOLVER) not in KINDS:
            return f"run {i} has an unknown kind {r.get('kind')!r}"
        if not isinstance(params, dict) or (r.get("kind", SOLVER) == SOLVER
                                            and not isinstance(params.get("iterations"), int)):
            return f"run {i} has no params with an integer 'iterations'"
        if r.get("log") is not None and not isinstance(r.get("log"), str):
            return f"run {i} has a log that is not a string"
    return None


def read_marker(path: Path) -> dict[str, str] | None:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return out


def write_marker(folder: Path, run_id: str, kind: str, fields: Mapping[str, object]) -> None:
    text = "".join(f"{k}={v}\n" for k, v in fields.items())
    atomic_write(folder / STATE_DIR / f"{run_id}.{kind}", text)


def clear_marker(folder: Path, run_id: str, kind: str) -> None:
    (folder / STATE_DIR / f"{run_id}.{kind}").unlink(missing_ok=True)


def local_job() -> str:
    return f"local:{socket.gethostname()}:{os.getpid()}"


def record_submission(folder: Path, backend: str, job_id: str, script: str,
                      run_ids: Iterable[str]) -> None:
    entry = {"backend": backend, "job_id": job_id, "script": script, "runs": list(run_ids),
             "time": time.time()}
    with open(folder / SUBMISSIONS, "a") as f:
        f.write(json.dumps(entry) + "\n")


def submissions(folder: Path) -> list[dict[str, Any]]:
    path = folder / SUBMISSIONS
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line cut short by a kill
    return out


def check_trace(folder: Path, run_id: str, nprocs: int, iterations: int | None,
                kind: str = SOLVER) -> str | None:
    """None when the run's trace is complete and belongs to the run, else what is wrong.

    ``iterations`` None: a collectives run's trace (or a program run's, with ``kind``)."""
    if kind == PROGRAM:
        return _check_program(folder / TRACES_DIR / run_id, run_id, nprocs)
    path = folder / TRACES_DIR / f"{run_id}.h5"
    if not path.exists():
        return "no trace"
    if iterations is None:
        return _check_collectives(path, run_id, nprocs)
    from ksptrace.trace.read import read_trace  # h5py: only once a trace is there to check

    try:
        trace = read_trace(path)
    except TraceError as exc:
        return str(exc)
    owner = trace.attr("run_id")
    if owner is not None and owner != run_id:
        return f"{path}: trace of run {owner}, not {run_id}"
    if trace.nprocs != nprocs or trace.iterations != iterations:
        return (f"{path}: P={trace.nprocs} K={trace.iterations}, expected P={nprocs} "
                f"K={iterations}")
    return None


def _check_program(path: Path, run_id: str, nprocs: int) -> str | None:
    """A program run's folder of traces (renamed into place only once all were written): every
    trace reads back and is the run's, on P ranks."""
    if not path.is_dir():
        return "no trace"
    from ksptrace.trace.read import read_trace

    traces = sorted(path.glob("*.h5"))
    if not traces:
        return f"{path}: no trace in the run's folder"
    for one in traces:
        try:
            trace = read_trace(one)
        except TraceError as exc:
            return str(exc)
        owner = trace.attr("run_id")
        if owner != run_id:
            return f"{one}: trace of run {owner}, not {run_id}"
        if trace.nprocs != nprocs:
            return f"{one}: P={trace.nprocs}, expected P={nprocs}"
    return None


def _check_collectives(path: Path, run_id: str, nprocs: int) -> str | None:
    from ksptrace.trace import collectives

    try:
        trace = collectives.read(path)
    except TraceError as exc:
        return str(exc)
    owner = trace.attrs.get("run_id")
    if owner is not None and owner != run_id:
        return f"{path}: trace of run {owner}, not {run_id}"
    if trace.nprocs != nprocs:
        return f"{path}: P={trace.nprocs}, expected P={nprocs}"
    return None


def remove_stale_temporaries(folder: Path, run_id: str) -> None:
    """Temporary trace files a killed run left behind (the harness publishes by rename)."""
    for tmp in (folder / TRACES_DIR).glob(f".{run_id}.h5.tmp-*"):
        tmp.unlink(missing_ok=True)


def sweep_dead_writers(folder: Path) -> list[Path]:
    """Temporary trace files of writers that are certainly dead, in any run (removed)."""
    return temporaries.sweep(folder / TRACES_DIR)


JobAlive = Callable[[str], bool | None]
"""Job id (``local:host:pid``, ``slurm:123_4``, ``pbs:...``) -> alive, dead, or None (unknown)."""


def local_alive(job: str) -> bool | None:
    kind, _, rest = job.partition(":")
    if kind != "local":
        return None
    host, _, pid = rest.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed process nobody has reaped yet is a zombie: dead for our purpose
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] != "Z"


@dataclass(frozen=True)
class RunStatus:
    run_id: str
    state: str
    detail: str = ""
    log: str | None = None


def run_status(folder: Path, run: Mapping[str, Any], alive: JobAlive,
               queued: set[str] | frozenset[str] = frozenset()) -> RunStatus:
    rid = str(run["run_id"])
    iterations = (int(run["params"]["iterations"]) if run.get("kind", SOLVER) == SOLVER
                  else None)
    problem = check_trace(folder, rid, int(run["nprocs"]), iterations,
                          str(run.get("kind", SOLVER)))
    if problem is None:
        return RunStatus(rid, "done")
    running = read_marker(folder / STATE_DIR / f"{rid}.running")
    if running is not None:
        job = running.get("job", "")
        state = alive(job)
        if state is True:
            return RunStatus(rid, "running", job, running.get("log"))
        if rid in queued:  # resubmitted after its job died (a node failure): not failed again
            return RunStatus(rid, "running", "queued")
        if state is None:  # a scheduler that cannot be asked: not "running" (issue 66)
            return RunStatus(rid, "unknown", f"{job or 'its job'}: the scheduler cannot be "
                             "asked whether it still runs (its server down?); a resume leaves "
                             "it alone, rerun status once the scheduler answers",
                             running.get("log"))
        if read_marker(folder / STATE_DIR / f"{rid}.interrupted") is not None:
            return RunStatus(rid, "interrupted", "stopped by the user; a resume reruns it",
                             running.get("log"))
        reason = scheduler_kill(folder, job)
        if reason is not None:
            return RunStatus(rid, "failed", f"killed by {reason[0]}", reason[1])
        return RunStatus(rid, "failed", f"killed ({job or '?'} is gone)", running.get("log"))
    if rid in queued:
        return RunStatus(rid, "running", "queued")
    if read_marker(folder / STATE_DIR / f"{rid}.interrupted") is not None:
        return RunStatus(rid, "interrupted", "stopped by the user; a resume reruns it")
    failed = read_marker(folder / STATE_DIR / f"{rid}.failed")
    if failed is not None:
        why = failed.get("reason") or f"exit code {failed.get('rc', '?')}"
        return RunStatus(rid, "failed", why, failed.get("log"))
    if problem != "no trace":
        return RunStatus(rid, "failed", problem, str(run.get("log")))
    return RunStatus(rid, "missing")


def statuses(folder: Path, runs: Iterable[Mapping[str, Any]], alive: JobAlive,
             queued: set[str] | frozenset[str] = frozenset()) -> list[RunStatus]:
    return [run_status(folder, r, alive, queued) for r in runs]


def run_dicts(spec: CampaignSpec) -> list[dict[str, Any]]:
    return list(manifest(spec)["runs"])


def pending(spec: CampaignSpec, alive: JobAlive,
            queued: set[str] | frozenset[str] = frozenset()) -> list[RunSpec]:
    """Runs to (re)do: everything not done and not running.

    Markers left next to a complete trace (a kill between publishing the trace and clearing the
    marker) are removed: the trace is what counts."""
    rows = statuses(spec.output, run_dicts(spec), alive, queued)
    for row in rows:
        if row.state == "done":
            clear_marker(spec.output, row.run_id, "running")
            clear_marker(spec.output, row.run_id, "failed")
            clear_marker(spec.output, row.run_id, "interrupted")
    todo = {s.run_id for s in rows if s.state in ("failed", "interrupted", "missing")}
    return [r for r in spec.runs if r.run_id in todo]
