"""The site writer writes each file of a build once: a second write of the same path is a bug in
the build (two pages under one name), refused instead of silently replacing the first."""

from __future__ import annotations

import json

import pytest

from reportgen.errors import BuildError
from reportgen.render.output import MARKER, SiteWriter


def test_writing_the_same_file_twice_in_one_build_is_refused_and_the_first_stays(tmp_path):
    writer = SiteWriter(tmp_path / "site")
    writer.write("index.html", "first")
    writer.write("runs/a.html", b"a")  # counter-example: other paths are written
    with pytest.raises(BuildError, match=r"^index\.html: the build tried to write this file twice$"):
        writer.write("index.html", "second")
    writer.commit()
    site = tmp_path / "site"
    assert (site / "index.html").read_text() == "first" and (site / "runs" / "a.html").read_bytes() == b"a"
    assert json.loads((site / MARKER).read_text())["files"] == ["index.html", "runs/a.html"]


def test_the_next_build_writes_the_same_paths_again(tmp_path):
    """Counter-example: the guard is per build; a new build replaces the site with its own files."""
    for text in ("first build", "second build"):
        writer = SiteWriter(tmp_path / "site")
        writer.write("index.html", text)
        writer.commit()
    assert (tmp_path / "site" / "index.html").read_text() == "second build"
