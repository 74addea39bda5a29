"""The metrics of a segmentation report."""

from __future__ import annotations


def test_the_metric_names_the_command_line_offers_are_the_computed_ones() -> None:
    from ksptrace.studies.segmentation.choices import METRIC_NAMES
    from ksptrace.studies.segmentation.series import METRICS

    assert tuple(m[0] for m in METRICS) == METRIC_NAMES
