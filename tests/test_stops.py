"""The stop-rule ledger (R10): every rule evaluated from the logs, beside the stops the scripts logged."""

from __future__ import annotations

import copy
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.analysis import analyse
from reportgen.build import prepare
from reportgen.cli import cli
from reportgen.ingest import ingest
from reportgen.plan.schema import Plan

FIXTURES = Path(__file__).parent / "fixtures" / "formats"
ALL_STATE = ["model", "optimizer", "scheduler", "rng", "progress"]


@pytest.fixture(scope="module")
def sample() -> dict:
    return prepare(SAMPLE_LOGS, SAMPLE_PLAN).report


def one_variant_plan(data: dict, rules: list[dict]) -> Plan:
    """The sample plan with one variant `v` owning every run and the given stop rules."""
    data = copy.deepcopy(data)
    data["variants"] = [{"id": "v", "role": "variant", "category": "required", "runs": ["*"]}]
    data["stop_rules"] = rules
    data["schedule"] = {"steps": [{"id": "all", "resource": "gpu0", "hours": 10, "runs": ["*"]}]}
    data["decision_points"] = []
    data["deliverables"] = []
    return Plan.model_validate(data)


def ledger(plan: Plan, logs: Path):
    analysis = analyse(plan, ingest(logs))
    return analysis, {(s.run, s.rule): s for s in analysis.stops.stops}


# --- the sample campaign --------------------------------------------------------------------

def test_sample_shows_a_stop_of_every_kind_the_plan_declares_with_evidence(sample):
    declared = {r["kind"] for r in sample["stop_rules"]}
    assert declared == {"non_finite", "below_threshold", "truncation", "no_resume"}
    for kind in declared:
        stops = [s for s in sample["stops"] if s["kind"] == kind]
        assert stops, kind
        for stop in stops:
            assert stop["evidence"] and all(e["path"] and e["line"] for e in stop["evidence"]), stop
            assert stop["reason"] and stop["id"] == f"{stop['run']}:{stop['rule']}"


def test_sample_ledger_puts_the_scripts_stops_beside_reportgens(sample):
    stops = {(s["run"], s["rule"]): s for s in sample["stops"]}
    nonfinite = stops[("lora-r64-1", "S1-nonfinite")]
    assert nonfinite["source"] == "logged and evaluated" and nonfinite["agrees"]
    assert nonfinite["logged"]["step"] == nonfinite["evaluated"]["step"] == 2140
    truncation = stops[("control-1", "S3-truncation")]
    assert truncation["source"] == "logged and evaluated" and truncation["step"] == 10
    assert {e["path"] for e in truncation["evaluated"]["evidence"]} == {"runs/control-1/events.jsonl", "runs/control-1/stdout.log"}
    # The script never checked S2: the eval under 0.20 at step 2000 is found by reportgen, and said to disagree.
    quality = stops[("lora-r64-1", "S2-quality")]
    assert quality["source"] == "evaluated" and quality["step"] == 2000 and not quality["agrees"]
    assert "went on to step 2140" in quality["disagreement"]
    r64 = next(r for r in sample["runs"] if r["id"] == "lora-r64-1")
    assert r64["status"] == "stopped" and r64["status_reason"].endswith("the logs meet S2-quality earlier, at step 2000")
    resume = stops[("eval-all-1", "S4-resume")]
    assert resume["kind"] == "no_resume" and "no checkpoint" in resume["reason"]
    assert resume["evidence"] == [{"path": "runs/eval-all-1/stdout.log", "line": 2}]


def test_sample_rules_say_which_runs_their_logs_could_not_check(sample):
    rules = {r["id"]: r for r in sample["stop_rules"]}
    assert set(rules["S3-truncation"]["checked"]) == {"control-1", "control-2"}  # the only runs counting cut inputs
    assert "lora-r16-2" in rules["S3-truncation"]["not_checked"]
    assert "control-2" in rules["S1-nonfinite"]["not_checked"]  # prediction runs log no loss
    assert rules["S4-resume"]["not_checked"] == []


