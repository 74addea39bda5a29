"""The hook's raw records read back and assembled into traces (pure: bytes in, traces out)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ksptrace.errors import TraceError
from ksptrace.harness.hook import records
from ksptrace.harness.hook.assemble import assemble, wait_attributes
from ksptrace.harness.monitoring.mpiwait import ACCOUNTING


def header(rank: int, size: int, host: str = "node0") -> bytes:
    raw = bytearray(records.HEADER_BYTES)
    struct.pack_into("<8i", raw, 0, records.MAGIC, records.VERSION, rank, size, 100 + rank, 4,
                     8, 1)
    raw[32:32 + len(host)] = host.encode()
    raw[288:300] = b"Petsc 3.18.5"
    return bytes(raw)


def solve(ksp: int, stamps: list[float], norms: list[float], *, depth: int = 1,
          comm: int = 2, prefix: str = "", setup: float = 0.01,
          marks: list[list[float]] | None = None) -> bytes:
    names = bytearray(4 * records.NAME)
    names[0:5] = b"gmres"
    names[64:71] = b"bjacobi"
    names[128:128 + len(prefix)] = prefix.encode()
    names[192:206] = b"CONVERGED_RTOL"
    head = struct.pack("<8i4q4d", records.KIND_SOLVE, ksp, depth, 0, comm, 2, 0,
                       marks is not None, len(stamps) - 1, len(stamps), 0, 400,
                       stamps[0] - 0.02, stamps[-1] + 0.001, setup, 0.0)
    tail = b"" if marks is None else np.array(marks, dtype=np.float64).tobytes()
    return head + bytes(names) + np.array(stamps).tobytes() + np.array(norms).tobytes() + tail


def waits(status: int = 1, entries: tuple[tuple[str, float, float], ...] = (
        ("MPI_Allreduce", 0.25, 10.0), ("MPI_Iallreduce", 0.0, 0.0))) -> bytes:
    """The hook's wait accounting record: ``entries`` (name, seconds, calls) rewritten."""
    values = np.zeros(2 * records.WAIT_ENTRIES)
    names = bytearray(records.WAIT_ENTRIES * records.WAIT_NAME)
    for e, (name, seconds, calls) in enumerate(entries):
        values[2 * e: 2 * e + 2] = seconds, calls
        names[e * records.WAIT_NAME:e * records.WAIT_NAME + len(name)] = name.encode()
    count = len(entries) if status == 1 else 0
    patched = (1 << count) - 1
    return (struct.pack("<4i", records.KIND_WAITS, status, patched, count) + values.tobytes()
            + bytes(names))


def skipped(ksp: int, count: int, depth: int, prefix: str) -> bytes:
    names = bytearray(2 * records.NAME)
    names[0:7] = b"preonly"
    names[64:64 + len(prefix)] = prefix.encode()
    return struct.pack("<8iq", records.KIND_KSP, ksp, 1, depth, 0, 0, 0, 0, count) + bytes(names)


END = struct.pack("<i", records.KIND_END)


def rank_file(rank: int, size: int = 2) -> records.RankFile:
    body = (header(rank, size) + solve(0, [1.0, 1.1, 1.3], [9.0, 1.0, 0.1])
            + solve(0, [2.0, 2.2], [5.0, 0.5]) + skipped(-1, 7, 2, "sub_") + END)
    return records.parse(body, f"rank-{rank}")


def test_two_ranks_solves_become_one_trace_of_two_solves() -> None:
    got = assemble([rank_file(1), rank_file(0)], {"problem": "app"})
    ((name, t),) = got.traces
    assert name == ""
    assert t.solves is not None
    assert t.solves.iterations.tolist() == [2, 1]
    assert t.solves.reasons == ("CONVERGED_RTOL", "CONVERGED_RTOL")
    np.testing.assert_allclose(t.residual_norms, [9.0, 1.0, 0.1, 5.0, 0.5])
    # KSPSolve time less the set-up inside it: (1.3 + 0.001 - 0.98) - 0.01
    np.testing.assert_allclose(t.solves.seconds[:, 0], [0.311, 0.311])
    assert t.attrs["setup_seconds"] == pytest.approx(0.02)
    assert t.attrs["n"] == 400
    assert got.left_out == ("7 nested solves of KSP preonly (prefix sub_) at depth 2",)
    assert t.attrs["solves_left_out"] == got.left_out[0]  # named in the trace too


def test_a_file_cut_short_is_incomplete_not_misread() -> None:
    whole = header(0, 1) + solve(0, [1.0, 1.1], [2.0, 1.0], comm=1) + END
    assert records.parse(whole).complete
    cut = records.parse(whole[:-30])
    assert not cut.complete
    assert cut.solves == ()


def test_a_foreign_file_is_one_error() -> None:
    with pytest.raises(TraceError, match="not a file of this ksptrace's solve hook"):
        records.parse(b"\0" * records.HEADER_BYTES, "x.bin")


def test_a_missing_rank_is_one_error() -> None:
    with pytest.raises(TraceError, match="a rank did not record"):
        assemble([rank_file(1)], {})


def test_ranks_that_disagree_on_iterations_are_one_error() -> None:
    other = records.parse(header(1, 2) + solve(0, [1.0, 1.1], [9.0, 1.0])
                          + solve(0, [2.0, 2.2], [5.0, 0.5]) + END)
    with pytest.raises(TraceError, match="different solves"):
        assemble([rank_file(0), other], {})


