"""The segment-size table (issue 32): segmented-ring runs at several --segment-bytes, the
model fitted to them, the measured best segment and the model's optimum, counting only the
sizes where the segmented ring ran."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ksptrace.collectives.fallbacks import ran_per_size
from ksptrace.studies.collectives.report import build
from ksptrace.studies.collectives.segment_table import segment_table
from ksptrace.studies.collectives.segmented import Hockney, segmented_ring_hockney
from ksptrace.trace.collectives import CollectiveTrace

TRUE = Hockney(alpha=3e-6, beta=4e-10, gamma=1e-10)
SIZES = tuple(1 << k for k in range(10, 21))  # 1 KiB .. 1 MiB
SEGMENTS = (1024, 8192, 65536)


def _traces(noise: float, nprocs: tuple[int, ...] = (2, 3, 4, 8)) -> list[CollectiveTrace]:
    rng = np.random.default_rng(7)
    out = []
    for p in nprocs:
        for seg in SEGMENTS:
            ran = ran_per_size("openmpi", "allreduce", "segmented_ring", SIZES, p, seg)
            base = np.array([segmented_ring_hockney(TRUE, max(p, 3), m, min(seg, m))
                             for m in SIZES])  # P = 2: any positive times
            seconds = base[None, :, None] * (1 + noise * rng.standard_normal((p, len(SIZES), 5)))
            out.append(CollectiveTrace(
                seconds=np.abs(seconds), message_bytes=np.array(SIZES),
                node_ids=np.zeros(p, np.int64), hostnames=("h",) * p,
                attrs={"operation": "allreduce", "algorithm_name": "segmented_ring",
                       "algorithm": 5, "segment_bytes": seg,
                       "algorithm_ran": json.dumps({str(k): v for k, v in ran.items()})}))
    return out


@pytest.mark.parametrize("noise", [0.0, 0.02])
def test_measured_best_and_model_optimum(noise: float) -> None:
    table = segment_table(_traces(noise))
    assert table is not None
    frame = table.frame
    # only cells where the segmented ring ran: 1 KiB at P = 8 with 1 KiB segments did not
    assert not ((frame["P"] == 8) & (frame["bytes"] == 1024)).any()
    big = frame[(frame["P"] == 8) & (frame["bytes"] == 1 << 20)].iloc[0]
    truth = {s: segmented_ring_hockney(TRUE, 8, 1 << 20, s) for s in SEGMENTS}
    assert big["best_measured"] == min(truth, key=truth.__getitem__)
    assert big["model_at_measured_best_us"] == pytest.approx(big["best_us"], rel=0.02 + noise)
    assert "alpha = 3 us" in table.notes[0] or noise > 0
    two = frame[frame["P"] == 2]
    assert not two.empty
    assert two["model_at_measured_best_us"].isna().all()


def test_no_table_without_two_segment_sizes() -> None:
    one = [t for t in _traces(0.0) if t.attrs["segment_bytes"] == 8192]
    assert segment_table(one) is None
    assert "collectives_segments" in [t.name for t in build(_traces(0.0)).tables]


def test_the_page_shows_three_digits_and_whole_byte_sizes() -> None:
    from ksptrace.studies.table import significant

    table = segment_table(_traces(0.02))
    assert table is not None
    assert table.display is not None
    shown = table.display.iloc[-1]
    assert shown["bytes"] == "1048576"
    assert "e" not in shown["best_us"]
    assert significant(1203.4) == "1203"
    assert significant(float("nan")) == ""
    assert significant(65536.0) == "65536"
    assert significant(0.123456) == "0.123"