def test_sample_resumable_interruption_is_not_a_stop_and_too_long_is_only_a_notice(sample):
    runs = {r["id"]: r for r in sample["runs"]}
    assert runs["lora-r16-1"]["status"] == "interrupted" and runs["lora-r16-1"]["stops"] == []
    assert runs["lora-r16-1"]["continued_by"] == ["lora-r16-2"]
    healthy = [r for r in runs.values() if r["status"] == "completed"]
    assert healthy and all(r["stops"] == [] for r in healthy)
    notice = next(n for n in sample["stop_notices"] if n["run"] == "control-1")
    assert notice["message"].startswith("not a truncation") and notice["evidence"][0]["line"] == 2


def test_sample_runs_show_their_gpu_time_and_interrupted_runs_cost(sample):
    runs = {r["id"]: r for r in sample["runs"]}
    assert runs["lora-r16-1"]["gpu_hours"] == pytest.approx(runs["lora-r16-1"]["wall_hours"]) and runs["lora-r16-1"]["gpu_hours"] > 4
    totals = sample["run_time"]
    assert totals["rented_gpu_hours"] == 72.0
    assert totals["gpu_hours_by_status"]["interrupted"] == pytest.approx(
        sum(r["gpu_hours"] for r in runs.values() if r["status"] == "interrupted"), abs=1e-3)
    assert totals["gpu_hours"] == pytest.approx(sum(totals["gpu_hours_by_status"].values()), abs=1e-3)
    assert totals["busy_fraction"] == pytest.approx(totals["gpu_hours"] / 72.0, abs=1e-4)


# --- Trainer logs with an overflow, a kill and healthy runs ---------------------------------

@pytest.fixture(scope="module")
def trainer(sample_plan_data_module) -> tuple:
    plan = one_variant_plan(sample_plan_data_module, [
        {"id": "S1", "kind": "non_finite", "description": "loss or grad_norm not finite", "metrics": ["loss", "grad_norm"]},
        {"id": "S1-loss", "kind": "non_finite", "description": "loss not finite", "metrics": ["loss"]},
        {"id": "S4", "kind": "no_resume", "description": "no usable resume"},
    ])
    return ledger(plan, FIXTURES / "hf")


@pytest.fixture(scope="module")
def sample_plan_data_module() -> dict:
    return yaml.safe_load(SAMPLE_PLAN.read_text(encoding="utf-8"))


def test_trainer_overflow_stops_at_the_first_affected_step_with_evidence(trainer):
    analysis, stops = trainer
    first = stops[("hf-nan", "S1")]
    assert first.step == 15  # grad_norm is NaN from step 15 (logged every 5 steps)
    paths = {e.path for e in first.evidence}
    assert "hf-nan/trainer_state.json" in paths  # relative to LOGS, here fixtures/formats/hf
    line = next(e.line for e in first.evidence if e.path == "hf-nan/trainer_state.json")
    entry = [text.strip() for text in (FIXTURES / "hf/hf-nan/trainer_state.json").read_text().splitlines()[line - 1:line + 6]]
    assert '"grad_norm": NaN,' in entry and '"step": 15' in entry  # the cited log entry
    # Watching the loss alone, the Trainer's filtered window (loss 0.0, grad_norm NaN) still counts.
    assert stops[("hf-nan", "S1-loss")].step == 20
    assert "not watched by this rule: grad_norm already not finite from step 15" in stops[("hf-nan", "S1-loss")].reason
    assert analysis.runs.statuses["hf-nan"].status == "stopped"
    assert "went on to its end" in analysis.runs.statuses["hf-nan"].reason


