from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest
import yaml

from reportgen.events import EventLog, ticking  # noqa: F401  (ticking: tests import it from here)
from reportgen.plan.schema import Plan

REPO = Path(__file__).resolve().parents[1]
SAMPLE_LOGS = REPO / "sample_logs"
SAMPLE_PLAN = SAMPLE_LOGS / "plan.yaml"
JST = timezone(timedelta(hours=9))
WINDOW_START = datetime(2026, 11, 2, 9, 0, tzinfo=JST)
LOT_END = WINDOW_START + timedelta(days=3)  # the sample's one 3-day lot


def first_day(hour: int) -> datetime:
    """A time on the first day of the sample's lot (2 Nov 2026, JST)."""
    return datetime(2026, 11, 2, hour, tzinfo=JST)


def tree_digest(root: Path) -> dict[str, str]:
    """SHA-256 of every file under root, by relative path."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def broken_links(site: Path) -> list[tuple[str, str]]:
    """Every (page, link) of a built site (href or src) whose file or #fragment does not exist."""
    broken = []
    for page in sorted(site.rglob("*.html")):
        for href in re.findall(r'(?:href|src)="([^"]+)"', page.read_text(encoding="utf-8")):
            path, _, fragment = href.partition("#")
            target = (page.parent / unquote(path)).resolve() if path else page
            if not target.is_file() or (fragment and target.suffix == ".html"
                                        and f'id="{fragment}"' not in target.read_text(encoding="utf-8")):
                broken.append((page.relative_to(site).as_posix(), href))
    return broken


@pytest.fixture(autouse=True, scope="session")
def _own_cache_folder(tmp_path_factory):
    """Builds keep compiled templates in the user's cache folder: the tests' builds keep theirs in a
    folder of the test session's own."""
    folder = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(folder))
        # A build's now (the lot clock) and time come from SOURCE_DATE_EPOCH when it is set: the tests set it
        # where they mean to, never from the environment they run in.
        patch.delenv("SOURCE_DATE_EPOCH", raising=False)
        yield folder


@pytest.fixture
def sample_plan_data() -> dict:
    return yaml.safe_load(SAMPLE_PLAN.read_text(encoding="utf-8"))


@pytest.fixture
def plan(sample_plan_data) -> Plan:
    """The sample plan, validated (a module may override it with an edited one)."""
    return Plan.model_validate(sample_plan_data)


@pytest.fixture
def write_plan(tmp_path: Path):
    """Write a plan dict (a deep copy, edited by `edit`) as YAML and return its path."""

    def write(data: dict, edit=None, name: str = "plan.yaml") -> Path:
        data = copy.deepcopy(data)
        if edit:
            edit(data)
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
        return path

    return write


class FakeClock:
    def __init__(self, at: datetime = WINDOW_START):
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def hours(self, h: float) -> None:
        self.at += timedelta(hours=h)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def event_log(tmp_path: Path, clock: FakeClock):
    """An EventLog in tmp_path/logs/<file> driven by the fake clock."""

    def make(name: str = "events.jsonl", run: str | None = None) -> EventLog:
        return EventLog(tmp_path / "logs" / name, run=run, clock=clock)

    return make


def inspect_of(campaign):
    """`reportgen inspect --json` of an ingested campaign."""
    from reportgen.analysis import survey
    from reportgen.render.inspect import build_inspect

    return build_inspect(survey(campaign))


def noting(monkeypatch, owner: object, name: str, noted: Callable[..., object]) -> list:
    """Each call of `owner.name` (a reader's feed or scan) noted as `noted(*its arguments)` in the list returned;
    the call itself made as before."""
    notes: list = []
    real = getattr(owner, name)

    def noted_then_made(*args, **kwargs):
        notes.append(noted(*args, **kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, noted_then_made)
    return notes


def changed(path: Path, data: bytes, replaced: bool = False) -> None:
    """`path` given `data`: written in place, or (`replaced`) written to another file then moved over it, as a
    rotated log's successor takes its place (the same path, another file)."""
    if not replaced:
        path.write_bytes(data)
        return
    other = path.with_name(path.name + ".other")
    other.write_bytes(data)
    other.replace(path)


def ingest_warm(logs: Path, monkeypatch, owner: object, name: str, noted: Callable[..., object]) -> tuple:
    """`logs` ingested with the parse cache its last ingest left (a file grown since is read on), each call of
    `owner.name` (a reader's feed or scan) noted as `noted(*its arguments)`; the campaign is checked to be the one
    ingest reads without the cache (rows, runs, inputs, messages). Returns the campaign, the cache and the notes."""
    from reportgen.ingest import ingest
    from reportgen.ingest.cache import open_cache

    warm = open_cache(logs)
    notes = noting(monkeypatch, owner, name, noted)
    got = ingest(logs, cache=warm)
    monkeypatch.undo()
    expected = ingest(logs)
    pd.testing.assert_frame_equal(got.metrics, expected.metrics)
    assert got.runs == expected.runs and got.inputs == expected.inputs and got.messages == expected.messages
    return got, warm, notes
