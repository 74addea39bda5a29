"""The traces of a traced program, assembled from its processes' raw records.

Pure: :class:`~ksptrace.harness.hook.records.RankFile` objects in, frozen results out. One trace
per KSP whose recorded solves ran on every rank together (PETSc's world: the KSP of an
application, of a SNES or a TS), its solves back to back as ``ksptrace.record`` writes them;
one trace per rank for a KSP that each rank solves alone (a sub-solve selected with
``--depth``). Direct solves (``preonly``: the hook attaches no monitor to them), solves with
no monitor call and solves on other sub-communicators are left out, and said so. The solve time
of each solve is its KSPSolve time less the set-up (KSPSetUp, PCSetUp) that ran before its first
iteration; the set-up is kept apart (attributes ``setup_seconds``, the slowest rank's total, and
``setup_seconds_solves``), and so is the rest of the time outside the iterations: before the
first monitor call (the initial residual) and after the last (``outside_seconds``,
``outside_seconds_solves``; ``setup_max`` is the first solve's, as ``ksptrace.record`` writes it).
With MPI wait accounting on every rank, each iteration's wait in MPI reductions and reductions
started (``wait_seconds``, ``mpi_calls``) come from the totals the hook copied at each stamp,
as ``ksptrace.record`` computes them; ``wait_by_entry`` sums each entry point over the ranks
and the whole program (not only the traced solves). With ``trace --events`` each rank's event
spans are summed into the iterations of each trace (``event_seconds``), as ``ksptrace.record``
does.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace

import numpy as np

from ksptrace.errors import TraceError
from ksptrace.harness.hook.records import KspSummary, RankFile, SolveRecord
from ksptrace.harness.monitoring.mpiwait import ACCOUNTING, per_iteration
from ksptrace.harness.monitoring.setuptime import setup_seconds
from ksptrace.trace import iteration_events
from ksptrace.trace.model import AttrValue, Solves, Trace


@dataclass(frozen=True)
class Assembled:
    """The traces of one traced run, and what was left out of them."""

    traces: tuple[tuple[str, Trace], ...]
    """(a name for the file, the trace)."""
    left_out: tuple[str, ...]
    """One line per kind of solve not in a trace: which KSP, how many, why."""
    notes: tuple[str, ...]
    """What the hook said (a KSP that refused the monitor)."""


def _world_order(f: RankFile) -> list[int]:
    """The ids of this rank's world KSPs in the order their first solve was recorded (the same
    on every rank, since those solves are collective)."""
    seen: list[int] = []
    for s in f.solves:
        if s.comm_size == f.size and s.ksp not in seen:
            seen.append(s.ksp)
    return seen


def _label(s: SolveRecord | KspSummary) -> str:
    prefix = f" (prefix {s.prefix})" if s.prefix else ""
    return f"{s.ksp_type or '?'}{prefix}"


def wait_attributes(files: list[RankFile], why_off: str | None) -> dict[str, AttrValue]:
    """The trace attributes of the wait accounting (``why_off``: why ``trace`` did not ask for
    it), as ``ksptrace run`` writes them."""
    if why_off is not None:
        return {"wait_accounting": f"none ({why_off})"}
    missing = next((f for f in files if f.waits is None or not f.waits.installed), None)
    if missing is not None:
        why = "no record" if missing.waits is None else missing.waits.why_not()
        return {"wait_accounting": f"none (rank {missing.rank}: {why})"}
    points = tuple(dict.fromkeys(n for f in files if f.waits for n in f.waits.entry_points))
    shown = []
    for name in points:
        seconds = sum(f.waits.by_entry.get(name, (0.0, 0.0))[0] for f in files if f.waits)
        calls = sum(f.waits.by_entry.get(name, (0.0, 0.0))[1] for f in files if f.waits)
        if calls:
            shown.append(f"{name} {calls:.0f} calls {seconds:.6g} s")
    found: dict[str, AttrValue] = {"wait_accounting": ACCOUNTING,
                                   "wait_entry_points": ",".join(points),
                                   "wait_by_entry": "; ".join(shown) or "no call"}
    if all(f.spans is not None for f in files):  # trace --events
        timed = dict.fromkeys(n for f in files if f.waits for n in f.waits.events)
        found.update(events=True, event_functions=",".join(timed))
    return found


def assemble(files: list[RankFile], attrs: dict[str, AttrValue]) -> Assembled:
    """The traces of ``files`` (one per rank of the program), each with ``attrs`` added (with
    :func:`wait_attributes` among them, a trace without wait times says so)."""
    if not files:
        raise TraceError("no process reported a KSPSolve")
    size = files[0].size
    ranks = sorted(f.rank for f in files)
    if len(set(ranks)) < len(ranks) or any(f.size != size for f in files):
        raise TraceError("several PETSc programs ran in the command (a rank recorded twice, or "
                         "programs of different sizes); trace one program per command")
    if size != len(files) or ranks != list(range(len(files))):  # never a list of `size` ranks
        shown = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
        raise TraceError(f"records of {len(files)} ranks ({shown}) but the program ran on "
                         f"{size}: a rank did not record (its files are missing)")
    files = sorted(files, key=lambda f: f.rank)
    hosts = tuple(f.hostname for f in files)
    node_of = {h: i for i, h in enumerate(dict.fromkeys(hosts))}
    nodes = np.array([node_of[h] for h in hosts])
    left: list[str] = []
    traces: list[tuple[str, Trace]] = []
    orders = [_world_order(f) for f in files]
    if any(len(o) != len(orders[0]) for o in orders):
        raise TraceError("the ranks recorded solves of different numbers of KSPs; trace a "
                         "KSP that all ranks solve together (--ksp-prefix)")
    for index in range(len(orders[0])):
        per_rank = [[s for s in f.solves if s.ksp == o[index]]
                    for f, o in zip(files, orders, strict=True)]
        made = _trace(per_rank, hosts, nodes, attrs, left, [f.spans for f in files])
        if made is not None:  # numbered among the traces made: no gap for a KSP left out
            name = "" if len(orders[0]) == 1 else _file_part(per_rank[0][0].prefix, len(traces))
            traces.append((name, made))
    for f in files:
        if size > 1:
            alone = defaultdict(list)
            for s in f.solves:
                if s.comm_size == 1:
                    alone[s.ksp].append(s)
            number = 0
            for solves in alone.values():
                made = _trace([solves], (f.hostname,), np.array([0]), attrs, left, [f.spans])
                if made is not None:
                    part = _file_part(solves[0].prefix, number)
                    traces.append((f"rank{f.rank}-{part}", made))
                    number += 1
        other = [s for s in f.solves if 1 < s.comm_size < f.size]
        if other:
            left.append(f"rank {f.rank}: {len(other)} solves on sub-communicators (of "
                        f"{sorted({s.comm_size for s in other})} ranks), not traced")
    left += _skipped(files[0])
    notes = tuple(dict.fromkeys(n for f in files for n in f.notes))
    said = {"solves_left_out": "; ".join(left) or "none"}
    named = tuple((name, replace(t, attrs={**t.attrs, **said})) for name, t in traces)
    return Assembled(named, tuple(left), notes)


def _file_part(prefix: str, index: int) -> str:
    """A KSP's part of a file name: its options prefix (letters, digits, _), else its index."""
    clean = re.sub(r"[^A-Za-z0-9_]", "", prefix).strip("_")
    return f"{clean}-ksp{index}" if clean else f"ksp{index}"


