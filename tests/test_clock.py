"""The lot clock: at the build's now, the time left in the lot and, for every step still to do, its
projected end (a running training run from its steps left at its measured pace, any other step from the
plan's hours), the overrun past the lot's end and the R8 options; gone when the lot is over or the work done."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.analysis.variance import recent_pace, stretch_pace, wall_pace
from reportgen.build import prepare
from reportgen.cli import cli
from reportgen.ingest import WRITING_SECONDS, WriteTimes, ingest
from reportgen.model import MAX_PROBLEMS_PER_FILE

CUT = datetime.fromisoformat("2026-11-03T10:00:00+09:00")  # during train-r16: lora-r16-2 resumed, at step 1,330


def live_logs(tmp_path: Path, cut: datetime = CUT) -> Path:
    """The sample's logs as they stood at `cut`: every event logged later left out, and the folder of a run
    that had not started (its console log too) and the outputs written at the end not there yet. The console
    logs of runs that had started are kept whole (they carry no time to cut by)."""
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    for log in sorted(logs.rglob("*.jsonl")):
        kept = [line for line in log.read_text(encoding="utf-8").splitlines() if (at := _time(line)) is None or at <= cut]
        log.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        if not kept and log.parent.parent.name == "runs":
            shutil.rmtree(log.parent, ignore_errors=True)
    shutil.rmtree(logs / "outputs")
    return logs


def _time(line: str) -> datetime | None:
    """An event's time; None for a line that is not an event with one (the sample's damaged lines stay)."""
    try:
        return datetime.fromisoformat(json.loads(line)["ts"])
    except (ValueError, KeyError, TypeError):
        return None


def clock_of(logs: Path, now: datetime | None = None):
    return prepare(logs, logs / "plan.yaml", now=now).report["clock"]


def test_a_finished_campaign_has_no_running_clock_and_no_page_shows_one(tmp_path):
    """Counter-example: the sample's every step is done (one dropped): the report is the closing summary."""
    clock = clock_of(SAMPLE_LOGS)
    assert clock["open"] and not clock["running"] and clock["projected_end"] is None
    assert {s["state"] for s in clock["steps"]} == {"done", "dropped"}
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    assert not [p for p in site.rglob("*.html") if 'class="clock' in p.read_text(encoding="utf-8")]


def test_a_running_training_step_ends_when_its_steps_left_are_done_at_its_measured_pace(tmp_path):
    clock = clock_of(live_logs(tmp_path))
    assert clock["now"] == "2026-11-03T09:59:08+09:00" and clock["now_basis"] == "the newest time in the logs"
    assert clock["running"] and clock["hours_left"] == pytest.approx(47.0142, abs=1e-3)
    steps = {s["id"]: s for s in clock["steps"]}
    assert [s["state"] for s in clock["steps"]] == ["done"] * 6 + ["running"] + ["pending"] * 4 + ["dropped"]
    train = steps["train-r16"]
    assert train["basis"].startswith("lora-r16-2: 1,670 steps left of 3,000 (its config's steps) at its 13.1 s a step "
                                     "(steps 1,210 to 1,330, evaluations and checkpoints included)")
    assert train["evidence"]  # the pace's first and last rows
    now = datetime.fromisoformat(clock["now"])
    left = datetime.fromisoformat(train["end"]) - now
    assert left.total_seconds() == pytest.approx(1670 * float(train["basis"].split(" at its ")[1].split(" s")[0]), rel=0.01)
    # The steps to come: train-r64 on gpu0 after train-r16, the others after their dependencies, the plan's hours each.
    assert datetime.fromisoformat(steps["train-r64"]["end"]) - datetime.fromisoformat(train["end"]) == timedelta(hours=9)
    assert steps["train-r64"]["basis"].startswith("not started: the plan's 9 h from")
    assert clock["projected_end"] == steps["error-analysis"]["end"] and clock["overrun_hours"] == 0
    assert clock["options"] == []  # within the lot: nothing to offer


def test_the_clock_is_on_every_page_while_the_lot_is_open_and_the_schedule_shows_the_projection(tmp_path):
    logs = live_logs(tmp_path)
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(logs), str(logs / "plan.yaml"), "-o", str(site), "-q"]).exit_code == 0
    pages = list(site.rglob("*.html"))
    assert all('class="clock" role="status">Lot open: <strong>47.0 h left</strong>' in p.read_text(encoding="utf-8")
               for p in pages if p.name != "report.html")
    schedule = (site / "schedule.html").read_text(encoding="utf-8")
    assert '<h2 id="clock">The lot clock</h2>' in schedule and "lora-r16-2: 1,670 steps left" in schedule


def test_work_projected_past_the_lots_end_says_by_how_much_and_what_r8_offers(tmp_path):
    """Looked at 40 h later with no more logged (a stalled campaign): the work left ends past the lot's end;
    the 7-day lot holds it, and leaving out the useful step still to come (train-r64) is offered."""
    logs = live_logs(tmp_path)
    late = datetime.fromisoformat("2026-11-05T02:00:00+09:00")
    clock = clock_of(logs, now=late)
    assert clock["now_basis"] == "the wall clock" and clock["hours_left"] == 7.0
    assert clock["overrun_hours"] > 0
    options = {o["label"]: o for o in clock["options"]}
    assert not options["RTX 4090, 3 days"]["fits"] and options["RTX 4090, 7 days"]["fits"]
    reduced = options["reduced protocol"]
    assert reduced["note"].startswith("leave out train-r64 (useful), not started: the rest ends")
    end_without = datetime.fromisoformat(reduced["note"].split("the rest ends ")[1][:16] + "+09:00")
    shorter = datetime.fromisoformat(clock["projected_end"]) - timedelta(hours=9)  # without train-r64's 9 h
    assert end_without == shorter.replace(second=0, microsecond=0)  # the note gives the minute


def test_a_lot_that_is_over_has_no_running_clock(tmp_path):
    """Counter-example: after the lot's end nothing is projected against it, whatever is left."""
    clock = clock_of(live_logs(tmp_path), now=datetime.fromisoformat("2026-11-05T09:00:00+09:00"))
    assert not clock["open"] and not clock["running"] and clock["hours_left"] == 0


def test_a_run_with_too_few_rows_of_its_own_is_projected_at_the_pace_of_the_run_it_resumes(tmp_path):
    """Cut when lora-r16-2 had logged one timed row: its steps left go at lora-r16-1's wall-clock pace."""
    clock = clock_of(live_logs(tmp_path, datetime.fromisoformat("2026-11-03T09:33:00+09:00")))
    train = {s["id"]: s for s in clock["steps"]}["train-r16"]
    assert train["state"] == "running"
    assert train["basis"].startswith("lora-r16-2: 1,790 steps left of 3,000 (its config's steps) at lora-r16-1's "), train


def test_a_running_step_with_no_pace_to_project_from_takes_the_plans_hours(tmp_path):
    """Counter-example to the pace projection: cut when control-preds had started (its step event) and no run
    of it had logged, the step ends the plan's 8 h after it started, and says why."""
    clock = clock_of(live_logs(tmp_path, datetime.fromisoformat("2026-11-02T19:52:00+09:00")))
    steps = {s["id"]: s for s in clock["steps"]}
    assert steps["control-preds"]["state"] == "running"
    assert steps["control-preds"]["basis"] == "under way since 2026-11-02 19:50, no run of it logged yet: the plan's 8 h"
    assert steps["control-preds"]["end"] == "2026-11-03T03:50:00+09:00"
    assert steps["train-r16"]["state"] == "pending" and steps["train-r16"]["basis"].startswith("not started")