def test_trainer_killed_run_without_a_trace_of_the_kill_is_unknown_with_its_gpu_time(trainer):
    analysis, stops = trainer
    # SIGKILL leaves no message and the Trainer no end: nothing says it was cut, so it is not called interrupted
    assert analysis.runs.statuses["hf-killed"].status == "unknown"
    assert "no final training summary; the last state is at step 20 of 30" in analysis.runs.statuses["hf-killed"].reason
    assert analysis.runs.times["hf-killed"].gpu_hours is not None and analysis.runs.times["hf-killed"].gpu_hours > 0
    assert ("hf-killed", "S4") not in stops  # its last checkpoint holds every required part
    for healthy in ("hf-clean", "hf-best", "hf-resumed"):
        assert analysis.stops.for_run(healthy) == [], healthy
        assert analysis.runs.statuses[healthy].status == "completed"


# --- rules one by one, on logs written with the native event writer ------------------------

def rules_plan(sample_plan_data, *rules) -> Plan:
    return one_variant_plan(sample_plan_data, list(rules))


def test_non_finite_watches_every_metric_by_default_including_evaluations(sample_plan_data, tmp_path, event_log):
    log = event_log("r.jsonl", run="r-1")
    log.run_start(config={})
    for step in (10, 20, 30):
        log.metric(step=step, loss=1.0)
    log.eval(step=30, metrics={"eval_loss": math.nan})
    log.run_end(status="completed", step=30)
    plan = rules_plan(sample_plan_data, {"id": "NF", "kind": "non_finite", "description": "any metric"})
    analysis, stops = ledger(plan, tmp_path / "logs")
    assert stops[("r-1", "NF")].step == 30 and "eval_loss" in stops[("r-1", "NF")].evaluated.reason
    assert analysis.runs.statuses["r-1"].status == "stopped"
    assert analysis.variants[0].verdict != "passed"


def test_below_threshold_counts_only_evaluations_from_the_given_step(sample_plan_data, tmp_path, event_log):
    log = event_log("r.jsonl", run="r-1")
    log.run_start(config={})
    log.eval(step=100, metrics={"eval_rougeL": 0.05})  # early and low: before after_step, no stop
    log.eval(step=200, metrics={"eval_rougeL": 0.25})
    log.eval(step=300, metrics={"eval_rougeL": 0.15})
    log.run_end(status="completed", step=300)
    rule = {"id": "Q", "kind": "below_threshold", "description": "quality", "threshold": 0.2, "after_step": 150}
    _, stops = ledger(rules_plan(sample_plan_data, rule), tmp_path / "logs")
    assert stops[("r-1", "Q")].step == 300
    rule["after_step"] = 350
    _, stops = ledger(rules_plan(sample_plan_data, rule), tmp_path / "logs")
    assert ("r-1", "Q") not in stops


def test_below_threshold_on_a_lower_is_better_quality_metric_means_above(sample_plan_data, tmp_path, event_log):
    data = copy.deepcopy(sample_plan_data)
    data["quality"] = {"metric": "eval_loss", "direction": "lower", "threshold": 1.5}
    log = event_log("r.jsonl", run="r-1")
    log.run_start(config={})
    log.eval(step=100, metrics={"eval_loss": 1.2})
    log.eval(step=200, metrics={"eval_loss": 1.9})
    log.run_end(status="completed", step=200)
    _, stops = ledger(rules_plan(data, {"id": "Q", "kind": "below_threshold", "description": "quality"}), tmp_path / "logs")
    assert stops[("r-1", "Q")].step == 200 and "> 1.5" in stops[("r-1", "Q")].evaluated.reason


def test_truncation_from_a_counter_or_a_message_but_not_from_a_too_long_warning(sample_plan_data, tmp_path, event_log):
    clean = event_log("clean/events.jsonl", run="clean")
    clean.run_start(config={"a": 1})
    clean.metric(step=10, truncated_inputs=0, loss=1.0)
    clean.run_end(status="completed", step=10)
    (tmp_path / "logs" / "clean" / "stdout.log").write_text(
        "Token indices sequence length is longer than the specified maximum sequence length for this model (3100 > 2048).\n")
    counted = event_log("counted/events.jsonl", run="counted")
    counted.run_start(config={"a": 2})
    counted.metric(step=10, truncated_inputs=0)
    counted.metric(step=20, truncated_inputs=3)
    counted.run_end(status="completed", step=20)
    (tmp_path / "logs" / "told").mkdir()
    (tmp_path / "logs" / "told" / "train.log").write_text("step 40/100\nWARNING: 2 sequences were truncated to 512 tokens\n")
    plan = rules_plan(sample_plan_data, {"id": "T", "kind": "truncation", "description": "inputs cut"})
    analysis, stops = ledger(plan, tmp_path / "logs")
    assert ("clean", "T") not in stops
    assert [n.run for n in analysis.stops.notices] == ["clean"]
    assert stops[("counted", "T")].step == 20 and stops[("counted", "T")].evidence[0].line == 3
    assert stops[("told", "T")].step == 40 and stops[("told", "T")].evidence[0].path == "told/train.log"


