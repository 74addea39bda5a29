"""The engine finds the verified maxima of maxima.json (issue 51): on the four golden traces and
six varied ones (K 200-5000, P 1-4), each default family's status and, for an ok fit, its
objective within 1e-6 relative of the least that the engine and a strong multi-start search
found when the file was written. Run on another scipy or numpy (the PyPI stack) this is the
check that the engine's fits agree across stacks."""

from __future__ import annotations

import json
import re

import pytest

from ksptrace.studies.fits import Binned, family, fit_family
from tests.studies.fits.maxima import FILE, samples

MAXIMA = json.loads(FILE.read_text())


@pytest.fixture(scope="module")
def data() -> dict[str, Binned]:
    return samples()


def test_the_fixture_covers_the_golden_traces_and_the_sizes() -> None:
    assert len(MAXIMA) == 10
    found = (re.search(r"-p(\d+)-k(\d+)$", t) for t in MAXIMA)
    sizes = {(int(m.group(1)), int(m.group(2))) for m in found if m is not None}
    assert {p for p, _ in sizes} == {1, 2, 3, 4}
    assert min(k for _, k in sizes) == 200
    assert max(k for _, k in sizes) == 5000
    for trace, fits in MAXIMA.items():
        for name, want in fits.items():
            if want["status"] == "ok":  # the strong search found nothing better by 0.01 nats
                assert want["strong"] >= want["engine"] - 0.01, (trace, name)


@pytest.mark.parametrize("trace", sorted(MAXIMA))
def test_the_engine_finds_the_verified_maxima(trace: str, data: dict[str, Binned]) -> None:
    for name, want in MAXIMA[trace].items():
        fit = fit_family(family(name), data[trace])
        assert fit.status == want["status"], (name, fit.reason)
        if fit.status == "ok":
            assert fit.objective == pytest.approx(want["best"], rel=1e-6), name
