"""Variant and campaign verdicts at their boundaries (R1, R10): a value exactly at the quality
threshold meets it in either direction; a campaign is negative only when it has required variants
and every one of them was evaluated and fell short; a run its own training loop stopped (early
stopping) ended as configured, so its values and outputs count, unlike a run stopped by a rule."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
import yaml
from conftest import JST, SAMPLE_PLAN, ticking

from reportgen.build import prepare
from reportgen.events import EventLog


def completed_run(logs: Path, run: str, variant: str, metrics: dict[str, float]) -> EventLog:
    clock = ticking(datetime(2026, 11, 2, 10, 0, tzinfo=JST))
    log = EventLog(logs / "runs" / run / "events.jsonl", run=run, clock=clock)
    log.run_start(config={"run": run}, variant=variant)
    log.metric(step=10, loss=1.0)
    log.eval(step=10, metrics=metrics)
    log.run_end(status="completed", step=10)
    return log


def verdicts(report: dict) -> dict[str, tuple[str, float | None]]:
    return {v["id"]: (v["verdict"], v["value"]) for v in report["variants"]}


@pytest.mark.parametrize(("value", "verdict"), [(0.32, "passed"), (0.3199, "failed")])
def test_a_value_exactly_at_a_higher_is_better_threshold_meets_it(tmp_path, value, verdict):
    completed_run(tmp_path / "logs", "lora-r16-2", "lora-r16", {"eval_rougeL": value})
    report = prepare(tmp_path / "logs", SAMPLE_PLAN).report
    assert verdicts(report)["lora-r16"] == (verdict, value)


@pytest.mark.parametrize(("value", "verdict"), [(1.5, "passed"), (1.5001, "failed")])
def test_a_value_exactly_at_a_lower_is_better_threshold_meets_it(tmp_path, sample_plan_data, write_plan, value, verdict):
    def lower(data: dict) -> None:
        data["quality"] = {"metric": "eval_loss", "direction": "lower", "threshold": 1.5}

    completed_run(tmp_path / "logs", "lora-r16-2", "lora-r16", {"eval_loss": value})
    report = prepare(tmp_path / "logs", write_plan(sample_plan_data, lower)).report
    assert verdicts(report)["lora-r16"] == (verdict, value)


def test_without_required_variants_falling_short_is_not_a_negative_result(tmp_path, sample_plan_data, write_plan):
    """R1: negative means every *required* variant was evaluated and fell short; with none required, the
    question is not answered."""
    def none_required(data: dict) -> None:
        for variant in data["variants"]:
            if variant["role"] == "variant" and variant["category"] == "required":
                variant["category"] = "useful"

    logs = tmp_path / "logs"
    completed_run(logs, "lora-r16-2", "lora-r16", {"eval_rougeL": 0.25})
    completed_run(logs, "lora-r64-1", "lora-r64", {"eval_rougeL": 0.26})
    campaign = prepare(logs, write_plan(sample_plan_data, none_required)).report["campaign"]
    assert campaign["verdict"] == "inconclusive"
    assert campaign["conclusion"] == ("No variant met eval_rougeL >= 0.32, and not every required variant was "
                                      "evaluated: no required variant.")
    # Counter-example: the sample plan (lora-r16 required) with the same runs is a negative result.
    assert prepare(logs, SAMPLE_PLAN).report["campaign"]["verdict"] == "negative"


EARLY_STOP = ("Metric val_loss did not improve in the last 3 records. Best score: 0.412. "
              "Signaling Trainer to stop.\n")


def early_stopped(logs: Path, message: str) -> dict:
    """lora-r16-2 evaluates 0.33 and logs no end; its console says the training loop stopped it
    (or, as a counter-example, says something else). A manifest lists its predictions."""
    clock = ticking(datetime(2026, 11, 2, 10, 0, tzinfo=JST))
    events = EventLog(logs / "runs" / "lora-r16-2" / "events.jsonl", run="lora-r16-2", clock=clock)
    events.run_start(config={"rank": 16}, variant="lora-r16")
    events.metric(step=10, loss=1.0)
    events.eval(step=10, metrics={"eval_rougeL": 0.33})
    (logs / "runs" / "lora-r16-2" / "train.log").write_text(message, encoding="utf-8")
    (logs / "corpus").mkdir()
    (logs / "corpus" / "jsum-v3.ids").write_text("a\nb\n")
    (logs / "outputs").mkdir()
    (logs / "outputs" / "preds.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n')
    (logs / "outputs" / "manifest.yaml").write_text(yaml.safe_dump({"deliverables": [
        {"id": "predictions-lora-r16", "kind": "predictions", "variant": "lora-r16", "corpus": "jsum-v3", "run": "lora-r16-2",
         "path": "outputs/preds.jsonl"}]}))
    return prepare(logs, SAMPLE_PLAN).report


def test_a_run_its_training_loop_stopped_counts_its_values_and_outputs(tmp_path):
    report = early_stopped(tmp_path / "logs", EARLY_STOP)
    [run] = report["runs"]
    assert (run["status"], run["stopped_by"]) == ("stopped", "training loop")
    assert verdicts(report)["lora-r16"] == ("passed", 0.33)
    [preds] = report["deliverables"]
    assert (preds["passed"], preds["reasons"]) == (True, [])
    assert report["costs"]["passed_outputs"] == 1


def test_counter_example_without_the_loops_stop_the_same_run_is_unknown_and_not_evaluated(tmp_path):
    report = early_stopped(tmp_path / "logs", "Epoch 3: training goes on\n")
    [run] = report["runs"]
    assert (run["status"], run["stopped_by"]) == ("unknown", None)
    assert verdicts(report)["lora-r16"] == ("not_evaluated", 0.33)
    # The run is not stopped or interrupted, so its output is not rejected for its run; its variant
    # did not pass, so it is rejected for that.
    [preds] = report["deliverables"]
    assert preds["passed"] is False and preds["reasons"] == [
        "variant lora-r16 did not meet eval_rougeL >= 0.32: not evaluated (0.33)"]


def test_a_required_variant_stopped_by_a_rule_leaves_the_campaign_inconclusive(tmp_path):
    """A stopped variant was not evaluated: it has not fallen short, so the result is not negative."""
    clock = ticking(datetime(2026, 11, 2, 10, 0, tzinfo=JST))
    logs = tmp_path / "logs"
    log = EventLog(logs / "runs" / "lora-r16-1" / "events.jsonl", run="lora-r16-1", clock=clock)
    log.run_start(config={"rank": 16}, variant="lora-r16")
    log.metric(step=10, loss=float("nan"))
    log.stop(rule="S1-nonfinite", reason="loss is NaN", step=10)
    log.run_end(status="stopped", step=10)
    report = prepare(logs, SAMPLE_PLAN).report
    assert verdicts(report)["lora-r16"] == ("stopped", None)
    assert (report["campaign"]["verdict"], report["campaign"]["conclusion"]) == (
        "inconclusive", "No variant met eval_rougeL >= 0.32, and not every required variant was evaluated: lora-r16 (stopped).")


def test_counter_example_a_required_variant_evaluated_short_of_the_threshold_is_negative(tmp_path):
    completed_run(tmp_path / "logs", "lora-r16-2", "lora-r16", {"eval_rougeL": 0.25})
    assert prepare(tmp_path / "logs", SAMPLE_PLAN).report["campaign"]["verdict"] == "negative"


def test_a_variant_dropped_at_a_decision_point_that_still_ran_is_judged_on_its_value(tmp_path):
    logs = tmp_path / "logs"
    EventLog(logs / "campaign" / "events.jsonl", clock=lambda: datetime(2026, 11, 2, 9, 30, tzinfo=JST)).decision(
        "after-pilot", "drop_variant", variant="lora-r64", reason="cannot change the choice")
    EventLog(logs / "campaign" / "events.jsonl", clock=lambda: datetime(2026, 11, 2, 9, 31, tzinfo=JST)).decision(
        "after-pilot", "drop_variant", variant="lora-r16-len2048", reason="too few long articles")
    completed_run(logs, "lora-r64-1", "lora-r64", {"eval_rougeL": 0.33})
    found = {v["id"]: (v["verdict"], v["reason"]) for v in prepare(logs, SAMPLE_PLAN).report["variants"]}
    assert found["lora-r64"] == ("passed", "final eval_rougeL 0.33 >= 0.32")
    # Counter-example: the dropped variant that never ran is `dropped`, not failed or not run.
    assert found["lora-r16-len2048"] == ("dropped", "dropped at after-pilot: too few long articles")