def test_truncation_without_any_length_evidence_is_said_to_be_unevaluated(sample_plan_data, tmp_path, event_log):
    log = event_log("r.jsonl", run="r-1")
    log.run_start(config={})
    log.metric(step=10, loss=1.0)
    log.run_end(status="completed", step=10)
    analysis, stops = ledger(rules_plan(sample_plan_data, {"id": "T", "kind": "truncation", "description": "cut"}), tmp_path / "logs")
    assert not stops
    assert not analysis.stops.rules[0].evaluated and "cannot be evaluated" in analysis.stops.rules[0].basis


def interrupted_run(event_log, run: str, state: list[str] | None, reload_ok: bool | None = None, save: bool = True):
    log = event_log(f"{run}.jsonl", run=run)
    log.run_start(config={"run": run})
    log.metric(step=100, loss=1.0)
    if save:
        log.checkpoint_save(step=100, path=f"ckpt/{run}/checkpoint-100", seconds=30.0, state=state)
    if reload_ok is not None:
        log.reload_test(path=f"ckpt/{run}/checkpoint-100", ok=reload_ok, seconds=60.0, new_process=True,
                        message=None if reload_ok else "optimizer state does not match the parameters")
    log.metric(step=150, loss=0.9)
    with open(log.path, "a") as handle:  # then the process dies while writing: no run_end, a cut last line
        handle.write('{"ts": "2026-11-0')


def test_no_resume_fires_when_the_last_checkpoint_cannot_resume(sample_plan_data, tmp_path, event_log):
    interrupted_run(event_log, "good", ALL_STATE)
    interrupted_run(event_log, "weights-only", ["model"])
    interrupted_run(event_log, "bad-reload", ALL_STATE, reload_ok=False)
    interrupted_run(event_log, "none", None, save=False)
    interrupted_run(event_log, "unsaid", None)
    plan = rules_plan(sample_plan_data, {"id": "R", "kind": "no_resume", "description": "no usable resume"})
    analysis, stops = ledger(plan, tmp_path / "logs")
    assert ("good", "R") not in stops
    assert "lacks optimizer, scheduler, rng, progress" in stops[("weights-only", "R")].reason
    assert "reload test" in stops[("bad-reload", "R")].reason and "does not match" in stops[("bad-reload", "R")].reason
    assert "no checkpoint" in stops[("none", "R")].reason and stops[("none", "R")].step == 150
    assert ("unsaid", "R") not in stops  # unknown is not "missing": said as a notice instead
    assert [n.run for n in analysis.stops.notices] == ["unsaid"]
    assert all(analysis.runs.statuses[r].status == "interrupted" for r in ("good", "weights-only", "none"))


def test_a_resumed_run_without_its_own_checkpoint_can_resume_from_the_one_it_restored(sample_plan_data, tmp_path, event_log):
    interrupted_run(event_log, "first", ALL_STATE)
    second = event_log("second.jsonl", run="second")
    second.run_start(config={"run": "first"}, resumes="first", step=101)
    second.metric(step=110, loss=0.8)  # killed again before saving
    plan = rules_plan(sample_plan_data, {"id": "R", "kind": "no_resume", "description": "no usable resume"})
    analysis, stops = ledger(plan, tmp_path / "logs")
    assert ("second", "R") not in stops
    assert analysis.runs.continued_by["first"] == ["second"]