def test_a_running_run_that_logs_no_total_of_steps_is_said_so_in_the_plans_time_zone(tmp_path):
    """lora-r16-2 at work with a pace but no total of steps in its config: its steps left are unknown, so the step
    takes the plan's hours, and the basis says that, not that no pace was found. The step's start, logged in UTC
    (a machine whose logs are in UTC), is told in the plan's zone (+09:00), as every time on the site is."""
    logs = live_logs(tmp_path)
    run_log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    lines = run_log.read_text(encoding="utf-8").splitlines()
    start = json.loads(lines[0])
    del start["config"]["steps"]
    run_log.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n", encoding="utf-8")
    marks = logs / "campaign" / "events.jsonl"
    in_utc = []
    for line in marks.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        event["ts"] = datetime.fromisoformat(event["ts"]).astimezone(UTC).isoformat().replace("+00:00", "Z")
        in_utc.append(json.dumps(event))
    marks.write_text("\n".join(in_utc) + "\n", encoding="utf-8")
    train = {s["id"]: s for s in clock_of(logs)["steps"]}["train-r16"]
    assert train["state"] == "running"
    assert train["basis"] == ("under way since 2026-11-03 04:10, lora-r16-2 logs no total of steps (no max_steps or like "
                              "it in its sources or config, no steps for train-r16 in the plan), so its steps left are "
                              "unknown: the plan's 9 h"), train["basis"]
    assert train["end"] == "2026-11-03T13:10:00+09:00"
    # The plan's `steps` for train-r16 stands in for the total the run does not log: projected at its pace.
    plan = yaml.safe_load((logs / "plan.yaml").read_text(encoding="utf-8"))
    next(s for s in plan["schedule"]["steps"] if s["id"] == "train-r16")["steps"] = 3000
    (logs / "plan.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    train = {s["id"]: s for s in clock_of(logs)["steps"]}["train-r16"]
    assert train["basis"].startswith("lora-r16-2: 1,670 steps left of 3,000 (the steps of train-r16 in the plan) at its "
                                     "13.1 s a step"), train["basis"]
    # Counter-example: a total the run's config logs wins over the plan's (the test above: "its config's steps").


def test_every_time_the_clock_and_its_alerts_tell_is_in_the_plans_time_zone_though_the_logs_are_in_utc(tmp_path):
    """Every log's times written in UTC, lora-r16-2 with no total of steps and train-r16 planned 60 h: the step
    ends 60 h after its start as logged (in UTC), past the lot's end. The steps still to come ("from ..."), the
    reduced protocol ("the rest ends ...") and the overrun alert ("projected to end ... (its end)") tell the same
    times as report.json's fields, in the plan's zone (+09:00)."""
    logs = live_logs(tmp_path)
    plan = yaml.safe_load((logs / "plan.yaml").read_text(encoding="utf-8"))
    next(s for s in plan["schedule"]["steps"] if s["id"] == "train-r16")["hours"] = 60
    (logs / "plan.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    run_log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    start, *rest = run_log.read_text(encoding="utf-8").splitlines()
    start = json.loads(start)
    del start["config"]["steps"]
    run_log.write_text("\n".join([json.dumps(start), *rest]) + "\n", encoding="utf-8")
    for log in logs.rglob("*.jsonl"):
        lines = []
        for line in log.read_text(encoding="utf-8").splitlines():
            try:
                event = json.loads(line)
                event["ts"] = datetime.fromisoformat(event["ts"]).astimezone(UTC).isoformat().replace("+00:00", "Z")
                line = json.dumps(event)
            except (ValueError, KeyError, TypeError):
                pass  # the sample's damaged lines stay as they are
            lines.append(line)
        log.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def minute(iso: str) -> str:
        return iso[:16].replace("T", " ")

    report = prepare(logs, logs / "plan.yaml").report
    clock = report["clock"]
    steps = {s["id"]: s for s in clock["steps"]}
    assert steps["train-r16"]["end"] == "2026-11-05T16:10:00+09:00"
    pending = [s for s in clock["steps"] if s["state"] == "pending"]
    assert pending and all(s["basis"].endswith(f" from {minute(s['start'])}") for s in pending), pending
    reduced = next(o for o in clock["options"] if o["kind"] == "reduced")
    # Without train-r64 (9 h on gpu0 before evaluate), the rest ends 9 h before error-analysis is projected to.
    rest = datetime.fromisoformat(steps["error-analysis"]["end"]) - timedelta(hours=9)
    assert f"the rest ends {minute(rest.isoformat())}" in reduced["note"], reduced["note"]
    [overrun] = [a for a in report["alerts"] if a["code"] == "overrun"]
    assert f"projected to end {minute(clock['projected_end'])}, " in overrun["message"], overrun["message"]
    assert overrun["message"].endswith("(2026-11-05 09:00)")


def test_source_date_epoch_older_than_the_logs_gives_way_to_the_newest_time_in_them(tmp_path, monkeypatch):
    """A build's now is SOURCE_DATE_EPOCH, unless the logs went on past it: a clock before its own evidence
    would project from rows it has not reached."""
    logs = live_logs(tmp_path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(datetime.fromisoformat("2026-11-03T12:00:00+09:00").timestamp())))
    assert clock_of(logs)["now"] == "2026-11-03T12:00:00+09:00" and clock_of(logs)["now_basis"] == "SOURCE_DATE_EPOCH"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(datetime.fromisoformat("2026-11-03T09:00:00+09:00").timestamp())))
    older = clock_of(logs)
    assert older["now"] == "2026-11-03T09:59:08+09:00"
    assert older["now_basis"] == "the newest time in the logs (SOURCE_DATE_EPOCH is older)"


def test_alerts_while_the_clock_runs_say_what_needs_a_look_and_keep_their_keys(tmp_path):
    """Looked at ten minutes before the lot's end with nothing logged since the cut: the stops fired so far,
    the work projected past the end, and lora-r16-2 silent far longer than it usually logs (hung?)."""
    logs = live_logs(tmp_path)
    report = prepare(logs, logs / "plan.yaml", now=datetime.fromisoformat("2026-11-05T08:50:00+09:00")).report
    by_code: dict[str, list[dict]] = {}
    for alert in report["alerts"]:
        by_code.setdefault(alert["code"], []).append(alert)
    assert [a["key"] for a in by_code["stop"]] == [f"stop:{s['id']}" for s in report["stops"]]
    [overrun] = by_code["overrun"]
    assert overrun["message"].startswith("the work left is projected to end 2026-11-06") and "h past the lot's end" in overrun["message"]
    [silent] = by_code["silent"]
    assert silent["message"].startswith("lora-r16-2 has logged nothing for 46.8 h (it usually logs every 131 s)")
    assert silent["evidence"] == [{"path": "runs/lora-r16-2/events.jsonl", "line": 15}]  # its last timed row
    again = prepare(logs, logs / "plan.yaml", now=datetime.fromisoformat("2026-11-05T08:55:00+09:00")).report
    assert [a["key"] for a in again["alerts"]] == [a["key"] for a in report["alerts"]]  # the same alerts: watch says them once


def test_a_run_that_went_on_to_log_rarely_is_judged_silent_by_how_it_logs_now(tmp_path):
    """lora-r16-2 logs 150 rows 10 s apart, then 60 rows 10 minutes apart (a slower stage): its usual interval is
    that of its last 50 (600 s), so an hour without a row is no alert, where the median of all its rows (10 s)
    would call it hung after 5 minutes; two hours is (the counter-example)."""
    logs = live_logs(tmp_path)
    log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    last = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])
    at, step = datetime.fromisoformat(last["ts"]), last["step"]
    rows = []
    for gap in [10] * 150 + [600] * 60:
        at, step = at + timedelta(seconds=gap), step + 1
        rows.append(json.dumps({"ts": at.isoformat(timespec="milliseconds"), "type": "metric", "run": "lora-r16-2",
                                "step": step, "metrics": {"loss": 1.4}}))
    with log.open("a", encoding="utf-8") as out:
        out.write("\n".join(rows) + "\n")

    def silent(quiet: timedelta) -> list[str]:
        report = prepare(logs, logs / "plan.yaml", now=at + quiet).report
        return [a["message"] for a in report["alerts"] if a["code"] == "silent"]

    assert silent(timedelta(hours=1)) == []
    [said] = silent(timedelta(hours=2))
    assert said.startswith("lora-r16-2 has logged nothing for 2.0 h (it usually logs every 600 s)"), said


def test_no_alert_when_the_run_logs_as_usual_or_the_lot_is_over(tmp_path):
    """Counter-examples: at the newest log time nothing is silent and nothing overruns; after the lot's end
    the report is the closing summary, with no alert."""
    logs = live_logs(tmp_path)
    now = prepare(logs, logs / "plan.yaml").report
    assert {a["code"] for a in now["alerts"]} == {"stop"}
    over = prepare(logs, logs / "plan.yaml", now=datetime.fromisoformat("2026-11-05T09:00:00+09:00")).report
    assert over["alerts"] == []


def test_a_checkpoint_still_on_the_machine_near_the_lots_end_is_an_alert_even_with_the_work_done(tmp_path):
    """lora-r16-2's last transfer not logged: with 80 s left (under twice the 42 s median transfer) its
    checkpoint-2800 is an alert, though every step is done. Counter-examples: with the transfer logged, or
    with ten minutes left, none."""
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(line for line in lines if "checkpoint-2800\",\"seconds\":44.6" not in line), encoding="utf-8")
    near_end = datetime.fromisoformat("2026-11-05T08:58:40+09:00")
    report = prepare(logs, logs / "plan.yaml", now=near_end).report
    assert not report["clock"]["running"]
    [alert] = [a for a in report["alerts"] if a["code"] == "not_transferred"]
    assert alert["key"] == "transfer:ckpt/lora-r16-2/checkpoint-2800"
    assert alert["message"] == ("checkpoint ckpt/lora-r16-2/checkpoint-2800 is still on the rented machine: "
                                "1.3 min left in the lot, less than 2 x its transfer time (41.3 s, the median of its run's "
                                "3 timed transfers)")
    left = report["clock"]["on_machine"]
    assert [(i["kind"], i["name"]) for i in left["items"]] == [("checkpoint", "ckpt/lora-r16-2/checkpoint-2800")]
    # 80 s still hold one transfer of about 41 s (an alert all the same: less than twice it is left); 20 s do not.
    assert left["transfers_timed"] > 0 and left["seconds_needed"] == left["items"][0]["transfer_seconds"] == 41.3
    assert left["fits"] is True
    last_seconds = datetime.fromisoformat("2026-11-05T08:59:40+09:00")
    assert prepare(logs, logs / "plan.yaml", now=last_seconds).report["clock"]["on_machine"]["fits"] is False
    earlier = prepare(logs, logs / "plan.yaml", now=near_end - timedelta(minutes=10)).report
    assert not [a for a in earlier["alerts"] if a["code"] == "not_transferred"]
    whole = prepare(SAMPLE_LOGS, SAMPLE_PLAN, now=near_end).report
    assert whole["clock"]["on_machine"]["items"] == [] and not [a for a in whole["alerts"] if a["code"] == "not_transferred"]
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(logs), str(logs / "plan.yaml"), "-o", str(site), "-q"],
                              env={"SOURCE_DATE_EPOCH": str(int(last_seconds.timestamp()))}).exit_code == 0
    page = (site / "schedule.html").read_text(encoding="utf-8")
    assert "Still on the rented machine (R12): checkpoint ckpt/lora-r16-2/checkpoint-2800" in page
    assert "more than the" in page and "left</strong>" in page


