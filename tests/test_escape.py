"""Each escaping function of ksptrace.escape, fed arbitrary Unicode: the artefact it lands in is
compiled or parsed, and the string round-trips (or, for comments, cannot leave its comment)."""

from __future__ import annotations

import ast
import html.parser
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksptrace import escape

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler on this machine")
C_FLAGS = ["-std=c99", "-trigraphs", "-Wall", "-Werror", "-pedantic"]
NASTY = ["??/", '"', "\\", "\n", "\r", "*/", "/*", "??=", "\x00", "\u2028", "é", "𝄞", "\"\n#"]
texts = st.one_of(st.text(), st.sampled_from(NASTY),
                  st.lists(st.sampled_from(NASTY), max_size=6).map("".join))
slow = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@needs_cc
@slow
@given(st.lists(texts, min_size=1, max_size=12))
def test_c_strings_compile_and_hold_the_bytes(tmp_path: Path, labels: list[str]) -> None:
    body = ", ".join(escape.c_string(s) for s in labels)
    notes = "\n".join(f"/* {escape.comment(s)} */" for s in labels)
    src = (f'#include <stdio.h>\n{notes}\nstatic const char *const L[] = {{{body}}};\n'
           f"int main(void) {{ for (int i = 0; i < {len(labels)}; ++i) {{\n"
           '  for (const unsigned char *p = (const unsigned char *)L[i]; *p; ++p) '
           'printf("%02x", *p);\n  printf("\\n"); } return 0; }\n')
    c = tmp_path / "t.c"
    c.write_text(src)
    exe = tmp_path / "t"
    subprocess.run(["cc", *C_FLAGS, "-o", str(exe), str(c)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    got = out.splitlines()
    # C strings end at the first NUL: what precedes it must come back exactly
    want = [s.encode("utf-8").split(b"\0")[0].hex() for s in labels]
    assert got == want


@settings(max_examples=300)
@given(texts)
def test_python_strings_and_comments_parse_back(text: str) -> None:
    src = (f'"""{escape.comment(text)}"""\nX = {escape.python_string(text)}  '
           f"# {escape.comment(text)}\nY = 1\n")
    tree = ast.parse(src)
    assert len(tree.body) == 3  # docstring, X, Y: the comment and docstring held
    ns: dict[str, object] = {}
    exec(compile(tree, "generated", "exec"), ns)
    assert ns["X"] == text
    assert ns["Y"] == 1


@settings(max_examples=300)
@given(texts, texts)
def test_toml_strings_and_keys_parse_back(key: str, value: str) -> None:
    doc = (f"# {escape.comment(value)}\n{escape.toml_key(key)} = {escape.toml_string(value)}\n"
           "after = 1\n")
    parsed = tomllib.loads(doc)
    assert parsed["after"] == 1
    if key != "after":
        assert parsed == {key: value, "after": 1}


@settings(max_examples=300)
@given(texts)
def test_options_file_comments_add_no_option(text: str) -> None:
    """A PETSc options file is whitespace-separated tokens, '#' to the end of a line a comment:
    a comment line from a trace string yields no token."""
    doc = f"# {escape.comment(text)}\n-ksp_type cg\n"
    tokens = [t for line in doc.splitlines() for t in line.split("#", 1)[0].split()]
    assert tokens == ["-ksp_type", "cg"]


@pytest.mark.parametrize(("name", "ok"), [
    ("cg", True), ("pipe_cg2", True), ("cg\n-log_view", False), ("", False), ("cg x", False),
    ("ksp/cg", False), ("cg;rm", False), ("ĉg", False)])
def test_petsc_names(name: str, ok: bool) -> None:
    assert escape.petsc_name(name) is ok


@settings(max_examples=100, deadline=None)
@given(st.text().filter(lambda s: "\x00" not in s))
def test_shell_words_come_back_through_bash(text: str) -> None:
    out = subprocess.run(["bash", "-c", f"printf %s {escape.shell_word(text)}"],
                         capture_output=True, check=True).stdout
    assert out == text.encode("utf-8", "surrogateescape")


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.data: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(v for _, v in attrs)

    def handle_data(self, data: str) -> None:
        self.data.append(data)


@settings(max_examples=300)
@given(texts)
def test_html_text_round_trips_and_opens_no_tag(text: str) -> None:
    text = text.replace("\r", "").replace("\x00", "")  # the HTML parser normalises these
    p = _Text()
    p.feed(f'<p title="{escape.html_text(text)}">{escape.html_text(text)}</p>')
    p.close()
    assert p.tags == ["p"]
    assert p.attrs == [text]
    assert "".join(p.data) == text


@settings(max_examples=300)
@given(texts)
def test_file_stems_are_one_safe_name(text: str) -> None:
    stem = escape.file_stem(text)
    assert 0 < len(stem) <= 80
    assert all(c.isascii() and (c.isalnum() or c in "_.+-") for c in stem)
    assert not stem.startswith(".")
