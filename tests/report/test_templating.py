"""The report's compiled templates kept in the private cache folder: read back instead of
compiled, the same code, and never loaded from a place another user could write or from an
entry not sealed with this user's key."""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
import pytest

from ksptrace.cachedir import CACHE_ENV
from ksptrace.report import templating

NAMES = ["report.html.j2", "run.html.j2", "run_section.html.j2", "page.html.j2",
         "across.html.j2", "study.html.j2", "study_section.html.j2"]


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("ksptrace.report", "templates"),
                              bytecode_cache=templating.PrivateBytecodeCache(),
                              **templating.ENV_OPTIONS)  # type: ignore[arg-type]


def _compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    compiled: list[str] = []
    compile_ = jinja2.Environment.compile

    def counting(self: jinja2.Environment, source: str, name: str | None = None,
                 *args: object, **kwargs: object) -> object:
        compiled.append(str(name))
        return compile_(self, source, name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    return compiled


def _source(env: jinja2.Environment, name: str) -> str:
    template = env.get_template(name)
    assert template.filename is not None
    return Path(template.filename).read_text()


@pytest.fixture
def private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder / templating.TEMPLATE_FOLDER


def test_a_second_environment_reads_the_compiled_templates(
        private: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _compiles(monkeypatch)
    first = _env()
    for name in NAMES:
        first.get_template(name)
    assert sorted(compiled) == sorted(NAMES)
    entries = sorted(private.glob("*.template"))
    assert len(entries) == len(NAMES)
    assert all(e.stat().st_mode & 0o077 == 0 for e in entries)  # 0600, under a 0700 folder
    assert private.stat().st_mode & 0o077 == 0
    compiled.clear()
    second = _env()
    for name in NAMES:  # the same code: the same pages
        code = second.get_template(name).root_render_func.__code__
        want = first.get_template(name).root_render_func.__code__
        assert (code.co_code, code.co_consts) == (want.co_code, want.co_consts), name
    assert compiled == []  # all read back


def test_a_cache_another_user_could_write_is_not_read(
        private: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _env().get_template("page.html.j2")
    compiled = _compiles(monkeypatch)
    entry = next(private.glob("*.template"))
    os.chmod(entry, 0o666)  # writable by others: never read back
    _env().get_template("page.html.j2")
    assert compiled == ["page.html.j2"]
    compiled.clear()
    os.chmod(entry, 0o600)
    os.chmod(private, 0o777)  # the folder itself shared: no cache at all
    _env().get_template("page.html.j2")
    assert compiled == ["page.html.j2"]


def test_an_entry_not_sealed_with_this_users_key_is_not_loaded(
        private: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiled code runs when loaded: an entry whose HMAC does not check out (planted, or
    copied from another user) is compiled again, never loaded."""
    _env().get_template("page.html.j2")
    entry = next(private.glob("*.template"))
    data = bytearray(entry.read_bytes())
    data[-1] ^= 1  # one bit of the code changed, the seal kept
    entry.write_bytes(bytes(data))
    compiled = _compiles(monkeypatch)
    assert _env().get_template("page.html.j2") is not None
    assert compiled == ["page.html.j2"]


def test_a_damaged_or_stale_entry_is_compiled_again(
        private: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _env().get_template("page.html.j2")
    entry = next(private.glob("*.template"))
    entry.write_bytes(entry.read_bytes()[:40])  # truncated
    compiled = _compiles(monkeypatch)
    env = _env()
    assert env.get_template("page.html.j2") is not None
    assert compiled == ["page.html.j2"]


def test_no_usable_cache_folder_is_no_error(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, str(blocked))
    env = _env()
    assert env.get_template("page.html.j2") is not None
    assert _source(env, "page.html.j2")


def test_the_report_environment_keeps_its_options_and_cache() -> None:
    env = templating.ENV
    assert env.autoescape is True
    assert env.undefined is jinja2.StrictUndefined
    assert isinstance(env.bytecode_cache, templating.PrivateBytecodeCache)
