"""Compiled templates are kept in the user's cache folder between builds (and for each page worker):
the site is the same with the cache, without it, and with a damaged one; a folder others could write
to is not used, since the cache holds code to run."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN
from jinja2.bccache import bc_magic

from reportgen.cli import cli
from reportgen.render.site import template_cache


def built(site, *extra) -> dict[str, bytes]:
    result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q", *extra])
    assert result.exit_code == 0, result.output
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def test_a_build_keeps_compiled_templates_and_the_next_builds_the_same_site(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = built(tmp_path / "first")
    kept = sorted((tmp_path / "cache" / "reportgen" / "templates").glob("*/*.cache"))
    assert kept and all(path.stat().st_mode & 0o077 == 0 for path in kept)
    assert all(folder.stat().st_mode & 0o777 == 0o700 for folder in
               (tmp_path / "cache" / "reportgen", tmp_path / "cache" / "reportgen" / "templates", kept[0].parent))
    assert built(tmp_path / "second") == first


def test_a_damaged_cache_is_compiled_anew(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = built(tmp_path / "first")
    for n, path in enumerate(sorted((tmp_path / "cache" / "reportgen" / "templates").glob("*/*.cache"))):
        # Foreign bytes, and the right header over damaged contents (which Jinja itself would raise on).
        path.write_bytes(b"\x00 not a compiled template" if n % 2 else bc_magic + b"\x80\x04 damaged")
    assert built(tmp_path / "second") == first


def test_without_the_cache_the_site_is_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cached = built(tmp_path / "cached")
    monkeypatch.setenv("REPORTGEN_TEMPLATE_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other"))
    assert built(tmp_path / "uncached", "--no-cache") == cached
    assert not (tmp_path / "other").exists()  # neither cache on: nothing written to the cache folder


def test_an_overriding_template_is_not_served_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    built(tmp_path / "first")
    custom = tmp_path / "templates"
    custom.mkdir()
    (custom / "stops.html").write_text('{% extends "base.html" %}{% block content %}<p>our own stops page</p>{% endblock %}',
                                       encoding="utf-8")
    site = built(tmp_path / "second", "--templates", str(custom))
    assert b"our own stops page" in site["stops.html"]


def test_a_cache_folder_others_can_write_to_is_not_used(tmp_path, monkeypatch):
    """Counter-example: the cache holds code that builds run, so a folder writable by others, at any
    level from reportgen/ down, is refused, and so is an entry others could have written."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert template_cache() is not None
    for folder in (tmp_path / "cache" / "reportgen", tmp_path / "cache" / "reportgen" / "templates"):
        folder.chmod(0o777)
        assert template_cache() is None
        folder.chmod(0o700)
        assert template_cache() is not None



def test_an_entry_others_could_have_written_is_never_run(tmp_path, monkeypatch):
    """A compiled stops page planted in the cache (right header, right checksum) is run when it is the
    user's own, and never when others could have written it."""
    from reportgen.render.site import environment

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    env = environment(None)
    cache = env.bytecode_cache
    source, filename, _ = env.loader.get_source(env, "stops.html")
    bucket = cache.get_bucket(env, "stops.html", filename, source)
    bucket.code = env.compile("PLANTED", "stops.html", filename)
    planted = Path(cache._get_cache_filename(bucket))
    with planted.open("wb") as handle:
        bucket.write_bytecode(handle)
    planted.chmod(0o600)
    assert b"PLANTED" in built(tmp_path / "own", "-j", "1")["stops.html"]  # the user's own cache is trusted
    planted.chmod(0o666)
    assert b"PLANTED" not in built(tmp_path / "others", "-j", "1")["stops.html"]


def test_another_environment_compiles_into_a_folder_of_its_own(tmp_path, monkeypatch):
    """Compiled code depends on the environment's settings and versions, not only on the source: each
    fingerprint has its folder, so code compiled for another reportgen or Jinja is never run."""
    from reportgen.render import site

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    one = template_cache().directory
    monkeypatch.setattr(site, "__version__", "0.0.0-another")
    other = template_cache().directory
    assert one != other and os.path.dirname(one) == os.path.dirname(other)
