"""The report's answers: every study's (:attr:`~ksptrace.studies.result.StudyResult.answers`,
the variability study's four), with what other studies add to them
(:class:`~ksptrace.studies.result.Addendum`), as plain dicts for the page and summary.json.

An addendum to an answer that could not tell leads it, and its basis becomes the answer's
(issue 52: on a 2-core machine Q2 cannot compare the methods at scale, but the paired noise
experiment gives it an interval, labelled as injected noise); otherwise it follows the
answer's own sentences. Led so, the answer's own first sentence says that it is about the runs'
own variability, apart from the addendum's basis: its "cannot tell" is another comparison
than the addendum's verdict (issue 62: one answer per comparison). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ksptrace.studies.result import StudyResult

CANNOT_TELL = "cannot tell"


def merged(studies: Sequence[StudyResult]) -> list[dict[str, Any]]:
    """Every study's answers (key, question, sentences, basis, short: the first screen's
    sentence, "" for the first of the sentences), in the studies' order, with every study's
    addenda merged in."""
    out = []
    for a in (a for r in studies for a in r.answers):
        sentences = list(a.sentences)
        basis, short = a.basis, a.short
        for r in studies:
            for add in r.addenda:
                if add.key != a.key:
                    continue
                if basis == CANNOT_TELL:
                    sentences = [*add.sentences, *_apart(sentences, add.basis)]
                    basis, short = add.basis, add.short
                else:
                    sentences += add.sentences
        out.append({"key": a.key, "question": a.question, "sentences": sentences,
                    "basis": basis, "short": short})
    return out


def _apart(sentences: list[str], basis: str) -> list[str]:
    """The answer's own sentences behind an addendum that leads it: the first one labelled as
    the runs' own, apart from the addendum's basis."""
    if not sentences:
        return sentences
    first = sentences[0]
    return [f"Apart from the {basis}, on the runs' own variability: "
            f"{first[:1].lower()}{first[1:]}", *sentences[1:]]
