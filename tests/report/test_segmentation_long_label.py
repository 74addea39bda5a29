"""A trace string thousands of characters long still gives a segmentation plot and a short
file name (issue 27: matplotlib's rasteriser overflowed and the command ended)."""

from __future__ import annotations

from matplotlib.figure import Figure

from ksptrace.report.segmentation import _slug
from ksptrace.studies.drawing import MAX_TEXT, bound_texts, to_png


def test_long_texts_are_cut_before_drawing() -> None:
    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([1, 2], [1, 2], label="m" * 5000)
    ax.set_title("t" * 5000)
    ax.set_xlabel("\n".join(["x"] * 50))
    ax.legend()
    ax.set_yticks([1, 2], labels=["y" * 5000, "short"])
    ax.annotate("a" * 5000, (1, 1))
    fig.suptitle("s" * 5000)
    png = to_png(fig)
    assert png.startswith(b"\x89PNG")
    assert len(ax.get_title()) == MAX_TEXT
    assert ax.get_title().endswith("…")
    assert ax.get_xlabel().count("\n") == 5
    assert [len(t.get_text()) for t in ax.get_yticklabels()] == [MAX_TEXT, 5]
    assert len(ax.texts[0].get_text()) == MAX_TEXT
    assert fig._suptitle is not None
    assert len(fig._suptitle.get_text()) == MAX_TEXT
    assert len(ax.get_legend().get_texts()[0].get_text()) == MAX_TEXT
    short = Figure()
    short.add_subplot().set_title("kept")
    bound_texts(short)
    assert short.axes[0].get_title() == "kept"


def test_slug_is_bounded() -> None:
    assert len(_slug("gmres" * 1000)) <= 120
    assert _slug("a/b c") == "a_b_c"
