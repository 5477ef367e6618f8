from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN, broken_links, tree_digest

from reportgen.cli import cli

CONTRACT_KEYS = {
    "schema", "campaign", "plan", "inputs", "runs", "stops", "variants", "schedule", "checkpoints",
    "deliverables", "costs", "plan_options", "estimates", "uncertainties", "decisions",
}


def invoke(*args, env=None):
    result = CliRunner().invoke(cli, [str(a) for a in args], env=env)
    assert "Traceback" not in result.output
    return result


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("build") / "site"
    result = invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", out, "--quiet", env={"SOURCE_DATE_EPOCH": "1764000000"})
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def report(sample_site) -> dict:
    return json.loads((sample_site / "report.json").read_text())


def test_sample_build_writes_the_site_report_and_order_note(sample_site, report):
    for name in ("index.html", "plan.html", "schedule.html", "runs.html", "inputs.html", "order-note.md", "assets/plotly.min.js"):
        assert (sample_site / name).is_file(), name
    assert report["schema"] == "reportgen.report/1"
    assert CONTRACT_KEYS <= set(report)


def test_sample_schedule_reproduces_the_seed_window_arithmetic(report):
    schedule = report["schedule"]
    assert (schedule["window_hours"], schedule["planned_hours"], schedule["planned_unused_hours"]) == (72, 48, 24)
    for step in schedule["steps"]:
        if step["actual_hours"] is not None:
            assert step["variance_hours"] == pytest.approx(step["actual_hours"] - step["planned_hours"], abs=1e-3)
            explained = sum(c["hours"] for c in step["explained"])
            assert step["planned_hours"] + explained + step["unexplained_hours"] == pytest.approx(step["actual_hours"], abs=1e-3)


def test_sample_runs_variants_and_verdict(report):
    runs = {r["id"]: r for r in report["runs"]}
    assert runs["lora-r16-1"]["status"] == "interrupted"
    assert runs["lora-r16-2"]["status"] == "completed" and runs["lora-r16-2"]["resumes"] == "lora-r16-1"
    assert runs["lora-r64-1"]["status"] == "stopped"
    variants = {v["id"]: v["verdict"] for v in report["variants"]}
    assert variants == {"control": "baseline", "lora-r16": "passed", "lora-r64": "stopped", "lora-r16-len2048": "dropped"}
    assert report["campaign"]["verdict"] == "positive"
    stop = next(s for s in report["stops"] if s["rule"] == "S1-nonfinite")
    assert (stop["run"], stop["kind"], stop["step"]) == ("lora-r64-1", "non_finite", 2140)
    assert stop["evidence"][0]["path"] == "runs/lora-r64-1/events.jsonl"


def test_cut_off_line_of_the_killed_run_is_reported_with_file_and_line(report):
    damaged = next(i for i in report["inputs"] if i["path"] == "runs/lora-r16-1/events.jsonl")
    assert damaged["skipped"] == 1
    assert "cut off" in damaged["problems"][0]["message"]
    assert damaged["problems"][0]["line"] == len((SAMPLE_LOGS / damaged["path"]).read_bytes().split(b"\n"))


def test_every_line_of_the_sample_logs_is_accounted_for_in_report_json_and_on_the_inputs_page(sample_site, report):
    counted = [i for i in report["inputs"] if i["lines"] is not None]
    assert {i["format"] for i in counted} == {"reportgen-events", "checkpoint-bench", "text-log"}
    for entry in counted:
        data = (SAMPLE_LOGS / entry["path"]).read_bytes()
        assert entry["lines"] == data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0), entry["path"]
        read = entry["text_lines"] if entry["format"] == "text-log" else entry["records"]
        assert read + entry["skipped"] + entry["blank"] + entry["header"] == entry["lines"], entry["path"]
    bench = next(i for i in report["inputs"] if i["path"] == "campaign/checkpoint-bench.csv")
    assert (bench["header"], bench["records"]) == (1, bench["lines"] - 1)
    page = (sample_site / "inputs.html").read_text(encoding="utf-8")
    assert "<th>Lines</th>" in page and "1 header" in page and "lines of text" in page