def test_the_gantt_chart_draws_the_steps_still_to_do_as_projected_and_a_line_at_now(tmp_path):
    """While the clock runs: a projected bar for each step still to do (a running one from now), and now
    marked. Counter-example: the finished sample's chart has planned and actual bars only."""
    from reportgen.render import charts

    report = prepare(live_logs(tmp_path), tmp_path / "logs" / "plan.yaml",
                     now=datetime.fromisoformat("2026-11-03T12:00:00+09:00")).report
    figure = charts.schedule_gantt(report["schedule"], report["clock"])
    projected = [trace for trace in figure["data"] if trace["name"] == "projected"]
    assert len(projected) == 1
    ahead = [s for s in report["clock"]["steps"] if s["state"] in ("running", "pending")]
    assert [label.split(" (")[0] for label in projected[0]["y"]] == [s["id"] for s in ahead]
    assert projected[0]["base"][0] == "2026-11-03 12:00:00"  # train-r16, running: from now (local time, as plotly takes it)
    assert any(a["text"] == "now" for a in figure["layout"]["annotations"])
    sample = prepare(SAMPLE_LOGS, SAMPLE_PLAN).report
    finished = charts.schedule_gantt(sample["schedule"], sample["clock"])
    assert [trace["name"] for trace in finished["data"]] == ["planned", "actual"]
    assert not any(a["text"] == "now" for a in finished["layout"]["annotations"])


