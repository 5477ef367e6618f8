from __future__ import annotations

import copy

from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.analysis import analyse
from reportgen.build import prepare
from reportgen.ingest import ingest
from reportgen.plan.schema import Plan


def two_variant_plan(sample_plan_data) -> Plan:
    data = copy.deepcopy(sample_plan_data)
    data["variants"] = [
        {"id": "control", "role": "control", "category": "required", "runs": ["control-*"]},
        {"id": "va", "role": "variant", "category": "required", "runs": ["va-*"]},
        {"id": "vb", "role": "variant", "category": "useful", "runs": ["vb-*"]},
    ]
    data["schedule"] = {"steps": [{"id": "all", "resource": "gpu0", "hours": 10, "runs": ["*"]}]}
    data["decision_points"] = []
    data["deliverables"] = []
    return Plan.model_validate(data)


def finished_run(event_log, run: str, value: float | None, status: str = "completed"):
    log = event_log(f"{run}.jsonl", run=run)
    log.run_start(config={"run": run})
    log.metric(step=10, loss=1.0)
    if value is not None:
        log.eval(step=10, metrics={"eval_rougeL": value})
    if status:
        log.run_end(status=status, step=10)
    return log


def verdicts(plan, tmp_path):
    analysis = analyse(plan, ingest(tmp_path / "logs"))
    return {v.variant.id: v.verdict for v in analysis.variants}, analysis.verdict


def test_no_variant_passing_is_a_negative_result_not_a_failure(sample_plan_data, tmp_path, event_log):
    plan = two_variant_plan(sample_plan_data)
    for run, value in (("control-1", 0.30), ("va-1", 0.31), ("vb-1", 0.29)):
        finished_run(event_log, run, value)
    by_variant, verdict = verdicts(plan, tmp_path)
    assert by_variant == {"control": "baseline", "va": "failed", "vb": "failed"}
    assert verdict.verdict == "negative"
    assert "answers the question" in verdict.conclusion


def test_one_variant_meeting_the_threshold_makes_the_campaign_positive(sample_plan_data, tmp_path, event_log):
    plan = two_variant_plan(sample_plan_data)
    finished_run(event_log, "control-1", 0.30)
    finished_run(event_log, "va-1", 0.32)  # exactly at the threshold passes (direction higher)
    by_variant, verdict = verdicts(plan, tmp_path)
    assert by_variant["va"] == "passed"
    assert by_variant["vb"] == "not_run"
    assert verdict.verdict == "positive"


def test_lower_is_better_metrics_compare_the_other_way(sample_plan_data, tmp_path, event_log):
    data = copy.deepcopy(sample_plan_data)
    data["quality"] = {"metric": "eval_rougeL", "direction": "lower", "threshold": 0.32}
    plan = two_variant_plan(data)
    finished_run(event_log, "va-1", 0.2)
    assert verdicts(plan, tmp_path)[0]["va"] == "passed"


def test_a_stopped_run_or_one_that_never_ended_never_passes(sample_plan_data, tmp_path, event_log):
    plan = two_variant_plan(sample_plan_data)
    stopped = finished_run(event_log, "va-1", 0.9, status="")
    stopped.stop(reason="loss NaN", rule="S1-nonfinite", step=10)
    finished_run(event_log, "vb-1", 0.9, status="")  # killed: no end marker, nothing says how it ended
    by_variant, verdict = verdicts(plan, tmp_path)
    # stopped only with a stop in the ledger naming its run; a run that never ended is not evaluated
    assert by_variant["va"] == "stopped" and by_variant["vb"] == "not_evaluated"
    assert verdict.verdict == "inconclusive"


def test_the_final_evaluation_of_a_completed_run_decides(sample_plan_data, tmp_path, event_log, clock):
    plan = two_variant_plan(sample_plan_data)
    log = event_log("va-1.jsonl", run="va-1")
    log.run_start()
    log.eval(step=5, metrics={"eval_rougeL": 0.5})
    clock.hours(1)
    log.eval(step=10, metrics={"eval_rougeL": 0.1})
    log.run_end()
    assert verdicts(plan, tmp_path)[0]["va"] == "failed"