def test_unknowns_are_null_never_zero(report):
    costs = report["costs"]
    assert costs["confirmed_total"] == 47.14
    assert costs["cost_per_passed_output"] == 23.57 and costs["undefined_reason"] is None
    assert costs["cost_per_passed_output_with_included"] is None  # no included other cost: no second figure
    assert costs["external"] == [{"label": "Reference summaries (annotation vendor)", "amount": 120.0, "note": costs["external"][0]["note"]}]
    assert report["plan"]["original_sha256"] is None and report["plan"]["modified_since_freeze"] is None


def test_order_note_is_short_and_names_the_order(sample_site):
    note = (sample_site / "order-note.md").read_text()
    assert len(note) <= 2000
    assert "IG-2026-1102-4090-0417" in note
    assert "47.14 USD" in note
    assert "Cost per passed output: 23.57 USD over 2 passed outputs" in note
    assert "Other costs: Reference summaries (annotation vendor) 120.00 USD (external, apart from the rental)" in note
    runs = next(line for line in note.splitlines() if line.startswith("- Runs: 9 "))
    assert "interrupted runs held 5.5 GPU h" in runs
    assert "S2-quality on lora-r64-1 (script and logs disagree)" in runs and "S4-resume on eval-all-1" in runs


def test_plotly_is_shipped_once_and_never_inlined(sample_site):
    bundle = (sample_site / "assets" / "plotly.min.js").read_text()
    assert len(bundle) > 1_000_000
    for page in sample_site.rglob("*.html"):
        html = page.read_text()
        assert len(html) < 200_000, page.name
        assert "cdn" not in html.lower()
        assert bundle[:200] not in html
    assert 'src="assets/plotly.min.js"' in (sample_site / "schedule.html").read_text()
    assert 'src="../assets/plotly.min.js"' in (sample_site / "runs" / "lora-r16-2.html").read_text()


def test_links_are_relative_and_local(sample_site):
    pages = list(sample_site.rglob("*.html"))
    assert any(p.parent.name == "evidence" for p in pages)
    for page in pages:
        for link in re.findall(r'(?:href|src)="([^"]*)"', page.read_text()):
            assert not link.startswith(("/", "http:", "https:", "//")), (page.name, link)
    assert broken_links(sample_site) == []


def test_evidence_links_open_the_cited_line(sample_site, report):
    stop = next(s for s in report["stops"] if s["rule"] == "S1-nonfinite")["logged"]["evidence"][0]
    html = (sample_site / "index.html").read_text()
    link = re.search(r'href="(evidence/[^"#]+\.html)#L%d"' % stop["line"], html)
    assert link, "the stop's evidence is linked to its line"
    evidence = (sample_site / link.group(1)).read_text()
    cited = re.search(r'<span id="L%d" class="line cited"><span class="ln">\d+</span>(.*?)</span>' % stop["line"], evidence)
    assert cited and "S1-nonfinite" in cited.group(1)


def test_two_builds_with_the_same_source_date_epoch_are_byte_identical(tmp_path, sample_site):
    out = tmp_path / "again"
    assert invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", out, "-q", env={"SOURCE_DATE_EPOCH": "1764000000"}).exit_code == 0
    assert tree_digest(out) == tree_digest(sample_site)


