"""The collectives report on synthetic traces whose truth is known."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.studies.collectives import render
from ksptrace.studies.collectives import report as cr
from ksptrace.studies.collectives.models import allreduce_time
from ksptrace.studies.collectives.synthetic import allreduce_traces

ALPHA, BETA, GAMMA = 2e-6, 4e-10, 1e-10


@pytest.fixture(scope="module")
def report() -> cr.CollectivesReport:
    return cr.build(allreduce_traces(alpha=ALPHA, beta=BETA, gamma=GAMMA, noise=0.01,
                                     cores=4))


def test_best_algorithm_per_cell_is_the_models(report: cr.CollectivesReport) -> None:
    best = report.best
    assert len(best) == 3 * 18
    sizes = np.array([2 ** k for k in range(3, 21)])
    for p in (2, 4, 8):
        t = {a: allreduce_time(a, p, sizes, ALPHA, BETA, GAMMA)
             for a in ("ring", "recursive_doubling", "rabenseifner")}
        for j, m in enumerate(sizes):
            ranked = sorted(t, key=lambda a: t[a][j])
            if t[ranked[1]][j] / t[ranked[0]][j] < 1.05:
                continue  # closer than the noise can separate
            row = best[(best["P"] == p) & (best["bytes"] == m)].iloc[0]
            assert row["best"] == ranked[0], (p, m)
    assert bool(best[best["P"] == 8]["oversubscribed"].all())
    assert not bool(best[best["P"] == 4]["oversubscribed"].any())


def test_predictions_match_their_own_models(report: cr.CollectivesReport) -> None:
    preds = next(t for t in report.tables if t.name == "collectives_allreduce_models")
    ratio = preds.frame["measured_over_predicted"]
    assert len(ratio) == 3 * 3 * 18
    assert ratio.between(0.93, 1.07).all()
    assert "gamma=1e-10" in preds.notes[0]


def test_tables_and_markdown(report: cr.CollectivesReport) -> None:
    names = [t.name for t in report.tables]
    assert names == ["collectives_curves", "collectives_best", "collectives_models",
                     "collectives_allreduce_models", "collectives_ranks",
                     "collectives_segmentation"]
    fits = report.tables[2].frame
    assert set(fits["model"]) == {"hockney", "loggp", "plogp"}
    assert len(fits) == 27
    ranks = report.tables[4].frame
    assert set(ranks["best_fit"]) - {"(< 20 values)"}  # 8 ranks x 5 reps are fitted
    seg = report.tables[5].frame
    assert seg["result"].str.contains("need at least 6 distinct p").all()
    md = render.markdown(report)
    assert "| m (bytes) | P = 2 | P = 4 | P = 8 |" in md
    assert "*)" in md
    assert "P = 8 ran more ranks than cores" in md
    assert md.count("\n| ") == 19  # 18 sizes + header
    assert render.figures(report.tables[0].frame)[0][1][:4] == b"\x89PNG"


def test_overlap_achieved() -> None:
    from ksptrace.trace.collectives import CollectiveTrace

    shape = (2, 1, 4)
    t = CollectiveTrace(seconds=np.full(shape, 150e-6), message_bytes=np.array([1024]),
                        node_ids=np.zeros(2), hostnames=("h", "h"),
                        attrs={"operation": "iallreduce_overlap", "test_calls": 8},
                        comm_seconds=np.full(shape, 100e-6),
                        compute_seconds=np.full(shape, 100e-6))
    row = cr.curves([t]).iloc[0]
    assert row["overlap"] == pytest.approx(0.5)
    assert row["comm_alone_us"] == pytest.approx(100)
    assert row["algorithm"] == "default/test8"


def test_ompi_rules_decide_like_the_map() -> None:
    from ksptrace.studies.decisions.rules import decide_with_rules

    traces = allreduce_traces(alpha=ALPHA, beta=BETA, gamma=GAMMA, noise=0.01)
    for t, number in zip(traces, [4, 3, 6] * 3, strict=True):
        object.__setattr__(t, "attrs", {**t.attrs, "algorithm": number})
    ((op, text),) = cr.ompi_rules_files(traces)
    assert op == "allreduce"
    names = {4: "ring", 3: "recursive_doubling", 6: "rabenseifner"}
    best = cr.best_algorithms(traces)
    for row in best.itertuples():
        assert names[decide_with_rules(text, int(row.P), int(row.bytes))] == row.best


def test_one_rank_runs_are_not_modelled() -> None:
    traces = allreduce_traces(nprocs=(2, 4), alpha=ALPHA, beta=BETA, gamma=GAMMA)
    one = allreduce_traces(nprocs=(2,), algorithms=("recursive_doubling",))[0]
    single = type(one)(seconds=one.seconds[:1], message_bytes=one.message_bytes,
                       node_ids=one.node_ids[:1], hostnames=one.hostnames[:1],
                       attrs={**one.attrs, "nprocs": 1})
    frame, note = cr.allreduce_predictions([single, *traces])
    assert "at P=2" in note
    assert set(frame["P"]) == {2, 4}
    assert cr.build([single, *traces]).tables[0].frame["P"].min() == 1


def test_winners_within_the_noise_are_marked() -> None:
    # two algorithms with the same law (ring and Rabenseifner coincide at P = 2) cannot be
    # told apart; recursive doubling vs ring at P = 8, 8 B can (6 alpha apart)
    traces = allreduce_traces(nprocs=(2, 8), algorithms=("ring", "rabenseifner",
                                                         "recursive_doubling"),
                              sizes=(8, 1 << 20), repetitions=7, noise=0.05)
    best = cr.best_algorithms(traces).set_index(["P", "bytes"])
    assert best.loc[(8, 8), "p_value"] < 0.05
    assert best.loc[(2, 1 << 20), "p_value"] > 0.05  # ring vs rabenseifner: the same law
    table = render.markdown(cr.CollectivesReport((), best.reset_index(), ()))
    assert "~" in table.splitlines()[5]  # the 1 MiB row
    assert "~" not in table.splitlines()[4]  # the 8 B row


def _forced(name: str, number: int, ran: dict[int, str], us: dict[int, float],
            nprocs: int = 3) -> object:
    import json

    from ksptrace.trace.collectives import CollectiveTrace

    sizes = np.array(sorted(us))
    rng = np.random.default_rng(number)
    seconds = np.stack([np.full((nprocs, 5), us[m] * 1e-6)
                        * (1 + 0.01 * rng.random((nprocs, 5))) for m in sizes], axis=1)
    return CollectiveTrace(
        seconds=seconds, message_bytes=sizes, node_ids=np.zeros(nprocs),
        hostnames=("h",) * nprocs,
        attrs={"operation": "allreduce", "algorithm_name": name, "algorithm": number,
               "algorithm_ran": json.dumps({str(m): r for m, r in ran.items()})})


def test_two_labels_that_ran_the_same_code_are_merged() -> None:
    """At P = 3 a forced ring with 2 elements runs recursive doubling: in the best-algorithm
    table its runs count as recursive doubling (so ring cannot 'win' with that code), a note
    says so, and the rules file sends those sizes to recursive doubling's number."""
    from ksptrace.studies.decisions.rules import decide_with_rules

    traces = [t for p in (3, 4) for t in (
        _forced("ring", 4, {16: "recursive_doubling", 4096: "ring"}, {16: 10.0, 4096: 20.0}, p),
        _forced("recursive_doubling", 3, {16: "recursive_doubling", 4096: "recursive_doubling"},
                {16: 12.0, 4096: 30.0}, p))]
    best = cr.best_algorithms(traces)  # type: ignore[arg-type]
    for p in (3, 4):
        small = best[(best["bytes"] == 16) & (best["P"] == p)].iloc[0]
        large = best[(best["bytes"] == 4096) & (best["P"] == p)].iloc[0]
        assert small["best"] == "recursive_doubling"
        assert small["runner_up"] != "ring"  # one algorithm ran there, under two names
        assert (large["best"], large["runner_up"]) == ("ring", "recursive_doubling")
    report = cr.build(traces)  # type: ignore[arg-type]
    assert any("at P = 3: the forced ring ran recursive_doubling at 16 B (" in n
               for n in report.notes)
    ((_, text),) = cr.ompi_rules_files(traces)  # type: ignore[arg-type]
    assert decide_with_rules(text, 3, 16) == 3
    assert decide_with_rules(text, 4, 4096) == 4