def test_left_out_ksps_of_one_prefix_are_one_line() -> None:
    body = (header(0, 1) + solve(0, [1.0, 1.1], [2.0, 1.0], comm=1)
            + skipped(-1, 1, 2, "pc_gamg_esteig_") + skipped(-1, 1, 2, "pc_gamg_esteig_")
            + skipped(-1, 64, 2, "mg_levels_1_") + END)
    got = assemble([records.parse(body)], {})
    assert got.left_out == ("64 nested solves of KSP preonly (prefix mg_levels_1_) at depth 2",
                            "2 nested solves of KSP preonly (prefix pc_gamg_esteig_) (2 KSPs) "
                            "at depth 2")


def test_two_programs_in_one_command_are_one_error() -> None:
    with pytest.raises(TraceError, match="several PETSc programs ran"):
        assemble([rank_file(0, 1), rank_file(0, 1)], {})


def marked_file(rank: int, status: int = 1, second: list[list[float]] | None = None
                ) -> records.RankFile:
    """Two solves with the wait totals at each stamp: waits 0.05, 0.1 | 0.1 and two
    reductions per iteration."""
    second = [[0.2, 5.0], [0.3, 7.0]] if second is None else second
    body = (header(rank, 2) + solve(0, [1.0, 1.1, 1.3], [9.0, 1.0, 0.1],
                                    marks=[[0.0, 0.0], [0.05, 2.0], [0.15, 4.0]])
            + solve(0, [2.0, 2.2], [5.0, 0.5], marks=second if second else None)
            + waits(status) + END)
    return records.parse(body, f"rank-{rank}")


def test_the_wait_totals_at_each_stamp_become_each_iterations_wait() -> None:
    files = [marked_file(0), marked_file(1)]
    assert files[0].waits is not None
    assert files[0].waits.installed
    assert files[0].waits.entry_points == ("MPI_Allreduce", "MPI_Iallreduce")
    attrs = wait_attributes(files, None)
    assert attrs == {"wait_accounting": ACCOUNTING,
                     "wait_entry_points": "MPI_Allreduce,MPI_Iallreduce",
                     "wait_by_entry": "MPI_Allreduce 20 calls 0.5 s"}  # summed over ranks
    ((_, t),) = assemble(files, attrs).traces
    assert t.wait_seconds is not None
    assert t.mpi_calls is not None
    # the gap between the two solves is left out, as in the iteration times
    np.testing.assert_allclose(t.wait_seconds, [[0.05, 0.1, 0.1]] * 2)
    assert t.mpi_calls.tolist() == [[2, 2, 2]] * 2
    assert t.attrs["wait_accounting"] == ACCOUNTING


def test_without_every_solves_totals_a_trace_has_no_waits_and_says_why() -> None:
    files = [marked_file(0), marked_file(1, second=[])]  # rank 1's second solve: no marks
    ((_, t),) = assemble(files, wait_attributes(files, None)).traces
    assert t.wait_seconds is None
    assert t.mpi_calls is None
    assert str(t.attrs["wait_accounting"]).startswith("none (a solve's wait totals")


def test_a_rank_without_the_interposer_turns_the_waits_off_with_its_reason() -> None:
    files = [marked_file(0), marked_file(1, status=-3)]
    assert files[1].waits is not None
    assert not files[1].waits.installed
    assert wait_attributes(files, None) == {
        "wait_accounting": "none (rank 1: the interposer could not be loaded)"}
    assert wait_attributes(files, "KSPTRACE_MPI_WAITS=off") == {
        "wait_accounting": "none (KSPTRACE_MPI_WAITS=off)"}
    assert rank_file(0).waits is None  # a file without the record (cut short before it)


def test_event_spans_become_each_iterations_event_times() -> None:
    """``trace --events``: each process's spans, summed into the iterations of the trace's
    solves (the gap between the solves left out)."""
    spans = np.array([[1.05, 1.07, 0], [1.08, 1.09, 1], [1.2, 1.25, 2], [1.5, 1.6, 0],
                      [2.1, 2.15, 2]])
    head = struct.pack("<2iqd", records.KIND_SPANS, 0, len(spans), 0.0)
    files = []
    for rank in (0, 1):
        body = (header(rank, 2) + solve(0, [1.0, 1.1, 1.3], [9.0, 1.0, 0.1],
                                        marks=[[0.0, 0.0], [0.05, 2.0], [0.15, 4.0]])
                + solve(0, [2.0, 2.2], [5.0, 0.5], marks=[[0.2, 5.0], [0.3, 7.0]])
                + waits(entries=(("MPI_Allreduce", 0.25, 10.0), ("MatMult", 0.0, 0.0)))
                + head + spans.tobytes() + END)
        files.append(records.parse(body, f"rank-{rank}"))
    assert files[0].waits is not None
    assert files[0].waits.events == ("MatMult",)
    assert files[0].waits.entry_points == ("MPI_Allreduce",)  # the MPI ones only
    attrs = wait_attributes(files, None)
    assert attrs["events"] is True
    assert attrs["event_functions"] == "MatMult"
    ((_, t),) = assemble(files, attrs).traces
    assert t.event_seconds is not None
    expected = [[0.02, 0.01, 0.0], [0.0, 0.0, 0.05], [0.0, 0.0, 0.05]]  # 1.5: between solves
    np.testing.assert_allclose(t.event_seconds, [expected] * 2, atol=1e-12)
