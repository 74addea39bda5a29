"""Segmentation over process counts: where the scaling behaviour of a metric changes (PMNF fits,
smooth laws, load-aware undisturbed time), and its report."""

from ksptrace.studies.segmentation.extrap_export import (
    ExtrapSeries,
    group_repetitions,
    to_extrap_text,
)
from ksptrace.studies.segmentation.segment import SegmentationParams
from ksptrace.studies.segmentation.series import SeriesReport, analyse, collect, to_json

__all__ = ["ExtrapSeries", "SegmentationParams", "SeriesReport", "analyse", "collect",
           "group_repetitions", "to_extrap_text", "to_json"]
"""The public surface: what the report may use (an import-linter contract checks it)."""