def test_back_to_back_never_takes_a_per_call_cell() -> None:
    """Issue 66: at P = 2, recursive_doubling/back-to-back beat per-call recursive_doubling at
    8 B and 32 B-1 KiB and the rules file took those cells, although the docs say never."""
    from ksptrace.studies.decisions.grouping import build_studies
    from ksptrace.studies.decisions.rules import decide_with_rules

    us_ring, us_rd, us_b2b = {8: 12.0, 4096: 20.0}, {8: 10.0, 4096: 30.0}, {8: 3.0, 4096: 8.0}
    traces = [t for p in (2, 4) for t in (
        _forced("ring", 4, {8: "ring", 4096: "ring"}, us_ring, p),
        _forced("recursive_doubling", 3, {8: "recursive_doubling", 4096: "recursive_doubling"},
                us_rd, p))]
    for p in (2, 4):
        back = _forced("recursive_doubling", 3,
                       {8: "recursive_doubling", 4096: "recursive_doubling"}, us_b2b, p)
        object.__setattr__(back, "attrs", {**back.attrs, "timing_mode": "back-to-back",
                                           "calls_per_repetition": 100})
        traces.append(back)
    best = cr.best_algorithms(traces)  # type: ignore[arg-type]
    per_call = best[best["op"] == "allreduce"]
    assert len(per_call) == 4
    assert not per_call["best"].str.contains("back-to-back").any()
    assert not per_call["runner_up"].str.contains("back-to-back").any()
    assert set(per_call[per_call["bytes"] == 4096]["best"]) == {"ring"}
    assert set(per_call[per_call["bytes"] == 8]["best"]) == {"recursive_doubling"}
    own = best[best["op"] == "allreduce (back-to-back)"]
    assert set(own["best"]) == {"recursive_doubling/back-to-back"}
    ((_, text),) = cr.ompi_rules_files(traces)  # type: ignore[arg-type]
    assert [decide_with_rules(text, p, 4096) for p in (2, 4)] == [4, 4]  # ring, per call
    runs = [r for t in traces for r in cr.decision_runs(t)]  # type: ignore[arg-type]
    studies = build_studies(runs, ("nprocs", "bytes"), "algorithm_name")
    [study] = studies.studies  # per call; back-to-back alone is a group of its own
    assert sorted(study.dm.methods) == ["recursive_doubling", "ring"]
    assert any(n.startswith("problem=allreduce (back-to-back): no decision map")
               for n in studies.notes)


