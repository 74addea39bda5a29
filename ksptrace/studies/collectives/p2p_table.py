"""The report's PLogP tables: where the transport switches (each function's step at each shared
break), and what ``ksptrace collectives --op plogp`` measured between two ranks per message
size, with the PLogP and LogP parameters fitted to it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives.persize import rows, summarize
from ksptrace.studies.collectives.pointtopoint import (
    Piecewise,
    PLogPModel,
    fit_plogp_model,
    logp_from_plogp,
)
from ksptrace.studies.table import Table, map_cells, significant
from ksptrace.trace.collectives import CollectiveTrace


def _pct(x: float) -> str:
    """A relative change in per cent, with a decimal below 10 % (an interval's end at -0.3 %
    does not read as -0 %)."""
    return f"{x:+.1%}" if abs(x) < 0.1 else f"{x:+.0%}"


def _function(name: str, f: Piecewise) -> str:
    """Each piece by its value where it starts and its slope beyond (a later piece's intercept
    at m = 0 can be negative, which says nothing about the sizes it covers)."""
    starts = (0, *f.breakpoints)
    pieces = [f"{(a + b * lo) * 1e6:.3g} us at {lo} B + {b * 1e9:.3g} ns/B" for a, b, lo in zip(
        f.intercepts, f.slopes, starts, strict=True)]
    if not f.breakpoints:
        return f"{name}(m) = {pieces[0]} (no step)"
    known = len(f.jump_low) == len(f.breakpoints)
    steps = [_pct(jump) + (f" [95 % {_pct(lo)}, {_pct(hi)}]" if known else "") + f" at {b} B"
             for b, jump, lo, hi, stepped in zip(f.breakpoints, f.jumps(), f.jump_low or
                                                 f.jumps(), f.jump_high or f.jumps(),
                                                 f.stepped(), strict=True) if stepped]
    flat = [str(b) for b, stepped in zip(f.breakpoints, f.stepped(), strict=True) if not stepped]
    said = (f"steps {', '.join(steps)}" if steps else "no step") + (
        f"; no step at the transport's break{'s' * (len(flat) > 1)} {', '.join(flat)} B"
        if flat else "")
    return f"{name}(m) = " + "; ".join(pieces) + f" ({said})"


def model_of(trace: CollectiveTrace) -> PLogPModel:
    parts = trace.parts
    if parts is None:
        raise AnalysisError(f"{trace.attrs.get('run_id', 'this trace')} holds no PLogP "
                            "measurements; record them with ksptrace collectives --op plogp")
    return fit_plogp_model(trace.message_bytes, trace.seconds,
                           parts["send_overhead_seconds"], parts["recv_overhead_seconds"],
                           parts["gap_seconds"])


def _steps_table(model: PLogPModel, sizes: np.ndarray, library: str) -> Table:
    """Each shared break: the sizes it lies between, and each function's jump there with its
    95 % interval, or that it does not step there."""
    fits = {"o_s": model.send_overhead, "o_r": model.recv_overhead, "g": model.gap}
    if model.half_round_trip is not None:  # it chooses the breaks too (issue 66: no column)
        fits["RTT/2"] = model.half_round_trip
    breaks = model.gap.breakpoints
    before = [int(sizes[np.searchsorted(sizes, b) - 1]) for b in breaks]
    frame = pd.DataFrame({"from_bytes": before, "to_bytes": list(breaks)})
    shown = frame.astype(str)
    for name, f in fits.items():
        frame[f"{name}_jump_pct"] = np.array(f.jumps()) * 100
        frame[f"{name}_low_pct"] = np.array(f.jump_low) * 100
        frame[f"{name}_high_pct"] = np.array(f.jump_high) * 100
        frame[f"{name}_steps"] = list(f.stepped())
        shown[name] = [f"{_pct(j)} [95 % {_pct(lo)}, {_pct(hi)}]" if step else "no step"
                       for j, lo, hi, step in zip(f.jumps(), f.jump_low, f.jump_high,
                                                  f.stepped(), strict=True)]
    stepping = [[n for n, f in fits.items() if f.stepped()[k]] for k in range(len(breaks))]
    frame["stepping"] = [", ".join(s) for s in stepping]
    shown["chosen by"] = [", ".join(s) if s else "the joint fit only (no function steps "
                          "clear of 0 alone)" for s in stepping]
    notes = ("a break lies between two measured sizes (the transport switches somewhere "
             "between them); the breaks are chosen once for o_s, o_r, g and RTT/2 from the "
             "data, nothing is told where to look; a function steps at a break when its "
             "jump's 95 % interval excludes 0; 'chosen by' names the functions that step "
             "there",)
    title = (f"Where the transport switches ({library})" if library else
             "Where the transport switches")
    return Table("collectives_plogp_steps", title, frame,
                 display=shown[["from_bytes", "to_bytes", *fits, "chosen by"]], notes=notes)


ASSUMED_TICK = 1e-9
"""The clock's tick of a trace that does not record its ``wtick``: the finest MPI_Wtime of
Linux (clock_gettime's nanoseconds)."""


def plogp_tables(traces: Sequence[CollectiveTrace]) -> tuple[Table, ...]:
    """Per PLogP trace, its steps and its per-size table (none when there are none)."""
    out = []
    for t in traces:
        if t.operation != "plogp" or t.parts is None:
            continue
        model = model_of(t)
        logp = logp_from_plogp(model)
        summaries = {k: summarize(rows(v, t.message_bytes.size, k)) for k, v in (
            ("rtt_half", t.seconds), *((k.replace("_seconds", ""), v)
                                       for k, v in t.parts.items()))}
        frame = pd.DataFrame({"bytes": t.message_bytes,
                              **{f"{k}_us": s.median * 1e6 for k, s in summaries.items()}})
        frame["gap_model_us"] = model.gap(t.message_bytes) * 1e6
        tick = float(t.attrs.get("wtick") or ASSUMED_TICK)
        for k, s in summaries.items():  # the 95 % interval's half-width, in % of the median,
            # never finer than the clock (issue 66: 1e-05 % was shown)
            frame[f"{k}_ci_pct"] = np.maximum((s.high - s.low) / 2, tick / 2) / s.median * 100
        notes = (f"L = {model.L * 1e6:.3g} us (RTT/2 - g at the smallest size)",
                 _function("o_s", model.send_overhead), _function("o_r", model.recv_overhead),
                 _function("g", model.gap),
                 f"LogP at {int(t.message_bytes[0])} B: L = {logp.L * 1e6:.3g} us, "
                 f"o = {logp.o * 1e6:.3g} us, g = {logp.g * 1e6:.3g} us, "
                 f"L/g = {logp.in_flight:.2g} messages in flight"
                 + (f" ({logp.note})" if logp.note else ""),
                 *((model.note,) if model.note else ()),
                 "per size the median over rounds (each round's o_s and RTT a median of 5 "
                 "messages, its o_r of 15, its g the slope of trains of 2-16 messages; rounds "
                 "more than 5 MADs slower than the median left out), both ranks measuring in turn; "
                 "*_ci_pct: half the 95 % interval of that median, never less than half the "
                 f"clock's tick ({tick:.3g} s, "
                 + ("MPI_Wtick" if t.attrs.get("wtick") else "not recorded: 1 ns assumed")
                 + "); a break must stand out of these intervals")
        library = str(t.attrs.get("mpi_library", "")).split("\n")[0].split(",")[0].strip()
        if model.gap.breakpoints and len(model.gap.jump_low) == len(model.gap.breakpoints):
            out.append(_steps_table(model, t.message_bytes, library))
        out.append(Table("collectives_plogp", f"PLogP between two ranks ({library})".replace(
            " ()", ""), frame, display=map_cells(frame, significant), notes=notes))
    return tuple(out)