def test_a_dropped_variant_is_dropped_not_failed(sample_plan_data, tmp_path, event_log):
    plan = two_variant_plan(sample_plan_data)
    finished_run(event_log, "va-1", 0.2)
    event_log("campaign.jsonl").decision("after-pilot", "drop_variant", reason="cannot change the choice", variant="vb")
    by_variant, verdict = verdicts(plan, tmp_path)
    assert by_variant["vb"] == "dropped"
    assert verdict.verdict == "negative"


def test_same_run_id_with_another_configuration_is_a_problem(sample_plan_data, tmp_path, event_log):
    plan = two_variant_plan(sample_plan_data)
    log = event_log("va-1.jsonl", run="va-1")
    log.run_start(config={"lr": 1e-4})
    log.run_start(config={"lr": 3e-4})
    analysis = analyse(plan, ingest(tmp_path / "logs"))
    assert any("different configuration" in p.message and "needs a new run id" in p.message for p in analysis.problems)


def test_logged_names_the_plan_does_not_have_are_reported(sample_plan_data, tmp_path, event_log):
    plan = two_variant_plan(sample_plan_data)
    campaign_log = event_log("campaign.jsonl")
    campaign_log.step_start("trian")
    campaign_log.decision("after-pliot", "continue")
    finished_run(event_log, "va-1", 0.5, status="").stop(reason="diverged", rule="S9")
    messages = [p.message for p in analyse(plan, ingest(tmp_path / "logs")).problems]
    assert any("step event for 'trian'" in m for m in messages)
    assert any("decision at 'after-pliot'" in m for m in messages)
    assert any("stop by rule 'S9'" in m for m in messages)


def test_a_variant_dropped_after_an_unfinished_run_is_dropped(sample_plan_data, tmp_path, event_log):
    plan = two_variant_plan(sample_plan_data)
    finished_run(event_log, "vb-1", None, status="")  # started, never finished
    event_log("campaign.jsonl").decision("after-pilot", "drop_variant", reason="too slow", variant="vb")
    assert verdicts(plan, tmp_path)[0]["vb"] == "dropped"


def test_a_variant_that_completed_is_judged_on_its_value_even_if_dropped_later(sample_plan_data, tmp_path, event_log):
    plan = two_variant_plan(sample_plan_data)
    finished_run(event_log, "vb-1", 0.5)
    event_log("campaign.jsonl").decision("after-pilot", "drop_variant", variant="vb")
    assert verdicts(plan, tmp_path)[0]["vb"] == "passed"


def test_decision_points_are_taken_missed_or_pending(sample_plan_data, tmp_path, event_log, clock, write_plan):
    data = copy.deepcopy(sample_plan_data)
    data["decision_points"] = [{"id": "after-pilot", "after": "pilot"}, {"id": "after-r16", "after": "train-r16"},
                               {"id": "after-eval", "after": "evaluate"}]
    log = event_log("campaign.jsonl")
    log.step_start("pilot")
    clock.hours(3)
    log.step_end("pilot")
    log.decision("after-pilot", "pivot", reason="not an option of the point")
    log.step_start("train-r16")
    clock.hours(9)
    log.step_end("train-r16")  # and no decision logged after it
    report = prepare(tmp_path / "logs", write_plan(data)).report
    points = {p["id"]: p for p in report["decision_points"]}
    assert points["after-pilot"]["status"] == "taken" and points["after-pilot"]["decisions"][0]["in_options"] is False
    assert points["after-r16"]["status"] == "missed" and points["after-r16"]["after_step_ended"]
    assert points["after-eval"]["status"] == "pending"


def test_plan_warnings_reach_the_report_with_their_line(tmp_path):
    report = prepare(SAMPLE_LOGS, SAMPLE_PLAN).report
    shared = next(w for w in report["plan_warnings"] if "share gpu0" in w["message"])
    assert "control-preds, train-r16, train-r64 share gpu0" in shared["message"] and "26 h, not the 9 h" in shared["message"]
    assert SAMPLE_PLAN.read_text().splitlines()[shared["line"] - 1].strip() == "resource: gpu0"
