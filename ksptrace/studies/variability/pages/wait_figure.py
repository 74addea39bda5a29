"""The run page's figure of waits in MPI reductions (issue 65), with the numbers its caption
states: the wait share, the rank that waited most, and the split of the iteration times'
variance into the ranks' own work and their waits."""

from __future__ import annotations

from ksptrace.studies.variability.pages import figures
from ksptrace.studies.variability.pages.collector import Collector
from ksptrace.trace.model import Trace
from ksptrace.trace.waits import variance_split, wait_share


def wait_caption(trace: Trace) -> str | None:
    """The caption of the wait heat map of ``trace``; None when it has no wait times."""
    share, split = wait_share(trace), variance_split(trace)
    if share is None:
        return None
    text = (f"Time each rank spent inside the solve's MPI reductions in each iteration "
            f"(wait_seconds: the blocking reductions, and the completion of non-blocking "
            f"ones), ranks p (x) and iterations k (y); colours from 0 to the 99th percentile, "
            f"block maxima over large traces. The ranks waited {100 * share.share:.1f} % of "
            f"their iteration time; rank {share.most_waiting_rank} most, "
            f"{100 * float(share.per_rank.max()):.1f} %; a median of "
            f"{share.reductions_per_iteration:g} reductions per iteration.")
    if split is not None:
        text += (f" Of the variance of Tₚᵏ, the ranks' own work (Tₚᵏ minus the wait) makes "
                 f"{100 * split.own:.1f} %, the waits {100 * split.wait:.1f} % and twice their "
                 f"covariance {100 * split.covariance:+.1f} %.")
    return text


def add_wait_map(out: Collector, trace: Trace) -> None:
    """The wait heat map, for a trace with wait times (nothing otherwise)."""
    caption = wait_caption(trace)
    if caption is None or trace.wait_seconds is None:
        out.omitted.append("no wait times in this trace (recorded before them, or with "
                           "KSPTRACE_MPI_WAITS=off): no wait heat map")
        return
    out.add("wait-map", "Waits in MPI reductions", caption, figures.wait_map(trace.wait_seconds))
