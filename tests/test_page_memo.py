"""The page memo (render/memo.py): `reportgen watch` renders again only the pages whose inputs changed,
and the site it writes is byte for byte the one a build without the memo writes."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import yaml
from conftest import SAMPLE_LOGS

from reportgen.build import build
from reportgen.recall import Recall
from reportgen.render.memo import Asked, PageMemo, Tracked

NOW = datetime(2026, 11, 3, 1, 0, tzinfo=UTC)  # during the sample's lot: the clock's banner is on every page


def site_files(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def live_copy(tmp_path: Path) -> Path:
    from test_clock import live_logs

    return live_logs(tmp_path)


def append(log: Path, row: dict) -> None:
    with log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


def test_with_the_memo_each_build_is_the_build_without_it_and_only_what_changed_is_rendered(tmp_path):
    """A sequence of changes during the lot, each build with the memo against one without: a row of a running
    run (its page and the pages of the runs charted with it are rendered; the others are the memo's), a new
    run, a stop, an edited plan (every page anew), a removed log. The memo's builds also keep what they worked out
    (recall.py): each run's traces and paces are worked out again only when its rows or timings changed."""
    logs = live_copy(tmp_path)
    memo, recall = PageMemo(), Recall()
    running = logs / "runs" / "lora-r16-2" / "events.jsonl"

    def both(name: str, now: datetime = NOW) -> None:
        recall.reused = recall.made = 0
        build(logs, logs / "plan.yaml", tmp_path / "memo", jobs=1, now=now, memo=memo, recall=recall)
        build(logs, logs / "plan.yaml", tmp_path / name, jobs=1, now=now)
        assert site_files(tmp_path / "memo") == site_files(tmp_path / name), name

    both("first")
    assert memo.reused == 0 and memo.rendered > 10
    assert recall.reused == 0 and recall.made > 10
    pages, worked = memo.rendered, recall.made
    append(running, {"ts": "2026-11-03T10:05:00+09:00", "type": "metric", "run": "lora-r16-2", "step": 1340,
                     "metrics": {"loss": 1.47}})
    both("a row")
    # lora-r16-2's page, lora-r16-1's (its chart draws lora-r16-2, which continues it) and the log's evidence page.
    assert memo.rendered == 3 and memo.reused == pages - 3
    # One run's rows changed: its trace, its steps and its paces are worked out again, nothing of the others.
    assert 0 < recall.made <= 5 and recall.made + recall.reused == worked
    (logs / "runs" / "lora-r16-3").mkdir()
    append(logs / "runs" / "lora-r16-3" / "events.jsonl",
           {"ts": "2026-11-03T10:06:00+09:00", "type": "run_start", "run": "lora-r16-3", "variant": "lora-r16",
            "config": {"lr": 0.0002}})
    both("a new run")
    assert 0 < memo.rendered < pages
    append(running, {"ts": "2026-11-03T10:07:00+09:00", "type": "stop", "run": "lora-r16-2", "step": 1340,
                     "rule": "S1-nan", "kind": "non_finite", "reason": "loss is NaN"})
    both("a stop")
    plan = yaml.safe_load((logs / "plan.yaml").read_text(encoding="utf-8"))
    plan["campaign"]["question"] += " (edited)"
    (logs / "plan.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    both("an edited plan")
    assert memo.reused == 0  # the plan's text is on every page's inputs
    (logs / "runs" / "lora-r16-3" / "events.jsonl").unlink()
    both("a removed log")
    assert not any("lora-r16-3" in name for name in memo.kept)  # the pages of the last build only
    both("the lot over", now=datetime(2026, 11, 6, tzinfo=UTC))  # the clock's banner leaves every page


def test_a_page_that_reads_more_of_the_report_depends_on_more(tmp_path):
    """Tracked notes each top-level entry a template reads, so a page is reused only while those are the same;
    Asked notes each evidence list a page asked about. Counter-example: an entry not read changes nothing."""
    report = {"campaign": {"id": "c"}, "runs": [1], "stops": []}
    tracked = Tracked(report)
    assert tracked["campaign"]["id"] == "c" and "stops" in tracked
    assert tracked.read == {"campaign", "stops"}
    asked = Asked(frozenset({"a"}))
    assert "a" in asked and "b" not in asked and asked.answers == {"a": True, "b": False}
    memo = PageMemo()
    from reportgen.render.memo import Rendered

    first = memo.begin(report, frozenset({"a"}), "templates")
    first.keep("p", first.key("p"), Rendered([("p.html", "<p>")], {"campaign"}, {"a": True}))
    first.end()
    same = memo.begin({**report, "runs": [2]}, frozenset({"a", "z"}), "templates")  # runs not read, z not asked
    assert same.lookup("p", same.key("p")) == [("p.html", "<p>")]
    renamed = memo.begin({**report, "campaign": {"id": "d"}}, frozenset({"a"}), "templates")
    assert renamed.lookup("p", renamed.key("p")) is None
    uncited = memo.begin(report, frozenset(), "templates")
    assert uncited.lookup("p", uncited.key("p")) is None
    other_templates = memo.begin(report, frozenset({"a"}), "templates, edited")
    assert other_templates.lookup("p", other_templates.key("p")) is None


def test_the_watcher_keeps_a_memo_and_its_builds_are_those_of_build(tmp_path):
    """watch holds one memo for all its builds; with templates of the user's it renders every page."""
    from reportgen.watch import Watch

    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    watch = Watch(logs, logs / "plan.yaml", tmp_path / "site")
    assert isinstance(watch.memo, PageMemo) and Watch(logs, logs / "plan.yaml", tmp_path / "x").memo is not watch.memo
    assert isinstance(watch.recall, Recall) and Watch(logs, logs / "plan.yaml", tmp_path / "x").recall is not watch.recall
    templates = tmp_path / "templates"
    templates.mkdir()
    build(logs, logs / "plan.yaml", tmp_path / "custom", templates=templates, memo=watch.memo)
    assert watch.memo.rendered == 0 and not watch.memo.kept


def test_report_json_is_json_dumps_and_encodes_again_only_the_items_that_changed():
    """BuildMemo.report_json writes what json.dumps(report, indent=2) writes, every top-level list item by item
    (runs, inputs, plain values, nested lists, an empty list), whatever changed since the last build; an
    unchanged item's text is the last build's. Counter-example: a changed item is encoded anew."""
    import reportgen.render.memo as memo_module

    report = {"schema": "x", "runs": [{"id": "a", "steps": [1, 2]}, {"id": "b", "steps": []}],
              "inputs": [{"path": "p", "problems": [{"line": 3}]}, {"path": "q", "problems": []}], "alerts": [],
              "names": ["é", 2, None, 1.5]}
    memo = PageMemo()
    grown = {**report, "runs": [report["runs"][0], {"id": "b", "steps": [9]}],
             "inputs": [report["inputs"][0], {"path": "q", "problems": [{"line": 1}]}]}
    for changed in (report, grown):
        encoded = []
        indented = memo_module._indented
        memo_module._indented = lambda value, level: encoded.append(value) or indented(value, level)
        try:
            text = memo.begin(changed, frozenset(), "templates").report_json()
        finally:
            memo_module._indented = indented
        assert text == json.dumps(changed, indent=2, ensure_ascii=False) + "\n"
    assert encoded == [grown["runs"][1], grown["inputs"][1]]  # the second build: the changed run and input only
