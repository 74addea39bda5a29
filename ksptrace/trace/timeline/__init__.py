"""A trace as a timeline: Chrome/Perfetto trace-event JSON, one track per rank grouped per node
(:mod:`.events` makes the events, :mod:`.stream` writes them in bounded memory)."""

from __future__ import annotations

from ksptrace.trace.timeline.stream import Written, write_timeline

__all__ = ["Written", "write_timeline"]