def test_disagreements_between_a_logged_stop_and_the_logs_are_reported(sample_plan_data, tmp_path, event_log):
    late = event_log("late.jsonl", run="late")
    late.run_start(config={"r": "late"})
    late.metric(step=10, loss=math.nan)
    late.metric(step=20, loss=math.nan)
    late.stop(rule="NF", reason="loss is NaN", step=20)
    late.run_end(status="stopped", step=20)
    unfounded = event_log("unfounded.jsonl", run="unfounded")
    unfounded.run_start(config={"r": "unfounded"})
    unfounded.metric(step=10, loss=1.0)
    unfounded.stop(rule="NF", reason="loss is NaN", step=10)
    unfounded.run_end(status="stopped", step=10)
    _, stops = ledger(rules_plan(sample_plan_data, {"id": "NF", "kind": "non_finite", "description": "nan"}), tmp_path / "logs")
    assert stops[("late", "NF")].step == 10 and "stopped at step 20, 10 steps after" in stops[("late", "NF")].disagreement
    assert stops[("unfounded", "NF")].source == "logged"
    assert "no evidence" in stops[("unfounded", "NF")].disagreement


def test_rules_apply_only_to_their_variants(sample_plan_data, tmp_path, event_log):
    data = copy.deepcopy(sample_plan_data)
    for run in ("control-1", "lora-r16-1"):
        log = event_log(f"{run}.jsonl", run=run)
        log.run_start(config={"run": run})
        log.metric(step=10, loss=math.inf)
        log.run_end(status="completed", step=10)
    data["stop_rules"] = [{"id": "NF", "kind": "non_finite", "description": "nan", "variants": ["lora-r16"]}]
    analysis = analyse(Plan.model_validate(data), ingest(tmp_path / "logs"))
    assert [(s.run, s.rule) for s in analysis.stops.stops] == [("lora-r16-1", "NF")]
    assert analysis.runs.statuses["control-1"].status == "completed"


def test_one_configuration_under_two_variants_is_a_problem(sample_plan_data, tmp_path, event_log):
    for run in ("control-1", "lora-r16-1", "lora-r16-2"):
        log = event_log(f"{run}.jsonl", run=run)
        log.run_start(config={"rank": 16})  # the same config: fine within lora-r16, not across variants
        log.run_end(status="completed", step=1)
    analysis = analyse(Plan.model_validate(sample_plan_data), ingest(tmp_path / "logs"))
    messages = [p.message for p in analysis.problems if "same configuration" in p.message]
    assert len(messages) == 1 and re.fullmatch(
        r"3 runs have the same configuration \([0-9a-f]+\) but belong to different variants \(control: control-1; "
        r"lora-r16: lora-r16-1, lora-r16-2\): the variants do not differ in what was run", messages[0]), messages


def test_one_configuration_under_two_variants_in_a_campaign_of_hundreds_names_five_runs_of_each(
        sample_plan_data, tmp_path, event_log):
    """At a thousand runs the warning listed every run's id (about 6 KB, on the terminal and the site):
    each variant names five of its runs and counts the rest."""
    for run in [f"control-{n}" for n in range(1, 9)] + [f"lora-r16-{n}" for n in range(1, 8)]:
        log = event_log(f"{run}.jsonl", run=run)
        log.run_start(config={"rank": 16})
        log.run_end(status="completed", step=1)
    analysis = analyse(Plan.model_validate(sample_plan_data), ingest(tmp_path / "logs"))
    [message] = [p.message for p in analysis.problems if "same configuration" in p.message]
    assert message.startswith("15 runs have the same configuration")
    assert ("(control: control-1, control-2, control-3, control-4, control-5 and 3 more; "
            "lora-r16: lora-r16-1, lora-r16-2, lora-r16-3, lora-r16-4, lora-r16-5 and 2 more)") in message


