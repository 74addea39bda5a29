"""The segmentation study's choices the command line offers, in a module that imports nothing
heavy (``ksptrace segment --help`` must not wait for numpy)."""

from __future__ import annotations

METRIC_NAMES = ("undisturbed_time", "solve_time", "mean_iteration_time", "johnsonsu_loc_ak")
"""The metrics a segmentation report can model, in the report's order (``series.METRICS``
holds how each is computed, in the same order)."""
