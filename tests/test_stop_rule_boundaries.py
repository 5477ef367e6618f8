"""The stop rules at their boundaries (R10), evaluated from the logs against the sample plan's rules:
S1-nonfinite (loss, grad_norm), S2-quality (eval_rougeL under 0.20 from step 1,500 on) and
S4-resume (an interrupted run whose last checkpoint cannot resume it). Each case is one native
run of variant lora-r64, its events 10 minutes apart."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from conftest import JST, SAMPLE_PLAN, ticking

from reportgen.build import prepare
from reportgen.events import EventLog

REQUIRED_STATE = ["model", "optimizer", "scheduler", "rng", "progress"]  # the sample plan's checkpoints.required_state


def run_log(logs: Path) -> EventLog:
    clock = ticking(datetime(2026, 11, 2, 10, 0, tzinfo=JST))
    log = EventLog(logs / "runs" / "lora-r64-1" / "events.jsonl", run="lora-r64-1", clock=clock)
    log.run_start(config={"rank": 64}, variant="lora-r64")
    return log


def stops_and_status(logs: Path) -> tuple[list[tuple[str, str]], str]:
    report = prepare(logs, SAMPLE_PLAN).report
    [run] = report["runs"]
    return [(s["rule"], s["reason"]) for s in report["stops"]], run["status"]


@pytest.mark.parametrize(("step", "value", "expected"), [
    # Under 0.20 from step 1,500 on: the first step checked counts, and so does any later one.
    (1500, 0.19, [("S2-quality", "eval_rougeL 0.19 < 0.20 at step 1500 (checked from step 1500)")]),
    (1600, 0.19, [("S2-quality", "eval_rougeL 0.19 < 0.20 at step 1600 (checked from step 1500)")]),
    # Counter-examples: exactly the threshold is not under it; a step before 1,500 is not checked.
    (1600, 0.20, []),
    (1490, 0.19, []),
])
def test_below_threshold_fires_under_the_threshold_from_its_first_checked_step(tmp_path, step, value, expected):
    log = run_log(tmp_path / "logs")
    log.metric(step=step, loss=1.0)
    log.eval(step=step, metrics={"eval_rougeL": value})
    log.run_end(status="completed", step=step)
    stops, status = stops_and_status(tmp_path / "logs")
    assert stops == expected
    # A rule that held while the run went on makes the completed run stopped (its results are not approved).
    assert status == ("stopped" if expected else "completed")


@pytest.mark.parametrize(("saved_at", "expected"), [
    (30, []),  # a full checkpoint at the step the run was interrupted at resumes it
    (20, []),
    (None, [("S4-resume", "interrupted at step 30 with no checkpoint to resume from")]),  # counter-example
])
def test_a_checkpoint_at_the_last_step_can_resume_an_interrupted_run(tmp_path, saved_at, expected):
    log = run_log(tmp_path / "logs")
    for step in (10, 20, 30):
        log.metric(step=step, loss=1.0)
        if step == saved_at:
            log.checkpoint_save(step=step, path=f"ckpt/step-{step}", seconds=30.0, state=REQUIRED_STATE)
    log.run_end(status="failed", step=30)  # interrupted at step 30
    stops, status = stops_and_status(tmp_path / "logs")
    assert (stops, status) == (expected, "interrupted")


@pytest.mark.parametrize(("nan_from", "disagreement"), [
    # The loss is NaN at the last step: the script had no later step at which to stop.
    (30, "the condition holds in the logs, but the script logged no stop for this rule"),
    # Counter-example: NaN from step 20, and the run went on to step 30.
    (20, "the condition holds in the logs, but the script logged no stop for this rule; the run went on to step 30"),
])
def test_a_rule_the_script_did_not_log_says_whether_the_run_went_on(tmp_path, nan_from, disagreement):
    log = run_log(tmp_path / "logs")
    for step in (10, 20, 30):
        log.metric(step=step, loss=float("nan") if step >= nan_from else 1.0)
    log.run_end(status="completed", step=30)
    [stop] = prepare(tmp_path / "logs", SAMPLE_PLAN).report["stops"]
    assert (stop["rule"], stop["step"], stop["agrees"], stop["disagreement"]) == ("S1-nonfinite", nan_from, False, disagreement)


def test_a_rule_that_held_in_a_run_without_an_end_makes_it_stopped_by_the_rule(tmp_path):
    log = run_log(tmp_path / "logs")
    log.metric(step=10, loss=1.0)
    log.metric(step=20, loss=float("nan"))  # and no end logged
    [run] = prepare(tmp_path / "logs", SAMPLE_PLAN).report["runs"]
    assert (run["status"], run["stopped_by"], run["status_reason"]) == (
        "stopped", "stop rule", "stop rule S1-nonfinite fired: loss not finite at step 20")


@pytest.mark.parametrize(("stopped_at", "reason"), [
    # The script stopped at the first NaN step: its own reason stands.
    (20, "loss is NaN"),
    # It stopped at step 30 although the loss was NaN from step 20: the status says the logs met the rule earlier.
    (30, "loss is NaN; the logs meet S1-nonfinite earlier, at step 20"),
])
def test_a_logged_stop_says_when_the_logs_met_the_rule_earlier(tmp_path, stopped_at, reason):
    log = run_log(tmp_path / "logs")
    for step in range(10, stopped_at + 1, 10):
        log.metric(step=step, loss=float("nan") if step >= 20 else 1.0)
    log.stop(rule="S1-nonfinite", reason="loss is NaN", step=stopped_at)
    log.run_end(status="stopped", step=stopped_at)
    [run] = prepare(tmp_path / "logs", SAMPLE_PLAN).report["runs"]
    # Either way the script stopped it (stopped_by stays "script").
    assert (run["status"], run["stopped_by"], run["status_reason"]) == ("stopped", "script", reason)
