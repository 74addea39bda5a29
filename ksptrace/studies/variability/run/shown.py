"""A trace's attributes as an analysis keeps them for the report's pages and summary.json.

A text attribute is copied whole up to :data:`MAX_TEXT` characters; a longer one is cut, and
says how long it was and its digest, so that two long values still differ where they differ
(a configuration keyed by one stays apart). One oversized attribute (a 20 MB noise spec made a
77 MB report, issue 67) thus costs a page a few hundred bytes wherever it is named. The trace
file itself keeps the whole value; the analysis reads what it computes with from the trace."""

from __future__ import annotations

import hashlib

MAX_TEXT = 300
"""Characters of an attribute's name or text value copied whole into the report."""
KEPT = 160
"""Characters kept of a longer one, before its length and digest."""
MAX_NOTE = 2000
"""Characters of an analysis note (which may quote an attribute) copied whole."""


def capped(value: object, limit: int = MAX_TEXT) -> object:
    """``value``, or for text longer than ``limit`` its first :data:`KEPT` characters (at most
    ``limit``), its length and 12 hex digits of its sha256."""
    if not isinstance(value, str) or len(value) <= limit:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{value[:min(KEPT, limit)]}… ({len(value):,} characters, sha256 {digest})"


def capped_text(text: str, limit: int = MAX_TEXT) -> str:
    """:func:`capped` for text."""
    return str(capped(text, limit))


def shown_attrs(attrs: dict[str, object]) -> tuple[tuple[str, object], ...]:
    """The attributes, sorted by name, each name and value :func:`capped`."""
    return tuple(sorted((str(capped(str(k))), capped(v)) for k, v in attrs.items()))