def test_a_build_leaves_logs_and_plan_unchanged(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    before = tree_digest(logs)
    assert invoke("build", logs, logs / "plan.yaml", "-o", tmp_path / "site", "-q").exit_code == 0
    assert tree_digest(logs) == before


@pytest.mark.parametrize("where", ["equal", "parent", "inside"])
def test_output_overlapping_logs_is_refused_before_anything_is_written(tmp_path, where):
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    before = tree_digest(tmp_path)
    out = {"equal": logs, "parent": tmp_path, "inside": logs / "site"}[where]
    result = invoke("build", logs, logs / "plan.yaml", "-o", out)
    assert result.exit_code == 1
    assert "LOGS" in result.output or "plan" in result.output
    assert tree_digest(tmp_path) == before


def test_a_folder_that_is_not_a_site_is_never_replaced(tmp_path):
    out = tmp_path / "documents"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    result = invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", out)
    assert result.exit_code == 1
    assert "holds no reportgen site" in result.output
    assert (out / "thesis.tex").read_text() == "precious"


def test_a_folder_with_a_report_json_alone_is_no_site(tmp_path):
    """A report.json with reportgen's schema line is no proof: the folder holds no marker of a site."""
    out = tmp_path / "results"
    out.mkdir()
    (out / "report.json").write_text('{"schema": "reportgen.report/1"}')
    (out / "notes.md").write_text("precious")
    result = invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", out, "-q")
    assert result.exit_code == 1 and "holds no reportgen site" in result.output
    assert (out / "notes.md").read_text() == "precious"


def test_a_site_a_user_added_a_file_to_is_not_replaced(tmp_path):
    """Counter-example to replacing a site: a file reportgen did not write would be deleted with it."""
    out = tmp_path / "site"
    assert invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", out, "-q").exit_code == 0
    assert invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", out, "-q").exit_code == 0  # its own site: replaced
    (out / "my-notes.txt").write_text("precious")
    result = invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", out, "-q")
    assert result.exit_code == 1 and "reportgen did not write (my-notes.txt)" in result.output
    assert (out / "my-notes.txt").read_text() == "precious"


def test_an_output_folder_given_as_a_link_is_replaced_through_it(tmp_path):
    real = tmp_path / "sites" / "jsum"
    assert invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", real, "-q").exit_code == 0
    link = tmp_path / "current"
    link.symlink_to(real)
    result = invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", link, "-q")
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and (link / "index.html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current", "sites"]  # nothing left beside the link
    assert sorted(p.name for p in real.parent.iterdir()) == ["jsum"]


def test_an_output_folder_that_cannot_be_written_is_a_clear_error(tmp_path, monkeypatch):
    """Run as root, a read-only folder can still be written: the refusal is made by mkdtemp here."""
    import tempfile

    def refuse(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    result = invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", tmp_path / "ro" / "site", "-q")
    assert result.exit_code == 1
    assert "the site cannot be written there (Permission denied)" in result.output


def test_a_failed_build_leaves_the_previous_site_intact(tmp_path):
    out = tmp_path / "site"
    assert invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", out, "-q").exit_code == 0
    before = tree_digest(out)
    broken = tmp_path / "templates"
    broken.mkdir()
    (broken / "runs.html").write_text("{% extends 'base.html' %}{% block content %}{{ report.no_such_key.x }}{% endblock %}")
    result = invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", out, "--templates", broken)
    assert result.exit_code == 1
    assert "runs.html" in result.output
    assert tree_digest(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site")] == []


def test_custom_templates_override_built_in_ones_by_name(tmp_path):
    custom = tmp_path / "templates"
    custom.mkdir()
    (custom / "runs.html").write_text("{% extends 'base.html' %}{% block content %}<p id='mine'>{{ report.runs|length }} runs</p>{% endblock %}")
    assert invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", tmp_path / "site", "-q", "--templates", custom).exit_code == 0
    assert "<p id='mine'>9 runs</p>" in (tmp_path / "site" / "runs.html").read_text()


def test_script_in_plan_text_or_run_names_never_reaches_the_page(tmp_path, sample_plan_data, write_plan):
    def edit(d):
        d["campaign"]["question"] = "Is it <script>alert(1)</script> [safe](javascript:alert(2)) <img src=x onerror=alert(3)>?"
        d["campaign"]["notes"] = "**bold** <iframe src=x></iframe> <a href='javascript:alert(5)'>x</a>"
        d["variants"][0]["description"] = "<svg onload=alert(6)>"

    plan = write_plan(sample_plan_data, edit)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "e.jsonl").write_text(
        '{"ts":"2026-11-02T10:00:00Z","type":"run_start","run":"<script>alert(4)</script>"}\n'
    )
    assert invoke("build", logs, plan, "-o", tmp_path / "site", "-q").exit_code == 0
    for page in (tmp_path / "site").rglob("*.html"):  # run and evidence pages too
        html = page.read_text()
        assert "<script>alert" not in html, page.name
        for tag in re.findall(r"<[a-zA-Z][^>]*>", html):
            assert "javascript:" not in tag and " on" not in tag, (page.name, tag)
            assert not tag.startswith(("<img", "<iframe", "<svg")), (page.name, tag)
    assert "<strong>bold</strong>" in (tmp_path / "site" / "index.html").read_text()


def test_frozen_plan_is_the_reference_and_later_edits_are_reported(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    plan = tmp_path / "plan.yaml"
    shutil.copy(SAMPLE_PLAN, plan)
    frozen = invoke("freeze", plan, logs)
    assert frozen.exit_code == 0, frozen.output
    plan.write_text(plan.read_text().replace("threshold: 0.32", "threshold: 0.30"))
    assert invoke("build", logs, plan, "-o", tmp_path / "site", "-q").exit_code == 0
    report = json.loads((tmp_path / "site" / "report.json").read_text())
    assert report["plan"]["modified_since_freeze"] is True
    assert report["plan"]["original_sha256"] != report["plan"]["sha256"]
    assert {v["id"]: v["threshold"] for v in report["variants"]}["control"] == 0.32  # reconciled against the original
    assert "-  threshold: 0.32" in (tmp_path / "site" / "plan.html").read_text()
    assert "edited after it was frozen" in (tmp_path / "site" / "order-note.md").read_text()
    refused = invoke("freeze", plan, logs)
    assert refused.exit_code == 1 and "never replaced" in refused.output


def test_freezing_the_same_plan_twice_is_harmless(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    assert invoke("freeze", SAMPLE_PLAN, logs).exit_code == 0
    again = invoke("freeze", SAMPLE_PLAN, logs)
    assert again.exit_code == 0 and "already frozen" in again.output


def test_the_frozen_record_is_not_read_as_campaign_input(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    invoke("freeze", logs / "plan.yaml", logs)
    assert invoke("build", logs, logs / "plan.yaml", "-o", tmp_path / "site", "-q").exit_code == 0
    report = json.loads((tmp_path / "site" / "report.json").read_text())
    assert not any(i["path"].startswith(".reportgen") or i["path"] == "plan.yaml" for i in report["inputs"])


def test_missing_logs_folder_exits_1(tmp_path):
    result = invoke("build", tmp_path / "nope", SAMPLE_PLAN, "-o", tmp_path / "site")
    assert result.exit_code == 1
    assert "no such folder" in result.output


def test_note_prints_the_order_note(tmp_path):
    result = invoke("note", SAMPLE_LOGS, SAMPLE_PLAN)
    assert result.exit_code == 0
    assert result.output.startswith("# jsum-lora-2026-11: order IG-2026-1102-4090-0417")


def test_every_command_help_has_an_example():
    for command in ("build", "check", "freeze", "init", "note"):
        result = invoke(command, "--help")
        assert result.exit_code == 0 and "Example:" in result.output, command


def test_templates_and_plan_files_ship_inside_the_package():
    templates = resources.files("reportgen.templates")
    assert templates.joinpath("base.html").is_file() and templates.joinpath("assets").joinpath("style.css").is_file()
    plan_files = resources.files("reportgen.plan")
    assert plan_files.joinpath("plan.schema.json").is_file() and plan_files.joinpath("example-plan.yaml").is_file()


def test_installed_command_builds_from_any_folder(tmp_path):
    script = Path(sys.executable).with_name("reportgen")
    if not script.exists():
        pytest.skip("the reportgen console script is not installed in this environment")
    result = subprocess.run(
        [str(script), "build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", "out"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "index.html").is_file()


def test_pipes_and_links_out_of_logs_are_reported_not_read(tmp_path):
    import os

    logs = tmp_path / "logs"
    logs.mkdir()
    os.mkfifo(logs / "pipe")
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"ts":"2026-11-02T09:00:00Z","type":"run_start","run":"outside"}\n')
    (logs / "link.jsonl").symlink_to(secret)
    result = invoke("build", logs, SAMPLE_PLAN, "-o", tmp_path / "site", "-q")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "site" / "report.json").read_text())
    messages = {i["path"]: [p["message"] for p in i["problems"]] for i in report["inputs"]}
    assert messages["pipe"] == ["not a regular file; not read"]
    assert messages["link.jsonl"] == ["a link to a file outside LOGS; not read"]
    assert report["runs"] == []


def test_leftovers_of_a_killed_build_are_cleaned_by_the_next_build(tmp_path):
    dead = 4_000_000  # above the usual pid limit: no such process
    stale = tmp_path / f".site.tmp-{dead}-abc"
    stale.mkdir()
    (stale / "index.html").write_text("half written")
    unrelated = tmp_path / ".site.tmp-notes"
    unrelated.mkdir()
    assert invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", tmp_path / "site", "-q").exit_code == 0
    assert not stale.exists()
    assert unrelated.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site.tmp-notes", "site"]


@pytest.fixture(scope="module")
def single_file(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("single") / "site"
    result = invoke("build", SAMPLE_LOGS, SAMPLE_PLAN, "-o", out, "-q", "--single-file", env={"SOURCE_DATE_EPOCH": "1764000000"})
    assert result.exit_code == 0, result.output
    return out / "report.html"


def test_single_file_report_is_self_contained(single_file):
    html = single_file.read_text()
    assert html.count("* plotly.js v") == 1
    markup = re.sub(r"<script>.*?</script>", "", html, flags=re.DOTALL)
    assert not re.findall(r'\bsrc="', markup), "nothing is loaded from another file"
    links = re.findall(r'href="([^"]*)"', markup)
    assert links and all(link.startswith("#") for link in links)
    ids = set(re.findall(r'\bid="([^"]+)"', html))
    assert {link[1:] for link in links} <= ids, "every in-document link has its target"


def test_single_file_holds_every_page_and_evidence(single_file, sample_site):
    html = single_file.read_text()
    for section in ("p-index", "p-plan", "p-schedule", "p-runs", "p-inputs"):
        assert f'<section id="{section}"' in html
    evidence_pages = sorted(p.stem for p in (sample_site / "evidence").glob("*.html"))
    assert evidence_pages and all(f'id="p-evidence-{name}"' in html for name in evidence_pages)


def test_the_site_is_the_same_with_or_without_the_single_file_but_for_the_link_to_it(single_file, sample_site):
    digest, plain = tree_digest(single_file.parent), tree_digest(sample_site)
    del digest["report.html"]
    del digest[".reportgen-site.json"], plain[".reportgen-site.json"]  # the lists of files it owns differ by one
    assert digest.keys() == plain.keys()
    changed = {path for path in plain if digest[path] != plain[path]}
    assert changed == {path for path in plain if path.endswith(".html")}, "every page's header links to report.html"
    link = re.compile(r'\s*<a class="one-file" href="(?:\.\./)?report\.html">One-file report</a>')
    for path in changed:
        assert link.sub("", (single_file.parent / path).read_text()) == (sample_site / path).read_text(), path
    owned = json.loads((single_file.parent / ".reportgen-site.json").read_text())["files"]
    assert "report.html" in owned and sorted(owned) == owned


def test_excerpts_show_each_cited_line_with_its_context_and_stay_inside_logs(tmp_path):
    from reportgen.ingest import excerpts

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    outside = tmp_path / "secret.log"
    outside.write_text("secret\n")
    (logs / "link.log").symlink_to(outside)
    parts = excerpts(logs, {"a.log": {3, 5, 50, 100}, "link.log": {1}}, context=2)
    assert set(parts) == {"a.log"}
    assert [(p.first_line, len(p.lines), sorted(p.cited)) for p in parts["a.log"]] == [(1, 7, [3, 5]), (48, 5, [50]), (98, 3, [100])]
    assert parts["a.log"][1].lines[2] == "line 50"
