"""Issue 66: a segmented ring that ran in one phase (m = P x segment: each block one piece, the
plain ring's steps) was labelled segmented. Where the trace records ``segment_phases`` the
best-algorithm table, the curves table, the notes, ``decide``'s runs and the rules file's
comments say so; a trace without it reads as before, with "phases not recorded"."""

from __future__ import annotations

import json

import numpy as np

from ksptrace.collectives.fallbacks import phases_per_size, ran_per_size
from ksptrace.studies.collectives import ran
from ksptrace.studies.collectives import report as cr
from ksptrace.studies.decisions.rules import ompi_rules, rule_with_segment
from ksptrace.trace.collectives import CollectiveTrace

SIZES = (1024, 2048, 4096, 8192)
ONE = "segmented_ring/seg1024 (1 phase: ran as the plain ring)"


def _trace(name: str, number: int, nprocs: int, us: float, seg: int = 0,
           phases: bool = True) -> CollectiveTrace:
    attrs: dict[str, object] = {
        "operation": "allreduce", "algorithm_name": name, "algorithm": number,
        "segment_bytes": seg, "mpi_flavor": "openmpi",
        "algorithm_ran": json.dumps({str(m): r for m, r in ran_per_size(
            "openmpi", "allreduce", name, SIZES, nprocs, seg).items()})}
    counted = phases_per_size("openmpi", "allreduce", name, SIZES, nprocs, seg)
    if phases and counted is not None:
        attrs["segment_phases"] = json.dumps({str(m): n for m, n in counted.items()})
    rng = np.random.default_rng(number * 10 + nprocs)
    seconds = us * 1e-6 * (1 + 0.01 * rng.random((nprocs, len(SIZES), 5)))
    return CollectiveTrace(seconds=seconds, message_bytes=np.array(SIZES),
                           node_ids=np.zeros(nprocs, np.int64), hostnames=("h",) * nprocs,
                           attrs=attrs)  # type: ignore[arg-type]


def _traces(phases: bool = True) -> list[CollectiveTrace]:
    """At P = 2 and 4: the segmented ring with 1 KiB segments fastest, then ring, then
    recursive doubling. 1 KiB segments hold 128 float64: at P = 2 it runs the plain ring at
    1 KiB, 1 phase at 2 KiB, 2 at 4 KiB, 4 at 8 KiB; at P = 4 the plain ring up to 2 KiB,
    1 phase at 4 KiB, 2 at 8 KiB."""
    return [t for p in (2, 4) for t in (
        _trace("segmented_ring", 5, p, 1.0, 1024, phases), _trace("ring", 4, p, 2.0),
        _trace("recursive_doubling", 3, p, 3.0))]


def test_the_one_phase_cells_are_labelled_and_noted() -> None:
    traces = _traces()
    best = cr.best_algorithms(traces).set_index(["P", "bytes"])["best"]
    assert best[(2, 2048)] == ONE
    assert best[(4, 4096)] == ONE
    assert best[(2, 4096)] == best[(4, 8192)] == "segmented_ring/seg1024"
    assert best[(2, 1024)] == best[(4, 2048)] == "ring"  # the plain ring ran: merged
    assert sum(ONE in str(b) for b in best) == 2
    notes = cr.build(traces).notes
    assert any(n.startswith("allreduce at P = 2: the forced segmented_ring/seg1024 ran in 1 "
                            "phase at 2048 B (") for n in notes)
    assert any(n.startswith("allreduce at P = 4: the forced segmented_ring/seg1024 ran in 1 "
                            "phase at 4096 B (") for n in notes)
    assert not any(ran.NOT_RECORDED in n for n in notes)
    curves = cr.curves(traces)
    mine = curves[(curves["algorithm"] == "segmented_ring/seg1024") & (curves["P"] == 2)]
    assert list(mine["segment_phases"]) == ["", "1", "2", "4"]
    assert set(curves[curves["algorithm"] == "ring"]["segment_phases"]) == {""}


