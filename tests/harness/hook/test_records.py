"""The hook's raw records read back and assembled into traces (pure: bytes in, traces out)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ksptrace.errors import TraceError
from ksptrace.harness.hook import records
from ksptrace.harness.hook.assemble import assemble


def header(rank: int, size: int, host: str = "node0") -> bytes:
    raw = bytearray(records.HEADER_BYTES)
    struct.pack_into("<8i", raw, 0, records.MAGIC, records.VERSION, rank, size, 100 + rank, 4,
                     8, 1)
    raw[32:32 + len(host)] = host.encode()
    raw[288:300] = b"Petsc 3.18.5"
    return bytes(raw)


def solve(ksp: int, stamps: list[float], norms: list[float], *, depth: int = 1,
          comm: int = 2, prefix: str = "", setup: float = 0.01) -> bytes:
    names = bytearray(4 * records.NAME)
    names[0:5] = b"gmres"
    names[64:71] = b"bjacobi"
    names[128:128 + len(prefix)] = prefix.encode()
    names[192:206] = b"CONVERGED_RTOL"
    head = struct.pack("<8i4q4d", records.KIND_SOLVE, ksp, depth, 0, comm, 2, 0, 0,
                       len(stamps) - 1, len(stamps), 0, 400, stamps[0] - 0.02,
                       stamps[-1] + 0.001, setup, 0.0)
    return head + bytes(names) + np.array(stamps).tobytes() + np.array(norms).tobytes()


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
