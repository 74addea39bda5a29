"""Segmentation over process counts: where the scaling behaviour of a metric changes (PMNF fits,
smooth laws, load-aware undisturbed time), and its report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ksptrace.studies.public import lazy

if TYPE_CHECKING:
    from ksptrace.studies.segmentation.extrap_export import (
        ExtrapSeries,
        group_repetitions,
        to_extrap_text,
    )
    from ksptrace.studies.segmentation.segment import SegmentationParams
    from ksptrace.studies.segmentation.series import SeriesReport, analyse, collect, to_json

PUBLIC: dict[str, tuple[str, str]] = {
    "analyse": ("series", "analyse"),
    "collect": ("series", "collect"),
    "ExtrapSeries": ("extrap_export", "ExtrapSeries"),
    "group_repetitions": ("extrap_export", "group_repetitions"),
    "SegmentationParams": ("segment", "SegmentationParams"),
    "SeriesReport": ("series", "SeriesReport"),
    "to_extrap_text": ("extrap_export", "to_extrap_text"),
    "to_json": ("series", "to_json"),
}
"""The public surface: what the report may use (an import-linter contract checks it),
name -> (module, name there), imported when first asked for."""

__all__ = ["ExtrapSeries", "SegmentationParams", "SeriesReport", "analyse", "collect",
    "group_repetitions", "to_extrap_text", "to_json"]
__getattr__ = lazy(__name__, PUBLIC)