def test_stop_pages_link_every_stop_to_its_evidence(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    out = tmp_path / "site"
    result = CliRunner().invoke(cli, ["build", str(logs), str(logs / "plan.yaml"), "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    ledger_html = (out / "stops.html").read_text().replace("<wbr>", "")  # where a path may wrap, not text
    for stop in report["stops"]:
        assert f'id="stop-{stop["id"]}"' in ledger_html
        for item in stop["evidence"]:
            assert f'{item["path"]}:{item["line"]}</a>' in ledger_html
    for run in report["runs"]:
        page = (out / run["page"]).read_text()
        assert f"Run {run['id']}" in page
        for stop in run["stops"]:
            assert stop.split(":", 1)[1] in page


def test_without_clock_times_gpu_time_comes_from_train_runtime_or_the_progress_bar(tmp_path, sample_plan_data):
    logs = tmp_path / "logs"
    for name in ("hf-clean", "hf-killed"):
        shutil.copytree(FIXTURES / "hf" / name, logs / name, ignore=shutil.ignore_patterns("runs"))  # no TensorBoard times
    with open(logs / "hf-killed" / "train.log", "a", encoding="utf-8") as handle:
        handle.write(" 33%|███▎      | 10/30 [00:41<01:22,  4.10s/it]\r 67%|██████▋   | 20/30 [01:30<00:41,  4.12s/it]\r\n")
    analysis = analyse(one_variant_plan(sample_plan_data, [{"id": "S", "kind": "other", "description": "x"}]), ingest(logs))
    clean, killed = analysis.runs.times["hf-clean"], analysis.runs.times["hf-killed"]
    runtime = json.loads((logs / "hf-clean" / "trainer_state.json").read_text().replace("NaN", "null"))["log_history"][-1]["train_runtime"]
    assert clean.gpu_hours == pytest.approx(runtime / 3600) and "train_runtime" in clean.basis
    assert killed.gpu_hours == pytest.approx(90 / 3600) and "progress bar" in killed.basis
    assert "not counted" in killed.basis
    progress = next(m for m in analysis.campaign.messages if m.kind == "progress")
    lines = (logs / "hf-killed" / "train.log").read_bytes().split(b"\n")
    assert b"20/30 [01:30" in lines[progress.evidence.line - 1]  # "\r" redraws do not shift line numbers


def test_printed_copies_of_logged_values_add_no_window_and_evaluation_bars_are_not_steps(tmp_path, event_log):
    log = event_log("r-1/events.jsonl", run="r-1")
    log.run_start(config={})
    log.metric(step=20, loss=1.0, grad_norm=math.nan)
    (tmp_path / "logs" / "r-1" / "stdout.log").write_text(
        " 60%|██████    | 24/40 [00:10<00:07,  2.40it/s]\r\n"
        "100%|██████████| 5/5 [00:00<00:00, 250.65it/s]\x1b[A\r\n"
        "{'loss': '1.0', 'grad_norm': 'nan', 'learning_rate': '0.001', 'epoch': '0.5'}\n"
        "Traceback (most recent call last):\n  File \"train.py\", line 3\nRuntimeError: boom\n")
    campaign = ingest(tmp_path / "logs")
    windows = analyse(one_variant_plan(yaml.safe_load(SAMPLE_PLAN.read_text()), [
        {"id": "S", "kind": "other", "description": "x"}]), campaign).runs.non_finite["r-1"]
    assert [(w.metric, w.step) for w in windows] == [("grad_norm", 20)]
    printed = next(m for m in campaign.messages if m.kind == "non_finite")
    assert printed.step == 24  # the training bar's step, not the evaluation bar's 5
    assert next(m for m in campaign.messages if m.kind == "traceback").step == 24


def test_the_trainer_filter_note_belongs_to_the_loss_window_only(trainer):
    analysis, _ = trainer
    notes = {(w.metric, w.step): w.note for w in analysis.runs.non_finite["hf-nan"]}
    assert "NaN filter" in notes[("loss", 20)]
    assert all(note is None or "NaN filter" not in note for (metric, _), note in notes.items() if metric != "loss")


def test_a_resumed_run_is_listed_right_after_the_run_it_continues(tmp_path, event_log, sample_plan_data, write_plan):
    interrupted_run(event_log, "zeta-1", ALL_STATE)
    second = event_log("again.jsonl", run="alpha-2")
    second.run_start(config={"run": "zeta-1"}, resumes="zeta-1", step=101)
    second.run_end(status="completed", step=200)
    interrupted_run(event_log, "mid-1", ALL_STATE)
    report = prepare(tmp_path / "logs", write_plan(sample_plan_data)).report
    assert [r["id"] for r in report["runs"]] == ["mid-1", "zeta-1", "alpha-2"]
    assert report["runs"][1]["continued_by"] == ["alpha-2"] and report["runs"][2]["resumes"] == "zeta-1"


def test_a_non_finite_loss_only_a_text_log_reports_still_stops_the_run(sample_plan_data, tmp_path):
    (tmp_path / "logs" / "run-7").mkdir(parents=True)
    (tmp_path / "logs" / "run-7" / "train.log").write_text("step 120/500\nWARNING: loss is nan, skipping batch\n")
    plan = rules_plan(sample_plan_data, {"id": "NF", "kind": "non_finite", "description": "any metric"})
    _, stops = ledger(plan, tmp_path / "logs")
    assert stops[("run-7", "NF")].step == 120
    assert stops[("run-7", "NF")].evidence[0].line == 2


def _events(path: Path, run: str, nan_steps: set[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"ts": "2026-11-03T04:00:00Z", "type": "run_start", "run": run})]
    for step in range(10, 70, 10):
        value = "NaN" if step in nan_steps else str(1.0 / step)
        lines.append('{"ts": "2026-11-03T04:%02d:00Z", "type": "metric", "run": "%s", "step": %d, "metrics": {"loss": %s}}'
                     % (step // 10, run, step, value))
    path.write_text("\n".join(lines) + "\n")


def test_one_non_finite_window_two_files_show_is_one_window_with_both_as_evidence(tmp_path):
    from reportgen.analysis.nonfinite import non_finite
    _events(tmp_path / "a" / "events.jsonl", "r1", {30, 40})
    _events(tmp_path / "b" / "events.jsonl", "r1", {30, 40})
    windows = non_finite(ingest(tmp_path))["r1"]
    assert [(w.step, w.last_step, w.count) for w in windows] == [(30, 40, 2)]
    assert [e.path for e in windows[0].evidence] == ["a/events.jsonl", "b/events.jsonl"]


def test_two_files_with_other_non_finite_spans_keep_a_window_each(tmp_path):
    """Counter-example: windows are one only when their steps and row counts agree."""
    from reportgen.analysis.nonfinite import non_finite
    _events(tmp_path / "a" / "events.jsonl", "r1", {30, 40})
    _events(tmp_path / "b" / "events.jsonl", "r1", {30, 40, 50})
    windows = non_finite(ingest(tmp_path))["r1"]
    assert sorted((w.step, w.last_step, w.count) for w in windows) == [(30, 40, 2), (30, 50, 3)]



def test_a_metric_column_reads_the_same_from_the_readers_float_array_as_from_any_other_type():
    """A NaN logged stays NaN and logged; a row not logged is `missing` and not logged."""
    from reportgen.model import FLOAT_COLUMN, metric_values

    arrow = pd.Series(pd.arrays.ArrowExtensionArray(pa.array([1.5, None, float("nan")])))
    assert arrow.dtype == FLOAT_COLUMN  # read straight from its array
    logged, values = metric_values(arrow, missing=-1.0)
    assert logged.tolist() == [True, False, True] and values[:2].tolist() == [1.5, -1.0] and np.isnan(values[2])
    # Another type (the general path) reads alike.
    other_logged, other_values = metric_values(pd.Series([1.5, None, 2.5], dtype="Float64"), missing=-1.0)
    assert other_logged.tolist() == [True, False, True] and other_values.tolist() == [1.5, -1.0, 2.5]
