"""The site writer writes each file of a build once: a second write of the same path is a bug in
the build (two pages under one name), refused instead of silently replacing the first."""

from __future__ import annotations

import json
import os

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


def _build(site, files):
    writer = SiteWriter(site)
    for rel, data in files.items():
        writer.write(rel, data)
    writer.commit()


def test_a_file_the_site_holds_with_the_same_bytes_is_linked_from_it_not_written_again(tmp_path):
    site = tmp_path / "site"
    _build(site, {"index.html": "same", "runs/a.html": "run a", "runs/b.html": "run b"})
    before = {rel: (site / rel).stat().st_ino for rel in ("index.html", "runs/a.html", "runs/b.html")}
    # Counter-examples: other bytes of the same length, and a new length, are written as new files.
    _build(site, {"index.html": "same", "runs/a.html": "run A", "runs/b.html": "run bb", "runs/c.html": "run c"})
    assert (site / "index.html").stat().st_ino == before["index.html"]
    assert (site / "runs" / "a.html").stat().st_ino != before["runs/a.html"]
    assert (site / "runs" / "b.html").stat().st_ino != before["runs/b.html"]
    assert {rel: (site / rel).read_text() for rel in ("index.html", "runs/a.html", "runs/b.html", "runs/c.html")} == {
        "index.html": "same", "runs/a.html": "run A", "runs/b.html": "run bb", "runs/c.html": "run c"}
    assert (site / "index.html").stat().st_nlink == 1  # the old site is gone: the file is the new site's alone


def test_a_link_in_the_old_site_is_not_followed(tmp_path):
    site = tmp_path / "site"
    _build(site, {"index.html": "page", "other.html": "page"})
    outside = tmp_path / "outside.html"
    outside.write_text("page")
    (site / "other.html").unlink()
    (site / "other.html").symlink_to(outside)
    _build(site, {"index.html": "page", "other.html": "page"})
    assert not (site / "other.html").is_symlink() and (site / "other.html").read_text() == "page"
    assert outside.stat().st_nlink == 1


def test_a_site_file_with_another_name_outside_the_site_is_written_not_shared(tmp_path):
    """A backup of the site made with hard links (cp -al, rsync --link-dest) shares its files' inodes: linking one
    into the new site would tie the live site to the backup. Counter-example: the file of its own beside it is linked."""
    site = tmp_path / "site"
    _build(site, {"index.html": "page", "report.json": "{}"})
    backup = tmp_path / "backup.json"
    os.link(site / "report.json", backup)
    own = (site / "index.html").stat().st_ino
    _build(site, {"index.html": "page", "report.json": "{}"})
    assert (site / "report.json").stat().st_ino != backup.stat().st_ino and backup.stat().st_nlink == 1
    assert (site / "index.html").stat().st_ino == own


def test_without_hard_links_the_file_is_written(tmp_path, monkeypatch):
    site = tmp_path / "site"
    _build(site, {"index.html": "page"})

    def no_links(*args, **kwargs):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr("reportgen.render.output.os.link", no_links)  # a file system without hard links
    inode = (site / "index.html").stat().st_ino
    _build(site, {"index.html": "page"})
    assert (site / "index.html").read_text() == "page" and (site / "index.html").stat().st_ino != inode


def test_a_file_replaced_between_its_comparison_and_its_link_is_written(tmp_path, monkeypatch):
    """Counter-example of the link: what was compared must be what is linked. A file renamed over the old one in
    between (its bytes other) is not linked: the new site gets the bytes of this build."""
    site = tmp_path / "site"
    _build(site, {"index.html": "page"})
    real_link = os.link

    def replaced_first(source, target, **kwargs):
        swap = tmp_path / "swap"
        swap.write_text("gone")
        os.replace(swap, source)
        real_link(source, target, **kwargs)

    monkeypatch.setattr("reportgen.render.output.os.link", replaced_first)
    _build(site, {"index.html": "page"})
    assert (site / "index.html").read_text() == "page"