def test_what_ran_notes_name_runs_of_measured_sizes() -> None:
    """Issue 66: "ring at 4-4 B", and two algorithms' ranges that overlapped where a default
    alternated between them."""
    from ksptrace.studies.collectives import ran

    sizes = {4: 1.0, 8: 1.0, 16: 1.0, 64: 1.0, 1024: 1.0}
    t = _forced("default", 0, {4: "ring", 8: "recursive_doubling", 16: "recursive_doubling",
                               64: "ring", 1024: "ring"}, sizes, 2)
    object.__setattr__(t, "attrs", {**t.attrs, "algorithm_name": "default"})
    notes = ran.merge_notes([t])  # type: ignore[list-item]
    assert notes == [
        "allreduce at P = 2: the default (the library's own choice) ran recursive_doubling at "
        "8-16 B; those runs are counted as recursive_doubling",
        "allreduce at P = 2: the default (the library's own choice) ran ring at 4 B, "
        "64-1024 B; those runs are counted as ring"]


@pytest.mark.parametrize("wtick", [None, 1e-6])
def test_plogp_interval_half_widths_are_never_finer_than_the_clock(wtick: float | None) -> None:
    """Issue 66: half-widths of 1e-05 % were shown, finer than the clock can tell."""
    from ksptrace.studies.collectives.p2p_table import plogp_tables
    from ksptrace.trace.collectives import CollectiveTrace

    sizes = np.array([1 << k for k in range(12)], dtype=np.int64)
    base = 1e-6 + sizes * 1e-10  # identical values in every round: a zero-width interval
    seconds = np.broadcast_to(base[None, :, None], (2, sizes.size, 9)).copy()
    parts = {"send_overhead_seconds": seconds * 0.2, "recv_overhead_seconds": seconds * 0.3,
             "gap_seconds": seconds * 0.5}
    attrs: dict[str, object] = {"operation": "plogp", "algorithm_name": "default"}
    if wtick is not None:
        attrs["wtick"] = wtick
    t = CollectiveTrace(seconds=seconds, message_bytes=sizes, node_ids=np.array([0, 0]),
                        hostnames=("h", "h"), attrs=attrs, parts=parts)  # type: ignore[arg-type]
    [table] = [x for x in plogp_tables([t]) if x.name == "collectives_plogp"]
    tick = wtick or 1e-9
    ci = table.frame["rtt_half_ci_pct"].to_numpy()
    assert np.allclose(ci, tick / 2 / base * 100)
    assert any(f"clock's tick ({tick:.3g} s" in n for n in table.notes)


