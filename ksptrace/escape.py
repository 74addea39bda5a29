"""One escaping function per language that ksptrace generates, for every string that comes from
a trace or a user: C, Python, TOML, PETSc options files, shell, HTML, file names.

A trace is data from somewhere else: its ``ksp``, ``problem`` or axis names can hold quotes,
backslashes, newlines, trigraphs or any Unicode. Whatever lands in a generated artefact goes
through one of these, and each is tested by feeding it arbitrary Unicode and then compiling
or parsing the artefact (tests/test_escape.py). Pure: no imports from the rest of the package.
"""

from __future__ import annotations

import hashlib
import html
import re
import shlex

_C_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_ .+-")
_COMMENT_PLAIN = re.compile(r"[^A-Za-z0-9 _.,:;=+\-()\[\]<>%@]")
_COMMENT_ASCII = str.maketrans({"≥": ">=", "≤": "<=", "×": "x", "µ": "u", "μ": "u", "–": "-",
                                "—": "-", "−": "-", "…": "..."})
"""Symbols ksptrace writes itself, spelt in the characters a comment keeps ("nprocs ≥ 2" reads
"nprocs >= 2", not "nprocs _ 2")."""
PETSC_NAME = re.compile(r"[A-Za-z0-9_]+\Z")
"""What a PETSc type name (``-ksp_type NAME``) is made of."""
_TOML_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")
_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]+")


def c_string(text: str) -> str:
    """A C string literal holding ``text``'s UTF-8 bytes: everything outside letters, digits
    and ``_ .+-`` as a three-digit octal escape (no quote, backslash, newline or trigraph
    can end the literal early)."""
    out = []
    for byte in text.encode("utf-8", "surrogatepass"):
        ch = chr(byte)
        out.append(ch if ch in _C_PLAIN else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def comment(text: str, limit: int = 200) -> str:
    """``text`` fit for a one-line comment in C, Python (also a docstring), TOML, a PETSc
    options file or an Open MPI rules file: printable ASCII without quotes, backslashes,
    ``*``, ``/``, ``?``, ``#`` or line breaks (a few symbols spelt out, ``≥`` as ``>=``; others
    become ``_``), at most ``limit`` chars."""
    flat = " ".join(text.translate(_COMMENT_ASCII).split())
    safe = _COMMENT_PLAIN.sub("_", flat)
    return safe if len(safe) <= limit else safe[:limit - 3] + "..."


def python_string(text: str) -> str:
    """A Python string literal for ``text``, ASCII only."""
    return ascii(text)


def toml_string(text: str) -> str:
    """A TOML basic string for ``text``: ``\\``, ``"`` and every control character escaped."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        elif 0xD800 <= code <= 0xDFFF:  # a lone surrogate is no Unicode scalar value
            out.append("\\uFFFD")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_key(text: str) -> str:
    """``text`` as a TOML key: bare when it can be, else quoted."""
    return text if _TOML_BARE_KEY.match(text) else toml_string(text)


def petsc_name(text: str) -> bool:
    """Whether ``text`` can stand as a PETSc type name on an options line."""
    return bool(PETSC_NAME.match(text))


def shell_word(text: str) -> str:
    """``text`` as one word of a POSIX shell command line."""
    return shlex.quote(text)


def html_text(text: str) -> str:
    """``text`` for HTML element content or a quoted attribute."""
    return html.escape(text, quote=True)


def file_stem(text: str, limit: int = 80) -> str:
    """A file-name part made of ``A-Za-z0-9_.+-`` only (runs of others become ``-``), never
    starting with a dot, at most ``limit`` characters; ``x`` when nothing is left."""
    stem = _FILE_UNSAFE.sub("-", text).strip("-.")[:limit].rstrip("-.")
    return stem or "x"


MAX_STEM = 200
"""File systems allow 255 bytes per name: a stem longer than this keeps its start and a digest
of the whole."""


def bounded_stem(stem: str, limit: int = MAX_STEM) -> str:
    """``stem`` itself, or its first characters and an 8-digit digest of all of it when it is
    longer than ``limit`` (distinct long names stay distinct)."""
    if len(stem.encode("utf-8")) <= limit:
        return stem
    digest = hashlib.sha256(stem.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    head = stem.encode("utf-8")[:limit - 9].decode("utf-8", "ignore")
    return f"{head}-{digest}"