def test_the_rules_file_names_the_one_phase_sizes() -> None:
    traces = _traces()
    ((op, text),) = cr.ompi_rules_files(traces)
    assert op == "allreduce"
    lines = [line for line in text.splitlines() if " 5 0 1024 " in line]
    assert len(lines) == 2, text  # one segmented rule per communicator size
    assert lines[0].endswith("; 1 phase: ran as the plain ring at 2048 B")
    assert lines[1].endswith("; 1 phase: ran as the plain ring at 4096 B")
    assert rule_with_segment(text, 2, 2048) == rule_with_segment(text, 4, 8192) == (5, 1024)
    assert rule_with_segment(text, 4, 2048) == (4, 0)  # the plain ring that ran there


def test_decide_runs_carry_the_label_and_the_rules_still_parse_it() -> None:
    from ksptrace.studies.decisions.grouping import build_studies

    traces = _traces()
    runs = [r for t in traces for r in cr.decision_runs(t)]
    numbers = {(r.attrs["nprocs"], r.attrs["bytes"], r.attrs["algorithm"]) for r in runs
               if str(r.attrs["algorithm"]).startswith("5/")}
    assert (2, 2048, "5/seg1024 (1 phase: ran as the plain ring)") in numbers
    assert (2, 4096, "5/seg1024") in numbers
    for method in ("algorithm", "algorithm_name"):
        [study] = build_studies(runs, ("nprocs", "bytes"), method).studies
        text = ompi_rules(study.chosen.tree, "allreduce", {
            "recursive_doubling": 3, "ring": 4, "segmented_ring": 5})
        assert rule_with_segment(text, 2, 2048) == (5, 1024), method
        assert "1 phase: ran as the plain ring at 2048 B" in text, method


def test_a_trace_without_phases_reads_as_before_with_a_note() -> None:
    traces = _traces(phases=False)
    best = cr.best_algorithms(traces).set_index(["P", "bytes"])["best"]
    assert best[(2, 2048)] == best[(4, 4096)] == "segmented_ring/seg1024"
    assert not any("(1 phase" in str(b) for b in best)
    notes = cr.build(traces).notes
    assert ("allreduce at P = 2: segmented_ring/seg1024 at 2048-8192 B: phases not recorded "
            "(a trace written before segment_phases existed), so a size where it ran in 1 "
            "phase, as the plain ring, is not marked") in notes
    assert any(n.startswith("allreduce at P = 4: segmented_ring/seg1024 at 4096-8192 B: phases "
                            "not recorded") for n in notes)
    curves = cr.curves(traces)
    mine = curves[curves["algorithm"] == "segmented_ring/seg1024"]
    assert list(mine[mine["P"] == 2]["segment_phases"]) == ["", ran.NOT_RECORDED,
                                                             ran.NOT_RECORDED, ran.NOT_RECORDED]
    runs = [r for t in traces for r in cr.decision_runs(t)]
    assert {r.attrs["algorithm"] for r in runs if str(r.attrs["algorithm"]).startswith("5/")} \
        == {"5/seg1024"}
    ((_, text),) = cr.ompi_rules_files(traces)
    assert "phases not recorded at 2048 B, 4096 B, 8192 B" in text


def test_a_damaged_phase_attribute_is_not_recorded_and_a_note_cannot_break_a_rule() -> None:
    t = _trace("segmented_ring", 5, 2, 1.0, 1024)
    for raw in ("not json", "[1, 2]", '{"2048": "x", "4096": 1e999}'):
        object.__setattr__(t, "attrs", {**t.attrs, "segment_phases": raw})
        assert ran.labels(t, "segmented_ring/seg1024")[1] == "segmented_ring/seg1024"
    hostile = "segmented_ring/seg1024 (x\n2 4 0 0 # forged)"
    traces = [_trace("ring", 4, p, 2.0) for p in (2, 4)]
    from ksptrace.studies.decisions.grouping import Run, build_studies

    runs = [Run({**r.attrs, "algorithm_name": hostile}, r.seconds) if r.attrs["bytes"] == 2048
            else r for t in traces for r in cr.decision_runs(t)]

    [study] = build_studies(runs, ("nprocs", "bytes"), "algorithm_name").studies
    text = ompi_rules(study.chosen.tree, "allreduce", {"ring": 4, "segmented_ring": 5})
    assert rule_with_segment(text, 2, 2048) == (5, 1024)
    assert all(line.count("#") == 1 for line in text.splitlines())
    assert len([line for line in text.splitlines() if line.startswith("2 4 0 0")]) == 0