def _skipped(f: RankFile) -> list[str]:
    """Rank 0's solves left out, by kind, KSP type, prefix and depth (the KSPs of one prefix,
    such as one eigenvalue estimate per multigrid level, on one line)."""
    groups: dict[tuple[int, str, str, str], list[int]] = defaultdict(list)
    for k in f.ksps:
        if k.skipped:
            kind = ("direct solves (preonly: no iteration to time, not modelled)" if k.direct
                    else "set-up solves" if k.setup_seen
                    else "nested solves" if k.min_depth > 1 else "solves")
            groups[(k.min_depth, k.prefix, kind, _label(k))].append(k.skipped)
    lines = []
    for (depth, _, kind, label), counts in sorted(groups.items()):
        of = f" ({len(counts)} KSPs)" if len(counts) > 1 else ""
        lines.append(f"{sum(counts)} {kind} of KSP {label}{of} at depth {depth}")
    return lines


def _trace(per_rank: list[list[SolveRecord]], hosts: tuple[str, ...], nodes: np.ndarray,
           attrs: dict[str, AttrValue], left: list[str],
           spans: list[np.ndarray | None]) -> Trace | None:
    """The trace of one KSP's recorded solves on the ranks given (None, said in ``left``,
    when none of its solves has a stamp), with its event times when each rank has ``spans``."""
    first = per_rank[0]
    counts = [[s.stamps.size for s in solves] for solves in per_rank]
    if any(c != counts[0] for c in counts):
        raise TraceError(f"KSP {_label(first[0])}: the ranks recorded different solves "
                         f"(iterations per solve {counts[0][:5]} against others)")
    keep = [i for i, s in enumerate(first) if s.stamps.size >= 1 and not s.lost]
    if len(keep) < len(first):
        why = ("its KSP refused a monitor (MAXKSPMONITORS)" if first[0].refused else
               "no monitor call (PETSc calls none for preonly, nor for a KSP without norms "
               "such as a smoother) or no memory")
        left.append(f"{len(first) - len(keep)} solves of KSP {_label(first[0])}: {why}")
    if not keep or max(first[i].stamps.size for i in keep) < 2:
        return None
    stamps = np.stack([np.concatenate([solves[i].stamps for i in keep]) for solves in per_rank])
    norms = np.concatenate([first[i].norms for i in keep])
    inside = np.array([[solves[i].setup_inside for i in keep] for solves in per_rank])
    before = np.array([[solves[i].setup_before for i in keep] for solves in per_rank])
    wall = np.array([[solves[i].end - solves[i].begin for i in keep] for solves in per_rank])
    seconds = np.clip(wall - inside, 0.0, None)
    setup = inside + before
    outside = np.array([[np.nan if (v := setup_seconds(float(seconds[p, j]), solves[i].stamps))
                         is None else v for j, i in enumerate(keep)]
                        for p, solves in enumerate(per_rank)])
    offsets = np.concatenate([[0], np.cumsum([first[i].stamps.size for i in keep])])
    solves = Solves(offsets, seconds, tuple(first[i].reason_name or str(first[i].reason)
                                            for i in keep),
                    np.array([first[i].iterations for i in keep]))
    its = int(offsets[-1] - len(keep))
    rows = first[keep[0]].rows
    mine: dict[str, AttrValue] = {
        "ksp": first[keep[0]].ksp_type, "ksp_requested": first[keep[0]].ksp_type,
        "pc": first[keep[0]].pc_type, "ksp_prefix": first[keep[0]].prefix,
        "solve_depth": first[keep[0]].depth, "setup_solve": first[keep[0]].setup,
        "nprocs": len(per_rank), "n_nodes": int(np.unique(nodes).size),
        "ranks_per_node": int(np.bincount(nodes).max()), "solves": len(keep),
        "ksp_solves": len(first), "iterations_done": its,
        "petsc_iterations": int(sum(first[i].iterations for i in keep)),
        "solve_max": float(seconds.sum(axis=1).max()),
        "setup_seconds": float(setup.sum(axis=1).max()),
        "setup_seconds_solves": " ".join(f"{v:.6g}" for v in setup.max(axis=0)),
        "outside_seconds_solves": " ".join(f"{v:.6g}" for v in outside.max(axis=0)),
    }
    if np.isfinite(outside).all():
        mine["outside_seconds"] = float(outside.sum(axis=1).max())
        mine["setup_max"] = float(outside[:, 0].max())
    if rows > 0:
        mine["n"] = mine["n_global"] = int(rows)
    waits = _waits(per_rank, keep)
    events = None if any(s is None for s in spans) else np.stack([
        iteration_events.per_iteration(stamps[p], s, offsets)
        for p, s in enumerate(spans) if s is not None])
    if waits is None and attrs.get("wait_accounting") == ACCOUNTING:
        mine["wait_accounting"] = "none (a solve's wait totals were not copied at every stamp)"
    return Trace(stamps, norms, nodes, hosts, seconds.sum(axis=1), {**attrs, **mine},
                 solves=solves, wait_seconds=None if waits is None else waits[0],
                 mpi_calls=None if waits is None else waits[1], event_seconds=events)


def _waits(per_rank: list[list[SolveRecord]], keep: list[int]
           ) -> tuple[np.ndarray, np.ndarray] | None:
    """[P, K] waits and reductions of the kept solves, back to back without the gaps between
    solves (as the stamps' iteration times), or None unless every such solve has its marks."""
    waits, calls = [], []
    for solves in per_rank:
        marks = [solves[i].marks for i in keep]
        if any(m is None or m.shape[0] != solves[i].stamps.size or np.isnan(m).any()
               for m, i in zip(marks, keep, strict=True)):
            return None
        steps = [per_iteration(m) for m in marks if m is not None]
        waits.append(np.concatenate([w for w, _ in steps]))
        calls.append(np.concatenate([c for _, c in steps]))
    return np.stack(waits), np.stack(calls)