def _half_written(tmp_path: Path) -> tuple[Path, str, datetime]:
    """The live sample with lora-r16-2's next row half written (no newline yet), its file changed at `changed`."""
    logs = live_logs(tmp_path)
    log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    last = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])
    row = json.dumps({**last, "ts": "2026-11-03T10:00:00+09:00", "type": "metric", "step": last.get("step", 0) + 10,
                      "metrics": {"loss": 1.0}})
    with log.open("a", encoding="utf-8") as handle:
        handle.write(row[: len(row) // 2])
    changed = datetime.fromtimestamp(log.stat().st_mtime, UTC)
    return logs, "runs/lora-r16-2/events.jsonl", changed


def test_a_last_line_being_written_during_the_lot_is_no_damage_and_ends_no_run(tmp_path):
    logs, rel, changed = _half_written(tmp_path)
    report = prepare(logs, logs / "plan.yaml", now=changed + timedelta(seconds=20)).report
    info = next(i for i in report["inputs"] if i["path"] == rel)
    assert not info["problems"] and any("being written" in note for note in info["notes"])
    assert info["skipped"] == 0 and info["lines"] == info["records"] + info["blank"]
    run = next(r for r in report["runs"] if r["id"] == "lora-r16-2")
    assert run["status"] == "unknown"  # still going: the clock projects it
    assert next(s for s in report["clock"]["steps"] if s["id"] == "train-r16")["state"] == "running"


@pytest.mark.parametrize("when", ["long after the file changed", "a build (no wall clock)"])
def test_a_last_line_cut_off_is_damage_when_the_file_stopped_changing_or_the_build_is_not_live(tmp_path, when):
    """Counter-examples: a file untouched for longer than WRITING_SECONDS, and any `build`, report the cut."""
    logs, rel, changed = _half_written(tmp_path)
    now = changed + timedelta(seconds=WRITING_SECONDS + 1) if when.startswith("long") else None
    report = prepare(logs, logs / "plan.yaml", now=now).report
    info = next(i for i in report["inputs"] if i["path"] == rel)
    assert any("cut off" in p["message"] for p in info["problems"]) and info["skipped"] == 1
    run = next(r for r in report["runs"] if r["id"] == "lora-r16-2")
    assert run["status"] == "interrupted" and "cut off" in run["status_reason"]



@pytest.mark.parametrize("live", [True, False], ids=["while written", "a build"])
def test_a_line_being_written_past_the_shown_problems_is_no_damage_either(tmp_path, live):
    """A log with more damaged lines than a file's problems show (MAX_PROBLEMS_PER_FILE) whose last line is
    being written: the cut is counted past the cap, not shown, and is still known for what it is, so that the
    live build counts the file as the same file without that line. Counter-example: a build reports it."""
    logs = tmp_path / "logs"
    (logs / "r").mkdir(parents=True)
    rows = [json.dumps({"ts": "2026-11-02T09:00:00Z", "type": "metric", "run": "r", "step": step, "metrics": {"loss": 1.0}})
            for step in range(1, MAX_PROBLEMS_PER_FILE + 61)]
    stray = "a stray print\n"  # a damaged line after each row, for all but the last ten rows
    whole = "".join(row + "\n" + (stray if step <= MAX_PROBLEMS_PER_FILE + 50 else "") for step, row in enumerate(rows, 1))
    log = logs / "r" / "events.jsonl"
    log.write_text(whole, encoding="utf-8")
    complete = next(i for i in ingest(logs).inputs if i.path == "r/events.jsonl")
    log.write_text(whole + rows[-1][:30], encoding="utf-8")
    now = datetime.fromtimestamp(log.stat().st_mtime, UTC) + timedelta(seconds=5)
    info = next(i for i in ingest(logs, live=now if live else None).inputs if i.path == "r/events.jsonl")
    counts = (info.lines, info.skipped, len(info.problems), info.problems_not_shown, info.cut_off)
    if live:
        assert counts == (complete.lines, complete.skipped, MAX_PROBLEMS_PER_FILE, 50, False)
    else:
        assert counts == (complete.lines + 1, complete.skipped + 1, MAX_PROBLEMS_PER_FILE, 51, True)

def test_each_item_left_on_the_machine_is_judged_by_its_own_runs_transfer_time(tmp_path):
    """lora-r64-1's checkpoints copy off slowly (300 s each, say a larger adapter); lora-r16-2's in about 41 s.
    With 9 minutes left, lora-r64-1's last checkpoint is an alert (under twice its 300 s) and lora-r16-2's is
    not (the counter-example): one campaign-wide median would have called both alike."""
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    for run, dropped in (("lora-r16-2", "checkpoint-2800"), ("lora-r64-1", "checkpoint-2000")):
        log = logs / "runs" / run / "events.jsonl"
        kept = []
        for line in log.read_text(encoding="utf-8").splitlines(keepends=True):
            if '"checkpoint_transfer"' in line and f'/{dropped}"' in line:
                continue
            if run == "lora-r64-1" and '"checkpoint_transfer"' in line:
                record = json.loads(line)
                line = json.dumps({**record, "seconds": 300.0}) + "\n"
            kept.append(line)
        log.write_text("".join(kept), encoding="utf-8")
    report = prepare(logs, logs / "plan.yaml", now=datetime.fromisoformat("2026-11-05T08:51:00+09:00")).report
    items = {i["name"]: i for i in report["clock"]["on_machine"]["items"]}
    assert items["ckpt/lora-r64-1/checkpoint-2000"]["transfer_seconds"] == 300.0
    assert items["ckpt/lora-r16-2/checkpoint-2800"]["transfer_seconds"] == 41.3
    assert [a["key"] for a in report["alerts"] if a["code"] == "not_transferred"] == ["transfer:ckpt/lora-r64-1/checkpoint-2000"]
    assert report["clock"]["on_machine"]["seconds_needed"] == 341.3


def test_a_step_still_to_come_of_a_variant_measured_already_takes_its_measured_pace(tmp_path):
    """A second lora-r16 training step (another seed) still to come while train-r16 runs: its 9 h planned at
    10 s a step become 9 h x the variant's measured s a step / 10 (the median of its runs' wall-clock paces),
    with those runs' rows as evidence. Counter-examples: lora-r64's step (no run of lora-r64 yet) and the
    same step without a planned pace keep the plan's hours."""
    logs = live_logs(tmp_path)
    plan = yaml.safe_load((logs / "plan.yaml").read_text(encoding="utf-8"))
    second = next(s for s in plan["schedule"]["steps"] if s["id"] == "train-r64")
    second.update(variant="lora-r16", runs=["lora-r16-seed2-*"])
    (logs / "plan.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    clock = clock_of(logs)
    step = next(s for s in clock["steps"] if s["id"] == "train-r64")
    assert step["state"] == "pending"
    measured = float(step["basis"].split("at lora-r16's measured ")[1].split(" s a step")[0])
    assert step["basis"].startswith("not started: the plan's 9 h at 10 s a step, at lora-r16's measured ")
    assert "(over lora-r16-1, lora-r16-2; evaluations and checkpoints included)" in step["basis"]
    hours = (datetime.fromisoformat(step["end"]) - datetime.fromisoformat(step["start"])).total_seconds() / 3600
    assert hours == pytest.approx(9 * measured / 10, rel=5e-3) and hours > 9  # the runs are slower than planned (figure: 3 digits)
    assert step["evidence"]
    del second["steps_per_second"]
    (logs / "plan.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    unpaced = next(s for s in clock_of(logs)["steps"] if s["id"] == "train-r64")
    assert unpaced["basis"].startswith("not started: the plan's 9 h from") and not unpaced["evidence"]


def test_with_two_lots_each_gpus_steps_are_judged_against_their_own_lots_end_and_a_gap_is_closed(tmp_path):
    """Two lots: gpu0 for 2 days from 2026-11-02 00:00, gpu1 for 2 days from 2026-11-05 09:00, a day's gap
    between them. train-r64 (gpu0) is projected past gpu0's lot though well before the last lot ends: an
    overrun, which judging it by the last lot's end would miss. evaluate (moved to gpu1) cannot start
    before its lot does and ends within it. Between the lots no machine is rented: no clock, no alert."""
    logs = live_logs(tmp_path)
    plan = yaml.safe_load((logs / "plan.yaml").read_text(encoding="utf-8"))
    first = plan["order"]["lots"][0]
    first.update(start="2026-11-02T00:00:00+09:00", days=2, gpu_names=["gpu0"])
    plan["order"]["lots"].append({**first, "label": "RTX 4090, 2 days (second)", "start": "2026-11-05T09:00:00+09:00",
                                  "gpu_names": ["gpu1"]})
    next(s for s in plan["schedule"]["steps"] if s["id"] == "evaluate")["resource"] = "gpu1"
    (logs / "plan.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    report = prepare(logs, logs / "plan.yaml").report
    clock = report["clock"]
    assert [(lot["gpus"], lot["open"]) for lot in clock["lots"]] == [(["gpu0"], True), (["gpu1"], False)]
    assert clock["window_end"] == "2026-11-04T00:00:00+09:00"  # the lot open now
    steps = {s["id"]: s for s in clock["steps"]}
    r64, evaluate = steps["train-r64"], steps["evaluate"]
    assert r64["deadline"] == "2026-11-04T00:00:00+09:00" and evaluate["deadline"] == "2026-11-07T09:00:00+09:00"
    assert "2026-11-04T00:00" < r64["end"] < "2026-11-05T09:00"  # past its lot, within the window's span
    assert evaluate["start"] == "2026-11-05T09:00:00+09:00" and evaluate["end"] <= evaluate["deadline"]
    late = (datetime.fromisoformat(r64["end"]) - datetime.fromisoformat(r64["deadline"])).total_seconds() / 3600
    assert clock["overrun_hours"] == pytest.approx(late, abs=1e-3) and late > 0
    [overrun] = [a for a in report["alerts"] if a["code"] == "overrun"]
    assert overrun["message"].startswith("step train-r64 is projected to end ") and "past its lot's end (2026-11-04 00:00)" in overrun["message"]
    between = prepare(logs, logs / "plan.yaml", now=datetime.fromisoformat("2026-11-04T12:00:00+09:00")).report
    assert not between["clock"]["open"] and not between["clock"]["running"] and between["alerts"] == []
    assert between["clock"]["hours_left"] == 0


@pytest.mark.parametrize("live", [True, False], ids=["while written", "a build"])
def test_a_trainers_tensorboard_file_and_trainer_state_caught_mid_write(tmp_path, live):
    """Real Trainer output (tests/fixtures/make_fixtures.py) caught while its writer is at work: a TensorBoard
    event file ending mid-record and a trainer_state.json half rewritten (the Trainer rewrites it in place at
    each save). While written (a watch build, the files changed seconds before) neither is damage; a build
    (the counter-example) reports both cut off."""
    from reportgen.ingest import ingest

    logs = tmp_path / "trainer"
    shutil.copytree(Path(__file__).parent / "fixtures" / "campaigns" / "trainer-tb-only", logs)
    events = sorted(logs.rglob("events.out.tfevents*"))[0]
    events.write_bytes(events.read_bytes()[:-37])
    state = sorted(logs.rglob("trainer_state.json"))[0]
    state.write_bytes(state.read_bytes()[: len(state.read_bytes()) // 2])
    campaign = ingest(logs, live=datetime.now(UTC) + timedelta(seconds=5) if live else None)
    caught = [i for i in campaign.inputs if i.path in (events.relative_to(logs).as_posix(), state.relative_to(logs).as_posix())]
    assert len(caught) == 2
    for info in caught:
        if live:
            assert not info.problems and not info.cut_off and any("being written" in n for n in info.notes), info
            assert info.skipped == 0  # nothing counted as unread: no damage warning
        else:
            assert info.cut_off and any("cut off" in p.message for p in info.problems) and info.skipped == 1, info


@pytest.mark.parametrize("live", [True, False], ids=["while written", "a build"])
def test_a_tensorboard_run_outside_any_run_folder_caught_mid_write_is_not_called_stopped_while_written(tmp_path, live):
    """A TensorBoard folder of its own (no Trainer folder around it) whose event file ends mid-record: while a
    watch build finds it being written its run is not interrupted; a build (the counter-example) says it was."""
    from reportgen.analysis.status import run_status
    from reportgen.ingest import ingest

    logs = tmp_path / "tb"
    shutil.copytree(Path(__file__).parent / "fixtures" / "campaigns" / "trainer-tb-outside" / "tb" / "es-nostop", logs / "es-nostop")
    events = sorted((logs / "es-nostop").glob("events.out.tfevents*"))[0]
    events.write_bytes(events.read_bytes()[:-37])
    campaign = ingest(logs, live=datetime.now(UTC) + timedelta(seconds=5) if live else None)
    [run] = [r for r in campaign.runs.values() if events.relative_to(logs).as_posix() in r.sources]
    status = run_status(run, campaign)
    assert (status.status == "interrupted") is not live, status


def test_with_two_lots_at_once_a_checkpoint_is_judged_by_its_own_machines_lot(tmp_path):
    """lora-r16-2's last checkpoint not copied off, 80 s before gpu0's lot ends; train-r16 ran on gpu1, whose
    lot (held at the same time) has two days left: no alert for it. Counter-example: the same logs with one
    lot (test_a_checkpoint_still_on_the_machine_near_the_lots_end_is_an_alert_even_with_the_work_done)."""
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(line for line in lines if "checkpoint-2800\",\"seconds\":44.6" not in line), encoding="utf-8")
    plan = yaml.safe_load((logs / "plan.yaml").read_text(encoding="utf-8"))
    first = plan["order"]["lots"][0]
    plan["order"]["lots"].append({**first, "label": "RTX 4090, second machine", "start": "2026-11-03T09:00:00+09:00",
                                  "gpu_names": ["gpu1"]})
    next(s for s in plan["schedule"]["steps"] if s["id"] == "train-r16")["resource"] = "gpu1"
    (logs / "plan.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    near_end = datetime.fromisoformat("2026-11-05T08:58:40+09:00")
    report = prepare(logs, logs / "plan.yaml", now=near_end).report
    assert [lot["open"] for lot in report["clock"]["lots"]] == [True, True]
    assert "ckpt/lora-r16-2/checkpoint-2800" in [i["name"] for i in report["clock"]["on_machine"]["items"]]
    assert not [a for a in report["alerts"] if a["code"] == "not_transferred"]


def test_a_run_at_work_while_the_lot_is_open_is_no_unknown_end_warning(tmp_path):
    """lora-r16-2 has logged no end at the cut: while the lot is open it is at work, not a run whose end is
    unknown. Counter-example: the same logs once the lot is over warn of it."""
    logs = live_logs(tmp_path)
    during = prepare(logs, logs / "plan.yaml").report
    assert during["clock"]["open"] and not [w for w in during["warnings"] if w["code"] == "unknown_end"]
    after = prepare(logs, logs / "plan.yaml", now=datetime.fromisoformat("2026-11-06T09:00:00+09:00")).report
    assert [w["message"].split(":")[0] for w in after["warnings"] if w["code"] == "unknown_end"] == ["run lora-r16-2"]


def _with_an_a100_lot(tmp_path: Path, hours: dict[str, float] | None = None) -> Path:
    """The live sample with a second machine: an A100 lot (gpu1) of one day from 2026-11-02 12:00, where
    train-r64 runs, and the catalogue's A100 lots; `hours`: steps given other planned hours."""
    logs = live_logs(tmp_path)
    plan = yaml.safe_load((logs / "plan.yaml").read_text(encoding="utf-8"))
    plan["order"]["lots"].append({"label": "A100, 1 day", "gpu": "A100 80GB", "gpus": 1, "gpu_names": ["gpu1"], "days": 1,
                                  "price": 30.0, "start": "2026-11-02T12:00:00+09:00"})
    plan["catalogue"] += [{"label": "A100, 1 day", "gpu": "A100 80GB", "gpus": 1, "days": 1, "price": 30.0},
                          {"label": "A100, 2 days", "gpu": "A100 80GB", "gpus": 1, "days": 2, "price": 55.0}]
    for step in plan["schedule"]["steps"]:
        step["resource"] = "gpu1" if step["id"] == "train-r64" else step["resource"]
        step["hours"] = (hours or {}).get(step["id"], step.get("hours"))
    (logs / "plan.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return logs


def test_with_two_lots_the_longer_lots_offered_are_those_of_the_lot_whose_work_runs_late(tmp_path):
    """Two machines at once: the RTX 4090 lot (gpu0) of the sample and an A100 lot (gpu1) of one day from
    2026-11-02 12:00, where train-r64 now runs. train-r64 cannot start before the build's now (10:00 on the
    3rd) and takes its 9 h: it ends past the A100 lot's end. R8's longer lots are the A100's, for that lot's
    span (its start to train-r64's end, 31 h): one day does not hold it, two days do. Counter-example: the RTX
    4090 lot, whose work ends within it, is offered no longer lot."""
    clock = clock_of(_with_an_a100_lot(tmp_path), now=CUT)
    r64 = next(s for s in clock["steps"] if s["id"] == "train-r64")
    assert r64["deadline"] == "2026-11-03T12:00:00+09:00" and r64["end"] == "2026-11-03T19:00:00+09:00"
    catalogue = {o["label"]: o for o in clock["options"] if o["kind"] == "catalogue"}
    assert set(catalogue) == {"A100, 1 day in place of A100, 1 day", "A100, 2 days in place of A100, 1 day"}
    assert not catalogue["A100, 1 day in place of A100, 1 day"]["fits"]
    assert catalogue["A100, 2 days in place of A100, 1 day"]["fits"]
    assert catalogue["A100, 2 days in place of A100, 1 day"]["note"] == (
        "2 days in place of A100, 1 day: a 48 h window for the 31 h projected from its start (2026-11-02 12:00)")


def test_a_late_step_on_no_gpu_is_the_lot_that_ends_last_s_though_another_is_listed_after_it(tmp_path):
    """A human step (error-analysis, made 100 h) is judged against the end of the lot that ends last, the RTX
    4090's (the A100 lot, listed after it, ends first): the longer lots offered for it are the RTX 4090's, for
    that lot's span. Counter-example: the A100 lot's own late work (train-r64) still gets the A100's."""
    clock = clock_of(_with_an_a100_lot(tmp_path, {"error-analysis": 100}), now=CUT)
    analysis = next(s for s in clock["steps"] if s["id"] == "error-analysis")
    assert analysis["deadline"] == "2026-11-05T09:00:00+09:00" and analysis["end"] > analysis["deadline"]
    catalogue = {o["label"]: o for o in clock["options"] if o["kind"] == "catalogue"}
    assert set(catalogue) == {"A100, 1 day in place of A100, 1 day", "A100, 2 days in place of A100, 1 day",
                              "RTX 4090, 3 days in place of RTX 4090, 3 days", "RTX 4090, 7 days in place of RTX 4090, 3 days",
                              "RTX 4090, 30 days in place of RTX 4090, 3 days"}
    span = (datetime.fromisoformat(analysis["end"]) - datetime.fromisoformat("2026-11-02T09:00:00+09:00")).total_seconds() / 3600
    assert not catalogue["RTX 4090, 3 days in place of RTX 4090, 3 days"]["fits"]
    assert catalogue["RTX 4090, 7 days in place of RTX 4090, 3 days"]["fits"] == (span <= 7 * 24)
    assert "from its start (2026-11-02 09:00)" in catalogue["RTX 4090, 7 days in place of RTX 4090, 3 days"]["note"]


def test_logs_dated_after_the_wall_clock_are_a_warning_of_a_clock_or_time_zone_that_is_off(tmp_path):
    """The watcher's clock two hours behind the logs (a training machine set to the wrong time, or logs read in
    the wrong zone): the runs that logged later than now are named, with how far ahead the latest is. Counter-
    examples: a few minutes ahead is two clocks a little apart; a build's own now (the newest time) never is."""
    logs = live_logs(tmp_path)
    behind = prepare(logs, logs / "plan.yaml", now=CUT - timedelta(hours=2)).report
    [ahead] = [w for w in behind["warnings"] if w["code"] == "ahead_of_clock"]
    assert ahead["message"].startswith("2 runs (lora-r16-2, lora-r16-1) logged times up to 2.0 h after this build's clock")
    # Each run's latest record: lora-r16-2's last line (it is still at work); lora-r16-1's last readable row, the line
    # before the cut one it ends with (interrupted: no end logged).
    lines = {e["path"]: e["line"] for e in ahead["evidence"]}
    for path, cut in (("runs/lora-r16-2/events.jsonl", 0), ("runs/lora-r16-1/events.jsonl", 1)):
        assert lines[path] == len((logs / path).read_text(encoding="utf-8").splitlines()) - cut, path
    assert behind["clock"]["now_basis"] == "the wall clock" and "this build's clock (2026-11-03 08:00 " in ahead["message"]
    for report in (prepare(logs, logs / "plan.yaml", now=CUT - timedelta(minutes=4)).report, prepare(logs, logs / "plan.yaml").report):
        assert not [w for w in report["warnings"] if w["code"] == "ahead_of_clock"]


@pytest.mark.parametrize("case", ["at work", "still too long", "a build"])
def test_a_wandb_run_at_work_is_not_interrupted_for_an_exit_it_has_not_logged_yet(tmp_path, case):
    """A real W&B offline run with no exit record (its .wandb cut at a block, debug.log without the exit hook's
    line: tests/fixtures/make_fixtures.py) whose files changed seconds before a live build is at work: its status is
    not `interrupted`, and the file that said so carries a note. Counter-examples: its files still for longer than
    WRITING_SECONDS, or a build that is not live: interrupted."""
    import os

    from reportgen.analysis.status import run_status

    killed = Path(__file__).parent / "fixtures" / "wandb" / "resumed" / "wandb" / "offline-run-20261204_210431-kill1234"
    logs = tmp_path / "logs"
    shutil.copytree(killed, logs / "wandb" / killed.name)
    now = datetime.now(UTC)
    when = (now - timedelta(seconds=5 if case != "still too long" else WRITING_SECONDS + 60)).timestamp()
    for path in (logs / "wandb").rglob("*"):
        os.utime(path, (when, when))
    campaign = ingest(logs, live=now if case != "a build" else None)
    [run] = campaign.runs.values()
    status = run_status(run, campaign)
    if case == "at work":
        assert status.status != "interrupted", status
        notes = [n for info in campaign.inputs for n in info.notes if "the run is at work, not taken as interrupted" in n]
        assert notes, [info.notes for info in campaign.inputs]
    else:
        assert status.status == "interrupted", status


@pytest.mark.parametrize("live", [True, False], ids=["while written", "a build"])
def test_a_keras_log_whose_last_row_is_being_written_is_no_interrupted_run(tmp_path, live):
    """Keras's CSVLogger (tests/fixtures/keras/clean) caught mid-row while it writes: in a live build the run is at
    work, not interrupted for its cut row; in a build (the counter-example) the cut row says its writer stopped."""
    from reportgen.analysis.status import run_status

    logs = tmp_path / "keras"
    shutil.copytree(Path(__file__).parent / "fixtures" / "keras" / "clean", logs)
    (logs / "stdout.log").unlink()  # the console would tell the run's end
    log = logs / "training.log"
    log.write_bytes(log.read_bytes()[:-9])
    campaign = ingest(logs, live=datetime.now(UTC) + timedelta(seconds=5) if live else None)
    [run] = campaign.runs.values()
    assert (run_status(run, campaign).status == "interrupted") is not live, run_status(run, campaign)


@pytest.mark.parametrize("config, why", [({"rank": 16}, "lora-r16-3 logs no total of steps"),
                                         ({"rank": 16, "steps": 3000}, "lora-r16-3 has logged no step yet")])
def test_a_run_of_a_running_step_whose_end_cannot_be_told_is_said_beside_the_one_projected(tmp_path, config, why):
    """Beside lora-r16-2 (projected at its pace), lora-r16-3 of the same step is at work with no total of steps, or
    with no step logged yet: the step's basis says why its end cannot be told, after lora-r16-2's projection."""
    logs = live_logs(tmp_path)
    other = logs / "runs" / "lora-r16-3"
    other.mkdir()
    rows = [{"ts": "2026-11-03T09:50:00.000+09:00", "type": "run_start", "run": "lora-r16-3", "config": config,
             "variant": "lora-r16"}]
    if "steps" not in config:
        rows += [{"ts": f"2026-11-03T09:5{i}:00.000+09:00", "type": "metric", "run": "lora-r16-3", "step": 10 * i,
                  "metrics": {"loss": 2.0}} for i in (1, 2)]
    (other / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    train = {s["id"]: s for s in clock_of(logs)["steps"]}["train-r16"]
    assert train["state"] == "running"
    assert train["basis"].startswith("lora-r16-2: 1,670 steps left of 3,000"), train["basis"]
    assert f"; {why}" in train["basis"], train["basis"]


def test_a_running_run_with_one_timed_row_and_no_other_run_of_its_step_is_said_to_have_no_pace(tmp_path):
    """lora-r64-9 has started train-r64 with its total logged and one timed row: no pace of its own and no other
    run of the step to borrow one from, so the step takes the plan's hours and says why."""
    logs = live_logs(tmp_path)
    run = logs / "runs" / "lora-r64-9"
    run.mkdir()
    rows = [{"ts": "2026-11-03T09:50:00.000+09:00", "type": "run_start", "run": "lora-r64-9", "config": {"steps": 3000},
             "variant": "lora-r64"},
            {"ts": "2026-11-03T09:55:00.000+09:00", "type": "metric", "run": "lora-r64-9", "step": 10, "metrics": {"loss": 2.0}}]
    (run / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    train = {s["id"]: s for s in clock_of(logs)["steps"]}["train-r64"]
    assert train["state"] == "running"
    assert train["basis"] == ("under way since 2026-11-03 09:50, lora-r64-9 has too few timed steps for a pace, and no "
                              "other run of the step has one: the plan's 9 h"), train["basis"]


def test_a_run_with_no_end_while_the_lot_is_open_is_shown_at_work_on_its_page_and_the_runs_list(tmp_path):
    """lora-r16-2 has logged no end at the cut: its page and the Runs list show it at work. Counter-examples: a
    run that logged its end during the lot is not at work, and once the lot is over the same run is unknown."""
    logs = live_logs(tmp_path)
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(logs), str(logs / "plan.yaml"), "-o", str(site), "-q"]).exit_code == 0
    runs = {r["id"]: r for r in json.loads((site / "report.json").read_text(encoding="utf-8"))["runs"]}
    assert [i for i, r in runs.items() if r["at_work"]] == ["lora-r16-2"] and runs["lora-r16-2"]["status"] == "unknown"
    assert runs["control-2"]["status"] == "completed" and not runs["control-2"]["at_work"]
    page = (site / runs["lora-r16-2"]["page"]).read_text(encoding="utf-8")
    assert '<span class="badge badge-at_work">at work</span></h1>' in page
    assert "No end logged yet while the lot is open: at work, as the lot clock takes it; its last record is from" in page
    listed = (site / "runs.html").read_text(encoding="utf-8")
    assert listed.count("badge-at_work") == 1 and "no end logged yet, and the lot is open" in listed
    assert '<span class="badge badge-completed">completed</span>' in (site / runs["control-2"]["page"]).read_text(encoding="utf-8")

    after = tmp_path / "after"
    env = {"SOURCE_DATE_EPOCH": str(int(datetime.fromisoformat("2026-11-06T09:00:00+09:00").timestamp()))}
    assert CliRunner().invoke(cli, ["build", str(logs), str(logs / "plan.yaml"), "-o", str(after), "-q"], env=env).exit_code == 0
    runs = {r["id"]: r for r in json.loads((after / "report.json").read_text(encoding="utf-8"))["runs"]}
    assert not any(r["at_work"] for r in runs.values()) and runs["lora-r16-2"]["status"] == "unknown"
    page = (after / runs["lora-r16-2"]["page"]).read_text(encoding="utf-8")
    assert '<span class="badge badge-unknown">unknown</span></h1>' in page and "at work" not in page


def test_a_run_shorter_than_an_hour_tells_its_time_in_minutes(tmp_path):
    """A run of 20 minutes was "0.3 h" and one of 2 minutes "0.0 h": lengths of time below an hour are minutes."""
    logs = live_logs(tmp_path)
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(logs), str(logs / "plan.yaml"), "-o", str(site), "-q"]).exit_code == 0
    runs = json.loads((site / "report.json").read_text(encoding="utf-8"))["runs"]
    short = next(r for r in runs if r["wall_hours"] and r["wall_hours"] < 1)
    page = (site / short["page"]).read_text(encoding="utf-8")
    assert f"<tr><th>Wall-clock</th><td>{short['wall_hours'] * 60:,.1f} min</td></tr>" in page
    listed = (site / "runs.html").read_text(encoding="utf-8")
    assert f'<td class="num">{short["gpu_hours"] * 60:,.1f} min</td>' in listed
    late = clock_of(logs, now=datetime.fromisoformat("2026-11-05T08:30:00+09:00"))  # half an hour before the lot's end
    assert late["hours_left"] == 0.5
    closing = tmp_path / "closing"
    env = {"SOURCE_DATE_EPOCH": str(int(datetime.fromisoformat("2026-11-05T08:30:00+09:00").timestamp()))}
    assert CliRunner().invoke(cli, ["build", str(logs), str(logs / "plan.yaml"), "-o", str(closing), "-q"], env=env).exit_code == 0
    assert "Lot open: <strong>30.0 min left</strong>" in (closing / "index.html").read_text(encoding="utf-8")


def _paced(logs: Path, seconds_per_step: float) -> None:
    """lora-r16-2 goes on at another pace: ten more rows, ten steps apart, after its last (step 1,330)."""
    log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    last = datetime.fromisoformat(json.loads(log.read_text(encoding="utf-8").splitlines()[-1])["ts"])
    rows = [{"ts": (last + timedelta(seconds=seconds_per_step * 10 * n)).isoformat(timespec="milliseconds"), "type": "metric",
             "run": "lora-r16-2", "step": 1330 + 10 * n, "metrics": {"loss": 1.45}} for n in range(1, 11)]
    with log.open("a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(row) + "\n" for row in rows))


def test_a_run_that_slowed_down_is_projected_at_its_recent_pace(tmp_path):
    """lora-r16-2 ran at 13.1 s a step, then at 60: its whole run's pace (34.4 s) would project it hours too
    early. The last quarter of its logged time goes at 60 s a step, and that is the pace its end is projected at."""
    logs = live_logs(tmp_path)
    _paced(logs, 60)
    clock = clock_of(logs)
    train = next(s for s in clock["steps"] if s["id"] == "train-r16")
    assert train["basis"].startswith("lora-r16-2: 1,570 steps left of 3,000 (its config's steps) at its recent 60 s a step "
                                     "(steps 1,400 to 1,430, the last 25% of its logged time; 34.4 s a step over steps "
                                     "1,210 to 1,430, evaluations and checkpoints included): 26.2 h"), train["basis"]
    now = datetime.fromisoformat(clock["now"])
    assert (datetime.fromisoformat(train["end"]) - now).total_seconds() == pytest.approx(1570 * 60, abs=1)
    assert [e["line"] for e in train["evidence"]] == [22, 25]  # the recent part's first row (step 1,400) and the last


@pytest.mark.parametrize("seconds, kept", [
    (5, "at its 9.42 s a step (steps 1,210 to 1,430, evaluations and checkpoints included): 4.1 h"),
    (14, "at its 13.5 s a step (steps 1,210 to 1,430, evaluations and checkpoints included)"),
])
def test_a_run_that_sped_up_or_slowed_a_little_keeps_its_whole_runs_pace(tmp_path, seconds, kept):
    """Counter-examples: lora-r16-2 went on at 5 s a step after 13.1: its recent pace is quicker than its whole
    run's, and the whole run's (the later end) is kept until it catches up. At 14 s a step its recent pace is
    within RECENT_MARGIN of its whole run's, which it keeps (a projection that flipped between two near paces at
    every build would say nothing)."""
    logs = live_logs(tmp_path)
    _paced(logs, seconds)
    train = next(s for s in clock_of(logs)["steps"] if s["id"] == "train-r16")
    assert train["basis"].startswith(f"lora-r16-2: 1,570 steps left of 3,000 (its config's steps) {kept}"), train["basis"]


def test_a_step_whose_run_logs_steps_but_no_time_is_under_way_not_to_come(tmp_path):
    """DVCLive logs no time unless asked (log_metric(timestamp=True)): a run of train-r64 written by it (the real
    fixture: killed at step 12 and resumed to 19, no end) has begun the step, which the clock took as not started,
    "the plan's 9 h from now" after train-r16. With no time there is no pace: its steps left take their share of the
    plan's hours, from now. Counter-example: without the plan's `steps` (no total of steps) the plan's hours from
    now."""
    logs = live_logs(tmp_path)
    shutil.copytree(Path(__file__).parent / "fixtures" / "dvclive" / "resumed", logs / "lora-r64-1")
    plan = yaml.safe_load((logs / "plan.yaml").read_text(encoding="utf-8"))
    next(s for s in plan["schedule"]["steps"] if s["id"] == "train-r64")["steps"] = 3000
    (logs / "with-steps.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    report = prepare(logs, logs / "with-steps.yaml").report
    clock, runs = report["clock"], {r["id"]: r for r in report["runs"]}
    assert runs["lora-r64-1"]["started_at"] is None and runs["lora-r64-1"]["last_step"] == 19
    steps = {s["id"]: s for s in clock["steps"]}
    r64 = steps["train-r64"]
    assert r64["state"] == "running" and r64["start"] is None
    assert r64["basis"] == ("lora-r64-1 has logged steps 0 to 19 and no time, so no pace: its 2,981 steps left of 3,000 "
                            "(the steps of train-r64 in the plan) at the plan's 9 h for the whole step: 8.9 h")
    now = datetime.fromisoformat(clock["now"])
    assert (datetime.fromisoformat(r64["end"]) - now).total_seconds() == pytest.approx(9 * 3600 * 2981 / 3000, abs=1)
    assert [e["path"] for e in r64["evidence"]] == ["lora-r64-1/dvclive/plots/metrics/acc.tsv"]
    assert r64["evidence"][0]["line"] == 22  # step 19's row: below the header and step 12 logged twice

    without = {s["id"]: s for s in clock_of(logs)["steps"]}["train-r64"]
    assert without["state"] == "running" and without["basis"] == (
        "lora-r64-1 has logged steps 0 to 19 and no time, so no pace, and no total of steps: the plan's 9 h from now")
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(logs), str(logs / "with-steps.yaml"), "-o", str(site), "-q"]).exit_code == 0
    assert "lora-r64-1 has logged steps 0 to 19 and no time" in (site / "schedule.html").read_text(encoding="utf-8")


def test_one_long_gap_before_the_last_row_is_no_recent_pace(tmp_path):
    """Counter-example: lora-r16-2 logs one more row an hour after its last (a long save, an evaluation). The last
    quarter of its logged time holds that row alone, and one interval is no pace: the whole run's is kept."""
    logs = live_logs(tmp_path)
    log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    last = datetime.fromisoformat(json.loads(log.read_text(encoding="utf-8").splitlines()[-1])["ts"])
    row = {"ts": (last + timedelta(hours=1)).isoformat(timespec="milliseconds"), "type": "metric", "run": "lora-r16-2",
           "step": 1340, "metrics": {"loss": 1.45}}
    with log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
    train = next(s for s in clock_of(logs)["steps"] if s["id"] == "train-r16")
    assert train["basis"].startswith("lora-r16-2: 1,660 steps left of 3,000 (its config's steps) at its 39.8 s a step "
                                     "(steps 1,210 to 1,340, evaluations and checkpoints included)"), train["basis"]


def test_the_recent_pace_of_a_run_resumed_under_its_own_name_is_measured_after_its_steps_went_back():
    """A run logs steps 0 to 1,000 at 36 s a step, is resumed from its checkpoint at step 800 a minute later under the
    same name, and is back at step 1,000 at the same pace. The last quarter of its whole logged time reaches back
    before the restart, where step 910 was logged: measured from there, its pace would be 117 s a step. Measured
    after its steps went back, it is the 36 s it goes at."""
    start = pd.Timestamp("2026-11-03T00:00:00+09:00")
    before = [(start + pd.Timedelta(seconds=36 * step), step) for step in range(0, 1001, 10)]
    restart = before[-1][0] + pd.Timedelta(minutes=1)
    after = [(restart + pd.Timedelta(seconds=36 * (step - 800)), step) for step in range(800, 1001, 10)]
    frame = pd.DataFrame({"ts": [t for t, _ in before + after], "step": [s for _, s in before + after],
                          "path": "run/log.csv", "line": range(2, len(before) + len(after) + 2)})
    pace = recent_pace(frame)
    assert pace.seconds_per_step == pytest.approx(36) and pace.first.at > restart.to_pydatetime()
    assert (pace.first.step, pace.last.step) == (950, 1000)


def _untimed_runs(tmp_path: Path, total: int) -> Path:
    """Two DVCLive runs of train-r64 with no time (the real fixture): lora-r64-2 at step 19, lora-r64-1 as it stood
    at step 9 (its rows past it cut off); the plan gives train-r64 `total` steps."""
    logs = live_logs(tmp_path)
    fixture = Path(__file__).parent / "fixtures" / "dvclive" / "resumed"
    for name in ("lora-r64-1", "lora-r64-2"):
        shutil.copytree(fixture, logs / name)
    for tsv in (logs / "lora-r64-1").rglob("*.tsv"):
        lines = tsv.read_text(encoding="utf-8").splitlines(keepends=True)
        tsv.write_text(lines[0] + "".join(line for line in lines[1:] if int(line.split("\t")[0]) <= 9), encoding="utf-8")
    plan = yaml.safe_load((logs / "plan.yaml").read_text(encoding="utf-8"))
    next(s for s in plan["schedule"]["steps"] if s["id"] == "train-r64")["steps"] = total
    (logs / "with-steps.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return logs


def test_a_step_of_several_untimed_runs_ends_when_the_one_with_the_most_steps_left_does(tmp_path):
    logs = _untimed_runs(tmp_path, 3000)
    clock = prepare(logs, logs / "with-steps.yaml").report["clock"]
    r64 = next(s for s in clock["steps"] if s["id"] == "train-r64")
    assert r64["basis"].startswith("lora-r64-1 has logged steps 0 to 9 and no time, so no pace: its 2,991 steps left")
    assert "; lora-r64-2 has logged steps 0 to 19 and no time, so no pace: its 2,981 steps left" in r64["basis"]
    now = datetime.fromisoformat(clock["now"])
    assert (datetime.fromisoformat(r64["end"]) - now).total_seconds() == pytest.approx(9 * 3600 * 2991 / 3000, abs=1)


def test_an_untimed_run_at_the_last_of_its_steps_is_no_work_left(tmp_path):
    """With no time and no end logged (DVCLive writes none), a run at the last of its steps has none left: the step is
    done, not running "0 steps left" at every build. DVCLive counts steps from 0: steps 0 to 19 are all 20. Counter-
    example: a total of 21 leaves the step running."""
    logs = _untimed_runs(tmp_path, 20)
    shutil.rmtree(logs / "lora-r64-1")
    clock = prepare(logs, logs / "with-steps.yaml").report["clock"]
    r64 = next(s for s in clock["steps"] if s["id"] == "train-r64")
    assert r64["state"] == "done" and r64["end"] is None
    assert r64["basis"] == ("lora-r64-2 has logged steps 0 to 19 and no time: step 19 is the last of its 20 (the steps of "
                            "train-r64 in the plan), with no end logged")
    assert clock["projected_end"] == next(s for s in clock["steps"] if s["id"] == "error-analysis")["end"]
    plan = yaml.safe_load((logs / "with-steps.yaml").read_text(encoding="utf-8"))
    next(s for s in plan["schedule"]["steps"] if s["id"] == "train-r64")["steps"] = 21
    (logs / "with-steps.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    r64 = next(s for s in prepare(logs, logs / "with-steps.yaml").report["clock"]["steps"] if s["id"] == "train-r64")
    assert r64["state"] == "running" and "steps left of 21" in r64["basis"]


@pytest.mark.parametrize("last, state", [(2999, "done"), (2997, "running")])
def test_a_timed_run_at_the_last_of_its_steps_with_no_end_logged_is_no_work_left(tmp_path, last, state):
    """lora-r16-2 logs step 2,999 of its 3,000 (counted from 0, its last) and no end: its step is done at that
    record, not projected "0 steps left" from now at every build. Counter-example: at step 2,997 it is running."""
    logs = live_logs(tmp_path)
    log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    at = datetime.fromisoformat(json.loads(log.read_text(encoding="utf-8").splitlines()[-1])["ts"]) + timedelta(minutes=10)
    with log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"ts": at.isoformat(timespec="milliseconds"), "type": "metric", "run": "lora-r16-2",
                                 "step": last, "metrics": {"loss": 1.4}}) + "\n")
    report = prepare(logs, logs / "plan.yaml").report
    train = next(s for s in report["clock"]["steps"] if s["id"] == "train-r16")
    assert train["state"] == state, train["basis"]
    run = next(r for r in report["runs"] if r["id"] == "lora-r16-2")
    assert run["status"] == "unknown" and run["at_work"] == (state == "running")  # at its last step: no work left
    later = prepare(logs, logs / "plan.yaml", now=at + timedelta(hours=2)).report  # nothing logged for two hours
    hung = [a for a in later["alerts"] if a["code"] == "silent" and a["key"].startswith("silent:lora-r16-2:")]
    assert len(hung) == (state == "running")  # at its last step, its silence is no hung job
    if state == "done":
        assert train["basis"] == ("lora-r16-2 has logged step 2,999, the last of its 3,000 (its config's steps), with no end "
                                  f"logged: its last record at {at.strftime('%Y-%m-%d %H:%M')}")
        assert datetime.fromisoformat(train["end"]) == at.replace(microsecond=0)
        assert train["evidence"] == [{"path": "runs/lora-r16-2/events.jsonl", "line": 16}]


def test_the_steps_left_of_a_run_resumed_under_its_own_name_count_from_the_step_it_is_at(tmp_path):
    """lora-r16-2 reached step 1,330, then logs step 1,300 ten minutes later (resumed from an earlier checkpoint
    under the same name): it is at step 1,300, with 1,700 steps left of 3,000, not 1,670 from its highest step.
    Counter-example: without the restart, 1,670 (the first test of this file)."""
    logs = live_logs(tmp_path)
    log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    last = datetime.fromisoformat(json.loads(log.read_text(encoding="utf-8").splitlines()[-1])["ts"])
    with log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"ts": (last + timedelta(minutes=10)).isoformat(timespec="milliseconds"), "type": "metric",
                                 "run": "lora-r16-2", "step": 1300, "metrics": {"loss": 1.45}}) + "\n")
    train = next(s for s in clock_of(logs)["steps"] if s["id"] == "train-r16")
    assert train["basis"].startswith("lora-r16-2: 1,700 steps left of 3,000 (its config's steps) at its "), train["basis"]


def test_a_step_whose_run_is_dated_only_by_its_start_is_under_way(tmp_path):
    """torchtune's DiskLogger dates its file by its name (log_<unix seconds>.txt) and none of its lines: a run of it
    has a start and no time after it, so no span. Its step was "not started" while it logged (seen live); it is
    under way since that start, its steps left at their share of the plan's hours. The real fixture's file,
    renamed to start an hour before the cut."""
    logs = live_logs(tmp_path)
    (logs / "lora-r64-1").mkdir()
    started = CUT - timedelta(hours=1)
    shutil.copy(Path(__file__).parent / "fixtures" / "torchtune" / "clean" / "log_1796418366.txt",
                logs / "lora-r64-1" / f"log_{int(started.timestamp())}.txt")
    plan = yaml.safe_load((logs / "plan.yaml").read_text(encoding="utf-8"))
    next(s for s in plan["schedule"]["steps"] if s["id"] == "train-r64")["steps"] = 3000
    (logs / "with-steps.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    r64 = next(s for s in prepare(logs, logs / "with-steps.yaml").report["clock"]["steps"] if s["id"] == "train-r64")
    assert r64["state"] == "running" and datetime.fromisoformat(r64["start"]) == started
    assert r64["basis"] == ("lora-r64-1 has logged steps 1 to 10 and no time since its start at 2026-11-03 09:00, so no "
                            "pace: its 2,990 steps left of 3,000 (the steps of train-r64 in the plan) at the plan's 9 h for "
                            "the whole step: 9.0 h")


def _seen_untimed(tmp_path: Path, total: int = 3000):
    """lora-r64-2 written by DVCLive with no time (the real fixture), its logs seen by a watcher: the files' times put
    at 10:00:00, 10:00:20 and 10:00:40 (each a build's look), and a function of the alerts of a build at a later now."""
    logs = _untimed_runs(tmp_path, total)
    shutil.rmtree(logs / "lora-r64-1")
    metrics = sorted((logs / "lora-r64-2").rglob("*.tsv"))
    writes = WriteTimes()

    def look(at: datetime, moved: bool = True) -> list[dict]:
        if moved:
            for tsv in metrics:
                os.utime(tsv, (at.timestamp(), at.timestamp()))
        report = prepare(logs, logs / "with-steps.yaml", now=at + timedelta(seconds=1), writes=writes).report
        return [a for a in report["alerts"] if a["code"] == "silent" and "lora-r64-2" in a["key"]]

    return look, metrics


def test_a_run_whose_records_keep_no_time_is_silent_when_its_logs_stop_changing_as_the_watcher_saw_them(tmp_path):
    """lora-r64-2's rows keep no time, so its last row says nothing of when it was written; the watcher saw its logs
    change every 20 s. Four minutes without a change is within the 5-minute floor; six minutes is an alert, citing
    the log that changed last, under a key that holds until the run writes again."""
    look, metrics = _seen_untimed(tmp_path)
    start = datetime.fromisoformat("2026-11-03T10:00:00+09:00")
    for n in range(3):
        assert look(start + timedelta(seconds=20 * n)) == []
    last = start + timedelta(seconds=40)
    assert look(last + timedelta(minutes=4), moved=False) == []
    [alert] = look(last + timedelta(minutes=6), moved=False)
    # Its logs all change together: the message names the first by path, the evidence the last changed (by path).
    often, latest = (m.relative_to(tmp_path / "logs").as_posix() for m in (metrics[0], metrics[-1]))
    assert alert["message"] == (f"lora-r64-2 has written nothing for 6.0 min (its records keep no time; {often} changed "
                                "every 20 s as the watcher saw it), with no end: is it hung?")
    assert alert["evidence"] == [{"path": latest, "line": None}]
    assert [a["key"] for a in look(last + timedelta(minutes=7), moved=False)] == [alert["key"]]


def test_an_untimed_run_is_not_judged_silent_before_the_watcher_saw_its_logs_change(tmp_path):
    """Counter-examples: the first time seen of a log is when it was last written before the watcher looked, not
    how often it is: an hour later, no alert. Nor without a watcher (a build sees each log once)."""
    look, _metrics = _seen_untimed(tmp_path)
    start = datetime.fromisoformat("2026-11-03T10:00:00+09:00")
    assert look(start) == []
    assert look(start + timedelta(hours=1), moved=False) == []
    logs = tmp_path / "logs"
    report = prepare(logs, logs / "with-steps.yaml", now=start + timedelta(hours=1)).report
    assert [a for a in report["alerts"] if a["code"] == "silent" and "lora-r64-2" in a["key"]] == []


def test_an_untimed_run_at_the_last_of_its_steps_is_not_silent(tmp_path):
    """Counter-example: lora-r64-2 at step 19 of 20 has no work left (DVCLive logs no end): its logs no longer changing
    is no hung job."""
    look, _metrics = _seen_untimed(tmp_path, total=20)
    start = datetime.fromisoformat("2026-11-03T10:00:00+09:00")
    for n in range(3):
        look(start + timedelta(seconds=20 * n))
    assert look(start + timedelta(minutes=30), moved=False) == []


def test_the_watcher_keeps_each_logs_modification_times_as_it_saw_them_change(tmp_path):
    """A time is added when the log changed since the last look, and only then; a log put back in time (another file
    at its path) starts anew; a log gone is forgotten; the last WriteTimes.KEEP are kept."""
    log = tmp_path / "a.log"
    log.write_text("x\n", encoding="utf-8")
    found, writes = {"a.log": (log, b"")}, WriteTimes()

    def seen_at(*seconds: int) -> list[int]:
        for second in seconds:
            os.utime(log, (second, second))
            times = writes.look(found)["a.log"]
        return [int(t.timestamp()) for t in times]

    assert seen_at(1000, 1000, 1020) == [1000, 1020]
    assert seen_at(500) == [500]
    assert writes.look({}) == {} and seen_at(700) == [700]
    assert seen_at(*range(701, 800)) == list(range(800 - WriteTimes.KEEP, 800))


def _resumed(down: pd.Timedelta, after: range) -> pd.DataFrame:
    """A run at 36 s a step over steps 0 to 1,000, down for `down`, then resumed under its own name from its
    checkpoint at step 800, logging the steps `after` at the same pace."""
    start = pd.Timestamp("2026-11-03T00:00:00+09:00")
    before = [(start + pd.Timedelta(seconds=36 * step), step) for step in range(0, 1001, 10)]
    restart = before[-1][0] + down
    rows = before + [(restart + pd.Timedelta(seconds=36 * (step - 800)), step) for step in after]
    return pd.DataFrame({"ts": [t for t, _ in rows], "step": [s for _, s in rows], "path": "run/log.csv",
                         "line": range(2, len(rows) + 2)})


def test_the_pace_of_a_run_resumed_under_its_own_name_leaves_out_the_time_it_was_down():
    """Down two hours after step 1,000, resumed from step 800 and back at step 1,000 at its 36 s a step: from its
    first row to its last it took 50.4 s a step (the two hours and the 200 steps done again), and its steps left
    would be projected 40% late. Its pace is that of its stretch since the restart: 36 s, from step 800."""
    frame = _resumed(pd.Timedelta(hours=2), range(800, 1001, 10))
    assert wall_pace(frame).seconds_per_step == pytest.approx(50.4)
    pace = stretch_pace(frame)
    assert pace.seconds_per_step == pytest.approx(36) and (pace.first.step, pace.last.step) == (800, 1000)
    assert pace.first.evidence.line == 2 + 101  # the first row after the restart


def test_a_run_whose_steps_never_went_back_or_just_did_is_paced_over_its_whole_run():
    """Counter-examples: a run that never went back has its whole run's pace; one that logged a single row since
    its restart has no pace of that stretch yet, and keeps its whole run's."""
    never = _resumed(pd.Timedelta(0), range(0))
    assert stretch_pace(never) == wall_pace(never) and stretch_pace(never).seconds_per_step == pytest.approx(36)
    just = _resumed(pd.Timedelta(hours=2), range(800, 801))
    assert stretch_pace(just) == wall_pace(just)


def test_the_clock_projects_a_run_resumed_under_its_own_name_at_its_pace_since_the_restart(tmp_path):
    """lora-r16-2 (at step 1,330) is down two hours, then resumed from its checkpoint at step 1,200 under its own
    name and logs steps 1,200 to 1,300 at 30 s a step: its 1,700 steps left are projected at that pace, not at its
    first-to-last pace with the two hours in it."""
    logs = live_logs(tmp_path)
    log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    at = datetime.fromisoformat(json.loads(log.read_text(encoding="utf-8").splitlines()[-1])["ts"]) + timedelta(hours=2)
    with log.open("a", encoding="utf-8") as handle:
        for step in range(1200, 1301, 10):
            stamp = (at + timedelta(seconds=30 * (step - 1200))).isoformat(timespec="milliseconds")
            handle.write(json.dumps({"ts": stamp, "type": "metric", "run": "lora-r16-2", "step": step,
                                     "metrics": {"loss": 1.45}}) + "\n")
    train = next(s for s in clock_of(logs)["steps"] if s["id"] == "train-r16")
    assert train["basis"].startswith("lora-r16-2: 1,700 steps left of 3,000 (its config's steps) at its 30 s a step "
                                     "(steps 1,200 to 1,300, evaluations and checkpoints included)"), train["basis"]


def test_a_build_whose_logs_end_inside_the_lot_says_how_to_make_the_closing_report(tmp_path, monkeypatch):
    """Without SOURCE_DATE_EPOCH a build's now is the newest time in the logs: cut inside the lot, with work left,
    the site shows the clock then and runs with no end at work. The terminal says so, and what makes the closing
    report. Counter-examples: with SOURCE_DATE_EPOCH (a now the user chose, inside the lot here), and the finished
    sample, nothing is said."""
    logs = live_logs(tmp_path)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    said = CliRunner().invoke(cli, ["build", str(logs), str(logs / "plan.yaml"), "-o", str(tmp_path / "site")])
    assert said.exit_code == 0
    assert ("the lot is still open at the newest time in the logs (2026-11-03 09:59), with work left: the site shows "
            "the lot clock then, and runs with no end logged at work; for the closing report after the lot, set "
            "SOURCE_DATE_EPOCH to its time") in said.stderr, said.stderr
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(datetime.fromisoformat("2026-11-03T12:00:00+09:00").timestamp())))
    chosen = CliRunner().invoke(cli, ["build", str(logs), str(logs / "plan.yaml"), "-o", str(tmp_path / "site")])
    assert chosen.exit_code == 0 and "the lot is still open" not in chosen.stderr
    assert json.loads((tmp_path / "site" / "report.json").read_text(encoding="utf-8"))["clock"]["running"]
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    sample = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(tmp_path / "sample")])
    assert sample.exit_code == 0 and "the lot is still open" not in sample.stderr
