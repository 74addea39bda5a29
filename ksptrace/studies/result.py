"""What a study gives the report: the one protocol between the studies and ``ksptrace.report``.

A study over analysed runs returns a :class:`StudyResult`: the questions it answers, its
findings as sentences (numbers and caveats included), its tables (each written as
``<name>.csv`` and listed in summary.json), its figures as PNG bytes, notes that say why
something is missing, and its own part of summary.json. Each part says where it is shown
(:attr:`Part.place`). The report renders every result the same way and knows nothing else of
a study, the variability study included. A study that has nothing to report over the given
runs returns None.

Shared by all studies (a declared shared module: see docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ksptrace.studies.table import Table


@dataclass(frozen=True)
class Figure:
    """A drawn figure: a stable key (file stem), a title, a caption and its PNG bytes."""

    key: str
    title: str
    caption: str
    png: bytes


ACROSS = "across"
""":attr:`Part.place` of a part shown on the page across configurations."""


@dataclass(frozen=True)
class Answer:
    """One of the report's questions and its answer in sentences (each with its numbers and
    caveats)."""

    key: str
    question: str
    sentences: tuple[str, ...]
    basis: str = "measured"
    """What the answer's numbers rest on: "measured", "held-out repetition", "same n/P at
    another P", "in-sample fit", "cannot tell" (summary.json's ``basis``)."""
    short: str = ""
    """The answer in one short sentence for the report's first screen (issue 63: about 250
    words for every answer together); "": the first of ``sentences``."""


@dataclass(frozen=True)
class Part:
    """A titled part of a study (one decision map, say); the only part may be untitled."""

    title: str = ""
    anchor: str = ""
    findings: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    """Shown, and written as CSV."""
    figures: tuple[Figure, ...] = ()
    unshown: tuple[Table, ...] = ()
    """Written as CSV only."""
    place: str = ""
    """Where the part is shown: "" on the study's own page, :data:`ACROSS` on the page across
    configurations, or an answer's key (under that answer on the main page)."""


@dataclass(frozen=True)
class Addendum:
    """Sentences a study adds to one of the report's answers (issue 52: the paired noise
    verdict answers Q2 on a machine too small for the natural comparison)."""

    key: str
    """The answer's key ("pipelined", ...)."""
    sentences: tuple[str, ...]
    basis: str
    """What these sentences rest on ("injected noise (paired blocks)")."""
    short: str = ""
    """The answer in one short sentence, when these sentences lead it (:attr:`Answer.short`)."""


@dataclass(frozen=True)
class StudyResult:
    """One study's answer over a set of runs."""

    key: str
    """The section's anchor."""
    title: str
    lead: str = ""
    """What the study does, in a sentence or two."""
    answers: tuple[Answer, ...] = ()
    """The report's questions this study answers, first on the main page."""
    findings: tuple[str, ...] = ()
    parts: tuple[Part, ...] = ()
    notes: tuple[str, ...] = ()
    """Why something is missing, or what was left out."""
    footer: str = ""
    """Where to go further (another command, say)."""
    first: bool = False
    """Shown before the per-run sections (a study of the runs themselves, like noise)."""
    summary: Mapping[str, Any] = field(default_factory=dict)
    """Keys added to summary.json."""
    addenda: tuple[Addendum, ...] = ()
    """Sentences added to the report's answers (:class:`Addendum`)."""
    short: str = ""
    """The study's answer in one short sentence for the main page's first screen; "": its
    first finding, or its lead."""

    @property
    def tables(self) -> tuple[Table, ...]:
        """Every table the study writes as CSV, in order."""
        return tuple(t for p in self.parts for t in (*p.tables, *p.unshown))

    def placed(self, place: str) -> tuple[Part, ...]:
        """The parts shown at ``place`` (:attr:`Part.place`)."""
        return tuple(p for p in self.parts if p.place == place)