def test_each_curve_keeps_its_colour_and_name_in_every_panel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 66: the P = 2 back-to-back curve was named segmented_ring/seg1024 by the one
    legend (of the last panel), as each panel coloured its curves in its own order."""
    from ksptrace.studies import drawing

    traces = allreduce_traces(nprocs=(2, 4), algorithms=("ring", "recursive_doubling"))
    back = allreduce_traces(nprocs=(2,), algorithms=("rabenseifner",), seed=3)[0]
    object.__setattr__(back, "attrs", {**back.attrs, "timing_mode": "back-to-back",
                                       "calls_per_repetition": 10})
    frame = cr.curves([*traces, back])
    drawn: list[object] = []
    monkeypatch.setattr(drawing, "to_png", lambda fig: drawn.append(fig) or b"png")
    render.figures(frame)
    [fig] = drawn
    colour: dict[str, object] = {}
    for ax in fig.axes:  # type: ignore[attr-defined]
        for line in ax.get_lines():
            colour.setdefault(line.get_label(), line.get_color())
            assert colour[line.get_label()] == line.get_color(), line.get_label()
    top = [ax for ax in fig.axes if ax.get_title().startswith("P = ")]  # type: ignore[attr-defined]
    for ax in top:
        shown = {t.get_text() for t in ax.get_legend().get_texts()}
        assert shown == {line.get_label() for line in ax.get_lines()}
    assert "rabenseifner/back-to-back" in colour


def test_the_steps_table_shows_rtt_and_what_chose_each_break() -> None:
    """Issue 66: a switch showed "no step" in every column: RTT/2, which chooses the breaks
    too, had no column, and what chose the break was not shown."""
    from ksptrace.collectives.params import message_sizes
    from ksptrace.studies.collectives.p2p_table import plogp_tables
    from ksptrace.trace.collectives import CollectiveTrace

    sizes = np.array(message_sizes("plogp", 1, 64 * 1024, 4), dtype=np.int64)
    rng = np.random.default_rng(5)
    smooth = 1e-6 + sizes * 1e-10
    rtt = smooth * np.where(sizes > 4096, 1.6, 1.0)  # only RTT/2 steps, at the eager limit

    def noisy(v: np.ndarray) -> np.ndarray:
        return v[None, :, None] * rng.lognormal(0.0, 0.01, (2, sizes.size, 20))

    t = CollectiveTrace(seconds=noisy(rtt), message_bytes=sizes, node_ids=np.array([0, 0]),
                        hostnames=("h", "h"), attrs={"operation": "plogp", "wtick": 1e-9},
                        parts={"send_overhead_seconds": noisy(0.2 * smooth),
                               "recv_overhead_seconds": noisy(0.3 * smooth),
                               "gap_seconds": noisy(0.5 * smooth)})
    [steps] = [x for x in plogp_tables([t]) if x.name == "collectives_plogp_steps"]
    assert "RTT/2" in steps.display.columns
    row = steps.frame[steps.frame["to_bytes"] > 4096].iloc[0]
    assert row["from_bytes"] == 4096
    assert row["RTT/2_steps"]
    assert not row["o_s_steps"]
    assert not row["g_steps"]
    assert "RTT/2" in str(steps.display[steps.frame["to_bytes"] > 4096]["chosen by"].iloc[0])
