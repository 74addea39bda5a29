"""Every page ksptrace writes has the report's look (issue 30): each page template extends the
one base page (its header, its style sheet), and none writes its own <html> or <style>."""

from __future__ import annotations

from pathlib import Path

from ksptrace.report.templating import ENV

TEMPLATES = Path(__file__).resolve().parents[2] / "ksptrace" / "report" / "templates"
PARTS = {"page.html.j2", "run_section.html.j2", "study_section.html.j2", "across_section.html.j2"}
"""The base page and the pieces pages include."""


def test_every_page_template_extends_the_base_page() -> None:
    pages = sorted(p for p in TEMPLATES.glob("*.html.j2") if p.name not in PARTS)
    assert {p.name for p in pages} >= {"report.html.j2", "run.html.j2", "study.html.j2",
                                       "across.html.j2", "segment.html.j2",
                                       "decision.html.j2", "collectives.html.j2",
                                       "index.html.j2"}
    for page in pages:
        text = page.read_text()
        assert text.startswith('{% extends "page.html.j2" %}'), page.name
        assert "<html" not in text, page.name
        assert "<style" not in text, page.name


def test_the_base_page_links_home_only_when_there_is_a_home() -> None:
    base = ENV.get_template("index.html.j2")
    assert "← the report" not in base.render(title="t", pages=[], version="0", home=None)
    page = ENV.get_template("run.html.j2").render(
        s={"anchor": "run-1", "name": "a run", "file": "f.h5", "flags": [], "measured": [],
           "notes": [], "parts": []}, metadata={"ksptrace": "0", "created": "now"},
        home="../report.html", standalone=True)
    assert '<a href="../report.html">← the report</a>' in page
    assert "font-family" in page  # the style sheet is inline on every page
