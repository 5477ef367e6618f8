"""Plain words on the site and in the CLI: no rule ids in user-facing text, formulas said in one
sentence with their figure, a value and its threshold at one precision, one named time zone."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.analysis.interval import save_interval
from reportgen.analysis.runs import chain_order
from reportgen.cli import cli
from reportgen.model import Campaign, Run
from reportgen.numbers import compared
from reportgen.render.report import zone_name

RULE_ID = re.compile(r"\(R\d+\b|\bR\d+:|\bR\d+\)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(out), "--single-file"])
    assert result.exit_code == 0, result.output
    return out, result.output


def visible_text(html: str) -> str:
    """The page as read: no scripts (plotly's own code has names like R2), no tags."""
    html = re.sub(r"<script\b.*?</script>", "", html, flags=re.DOTALL)
    return re.sub(r"<[^>]+>", " ", html)


def test_no_rule_id_on_any_page_or_in_the_build_output(site):
    out, printed = site
    pages = sorted(out.rglob("*.html"))
    assert len(pages) > 20
    # The plan page quotes the plan as written; what the user wrote there is theirs.
    found = {p.relative_to(out).as_posix(): RULE_ID.findall(visible_text(p.read_text(encoding="utf-8")))
             for p in pages if p.name not in ("plan.html", "report.html")}
    assert {page: ids for page, ids in found.items() if ids} == {}
    assert RULE_ID.findall(printed) == []
    assert RULE_ID.findall((out / "order-note.md").read_text(encoding="utf-8")) == []


def test_check_prints_no_rule_id():
    result = CliRunner().invoke(cli, ["check", str(SAMPLE_PLAN)])
    assert result.exit_code == 0
    assert "share gpu0 and nothing orders them" in result.output and RULE_ID.findall(result.output) == []


@pytest.mark.parametrize(("value", "threshold", "said"), [
    (0.192, 0.2, ("0.192", "0.200")),  # the plan's 0.20 is not shown as 0.2 beside a three-decimal value
    (0.334, 0.32, ("0.334", "0.320")),
    (12.5, 10.0, ("12.5", "10.0")),
    (0.3, 0.3, ("0.3", "0.3")),  # counter-example: nothing to pad
    (1e-05, 0.2, ("1e-05", "0.2")),  # an exponent form keeps its own digits
    (0.31996, 0.32, ("0.31996", "0.32000")),  # a failing value is never shown equal to its threshold
    (1.50004, 1.5, ("1.50004", "1.50000")),
])
def test_a_value_and_its_threshold_are_said_at_one_precision(value, threshold, said):
    assert compared(value, threshold) == said


def test_the_save_interval_is_said_in_one_plain_sentence_with_its_figure():
    # C = 95 s a save, M = 30 h between interruptions: the best interval is sqrt(2CM) = 4,529 s = 75.5 min.
    def advice(planned: float | None) -> str | None:
        return save_interval([95.0] * 5, [], 0, 40.0, 30.0, planned).advice

    assert advice(75.0) == ("Your 75-minute interval is already within 1% of the best (75.5 min): saving and lost "
                            "work take 4.2% of run time, against 4.2% at best. Keep it.")
    assert advice(30.0) == ("Your 30-minute interval saves more often than it needs to; saving and lost work take "
                            "6.1% of run time, against 4.2% when saving every 75.5 min.")
    assert advice(120.0).startswith("Your 120-minute interval saves too rarely")
    assert advice(None) == ("Save every 75.5 min: saving and the work an interruption loses then take 4.2% of run "
                            "time, the least any interval gives.")
    # Counter-example: no measured save, no advice.
    assert save_interval([], [], 0, 40.0, 30.0, 30.0).advice is None


def test_the_time_zone_is_named_the_same_way_everywhere():
    assert [zone_name(tz) for tz in (UTC, timezone(timedelta(hours=9)), timezone(-timedelta(hours=5, minutes=30)))] == [
        "UTC", "UTC+09:00", "UTC-05:30"]


def test_inspect_shows_times_in_the_zone_the_logs_write_and_names_it():
    result = CliRunner().invoke(cli, ["inspect", str(SAMPLE_LOGS)])
    assert result.exit_code == 0
    assert "in the order they started, times in UTC+09:00, the zone the logs write" in result.output
    assert "2026-11-02 19:55:00+09:00" in result.output  # control-1's start, as the site shows it
    assert "+00:00" not in result.output and not re.search(r"\d{2}T\d{2}:", result.output)


def test_runs_are_listed_in_the_order_they_started_with_continuations_after_the_run_they_resume():
    base = datetime(2026, 11, 2, 9, tzinfo=UTC)
    campaign = Campaign(root="logs")
    for run_id, hour, resumes in (("a-late", 5, None), ("b-early", 1, None), ("a-late-2", 9, "a-late"),
                                  ("c-middle", 3, None), ("z-untimed", None, None)):
        campaign.runs[run_id] = Run(run_id, started_at=base + timedelta(hours=hour) if hour is not None else None,
                                    resumes=resumes)
    assert chain_order(campaign, {"a-late": ["a-late-2"]}) == ["b-early", "c-middle", "a-late", "a-late-2", "z-untimed"]


def test_the_runs_table_shows_each_runs_final_quality_value_with_its_evidence(site):
    out, _ = site
    runs = (out / "runs.html").read_text(encoding="utf-8")
    assert "<th>Final eval_rougeL</th>" in runs
    row = runs[runs.index('id="run-lora-r16-2"'):]
    row = re.sub(r"<[^>]+>", "", row[:row.index("</tr>")])  # the text as read (paths may carry <wbr>)
    assert "0.334" in row and "step 3000" in row and "runs/lora-r16-2/events.jsonl:194" in row


@pytest.mark.parametrize(("value", "said"), [
    (2e-4, "2e-4"), (1.5e-5, "1.5e-5"),  # learning rates: scientific, not "0.0002" or plotly's "200μ"
    (0.0648, "0.0648"), (12.34, "12.3"), (1138.0, "1,138"), (0.001, "0.001"), (0.0, "0"),
])
def test_a_measured_figure_reads_with_three_significant_digits_and_small_ones_in_scientific_notation(value, said):
    from reportgen.numbers import figure

    assert figure(value) == said


@pytest.mark.parametrize(("hours", "said"), [
    (0.0216, "1.3 min"), (59.9 / 60, "59.9 min"), (1.0, "1.0 h"), (46.8, "46.8 h"), (1234.5, "1,234.5 h"), (None, "—"),
])
def test_a_length_of_time_reads_in_minutes_below_an_hour_in_alerts_and_on_pages_alike(hours, said):
    """One way to tell a time: the alerts (time left in the lot, a run silent) and the pages' duration filter."""
    from reportgen.numbers import duration

    assert duration(hours) == said


def test_inspect_of_an_empty_folder_says_no_run_was_found(tmp_path):
    result = CliRunner().invoke(cli, ["inspect", str(tmp_path)])
    assert result.exit_code == 0
    assert result.output.splitlines()[:3] == [f"0 files in {tmp_path}", "", "No run was found in these files."]


@pytest.mark.parametrize(("a", "b", "said"), [(0.334, 0.301, 0.033), (123456.78, 123456.77, 0.01), (1000.001, 1000, 0.001)])
def test_a_difference_of_two_logged_values_carries_no_binary_noise(a, b, said):
    from reportgen.numbers import difference

    assert difference(a, b) == said


@pytest.mark.parametrize(("seconds", "said"), [(1.46, "1.5 s"), (59.9, "59.9 s"), (119.6, "2 min 0 s"), (61.2, "1 min 1 s")])
def test_the_build_time_reads_in_seconds_then_minutes(monkeypatch, seconds, said):
    from reportgen.cli import Progress

    progress = Progress(quiet=True)
    monkeypatch.setattr("time.monotonic", lambda: progress.started + seconds)
    assert progress.elapsed() == said


def test_a_freeze_minutes_late_says_minutes():
    from reportgen.analysis.warnings import _after

    assert [_after(timedelta(minutes=2)), _after(timedelta(hours=5)), _after(timedelta(days=3))] == [
        "2 min", "5.0 h", "3.0 days"]
