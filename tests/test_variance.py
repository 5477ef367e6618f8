"""Variance explained (R16): planned + causes + unexplained = actual, every cause with evidence."""

from __future__ import annotations

from datetime import datetime

import pytest
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.build import prepare


@pytest.fixture(scope="module")
def steps() -> dict:
    return {s["id"]: s for s in prepare(SAMPLE_LOGS, SAMPLE_PLAN).report["schedule"]["steps"]}


def test_every_step_adds_up_and_every_cause_has_evidence(steps):
    for step in steps.values():
        if step["actual_hours"] is None:
            assert step["explained"] == [] and step["unexplained_hours"] is None
            continue
        total = step["planned_hours"] + sum(c["hours"] for c in step["explained"]) + step["unexplained_hours"]
        assert total == pytest.approx(step["actual_hours"], abs=1e-3), step["id"]
        for cause in step["explained"]:
            # Only throughput (training faster than planned) and a stop (steps not run) can save time.
            assert (cause["hours"] > 0 or cause["cause"] in ("throughput", "stopped early")) and cause["evidence"], (step["id"], cause)


def test_an_interruption_shows_lost_work_and_downtime(steps):
    causes = {c["cause"]: c for c in steps["train-r16"]["explained"]}
    # lora-r16-1 saved at step 1,200 (08:20:07), crashed at 08:43:10; lora-r16-2 started at 09:30:00.
    lost = (datetime(2026, 11, 3, 8, 43, 10) - datetime(2026, 11, 3, 8, 20, 7, 268000)).total_seconds() / 3600
    down = (datetime(2026, 11, 3, 9, 30) - datetime(2026, 11, 3, 8, 43, 10)).total_seconds() / 3600
    assert causes["lost work"]["hours"] == pytest.approx(lost, abs=1e-3)
    assert causes["downtime"]["hours"] == pytest.approx(down, abs=1e-3)
    assert {"path": "runs/lora-r16-1/stdout.log", "line": 5} in causes["lost work"]["evidence"]
    # A killed evaluation with nothing saved lost all its work.
    evaluate = {c["cause"]: c["hours"] for c in steps["evaluate"]["explained"]}
    assert evaluate["lost work"] == pytest.approx(1.0556, abs=1e-3) and "downtime" in evaluate


def test_long_evaluations_are_a_cause(steps):
    causes = {c["cause"]: c for c in steps["train-r16"]["explained"]}
    assert causes["evaluation"]["hours"] == pytest.approx(6 * 540 / 3600, abs=1e-3)  # six 9-minute evaluations
    assert len(causes["evaluation"]["evidence"]) == 6


def test_a_step_without_runs_leaves_its_variance_unexplained(steps):
    prep = steps["prep-env"]
    assert prep["explained"] == [] and prep["unexplained_hours"] == pytest.approx(prep["variance_hours"], abs=1e-4)


def test_a_stretch_of_long_inputs_is_a_cause(steps):
    long = {c["cause"]: c for c in steps["train-r16"]["explained"]}["long inputs"]
    # Steps 2,201-2,300 took 22 s instead of about 13.1 s: the token count shows 1.7 times the tokens.
    assert long["hours"] == pytest.approx(100 * (22.0 - (13.6 - 840 / 1700)) / 3600, abs=0.01)
    assert all(e["path"] == "runs/lora-r16-2/events.jsonl" for e in long["evidence"])
    assert len(long["evidence"]) == 10  # the ten logged rows of the slow stretch
    assert not any(c["cause"] == "long inputs" for c in steps["train-r64"]["explained"])


def test_throughput_against_the_planned_steps_per_second(steps):
    throughput = {c["cause"]: c for c in steps["train-r16"]["explained"]}["throughput"]
    # lora-r16-1 to its last save (1,190 steps at 11.2 s) and lora-r16-2 (1,790 steps at about 13.1 s),
    # against the plan's 10 s a step; the long-input stretch is counted apart.
    measured = 1190 * 11.2 + 1790 * (13.6 - 840 / 1700)
    assert throughput["hours"] == pytest.approx((measured - 2980 * 10.0) / 3600, abs=0.02)
    assert "2,980 steps" in throughput["note"] and "planned 10 s" in throughput["note"]


def test_throughput_is_a_cause_only_when_the_plan_states_one_and_may_save_time(sample_plan_data, write_plan):
    def without(d):
        for s in d["schedule"]["steps"]:
            s.pop("steps_per_second", None)

    plain = prepare(SAMPLE_LOGS, write_plan(sample_plan_data, without)).report["schedule"]["steps"]
    assert not any(c["cause"] == "throughput" for s in plain for c in s["explained"])

    def faster_than_measured(d):
        without(d)
        d["schedule"]["steps"][7]["steps_per_second"] = 0.05  # train-r64: 20 s a step planned, 10.4 measured

    steps = {s["id"]: s for s in prepare(SAMPLE_LOGS, write_plan(sample_plan_data, faster_than_measured)).report["schedule"]["steps"]}
    throughput = {c["cause"]: c for c in steps["train-r64"]["explained"]}["throughput"]
    assert throughput["hours"] == pytest.approx(2130 * (10.4 - 20.0) / 3600, abs=0.02)
    total = steps["train-r64"]["planned_hours"] + sum(c["hours"] for c in steps["train-r64"]["explained"])
    assert total + steps["train-r64"]["unexplained_hours"] == pytest.approx(steps["train-r64"]["actual_hours"], abs=1e-3)


def test_a_long_input_message_marks_its_stretch(tmp_path, sample_plan_data, write_plan, clock):
    """With no token counts, a 'longer than the maximum' warning at a step marks the slow stretch around it."""
    from reportgen.events import EventLog

    logs = tmp_path / "logs"
    log = EventLog(logs / "runs" / "lora-r16-9" / "events.jsonl", run="lora-r16-9", clock=clock)
    log.run_start(variant="lora-r16")
    for step in range(1, 201):
        clock.hours((40.0 if 101 <= step <= 110 else 10.0) / 3600)
        if step % 10 == 0:
            log.metric(step=step, loss=1.0)
    log.run_end(status="completed", step=200)
    (logs / "runs" / "lora-r16-9" / "stdout.log").write_text(
        "step 100/200\nstep 105/200\nToken indices sequence length is longer than the specified maximum sequence "
        "length for this model (1432 > 1024). Running this sequence through the model will result in indexing errors\n"
        "step 200/200\n", encoding="utf-8")

    def only_r16(d):
        d["schedule"]["steps"] = [s for s in d["schedule"]["steps"] if s["id"] in ("prep-env", "train-r16")]
        d["schedule"]["steps"][1]["depends_on"] = []
        d["decision_points"] = []

    steps = {s["id"]: s for s in prepare(logs, write_plan(sample_plan_data, only_r16)).report["schedule"]["steps"]}
    causes = {c["cause"]: c for c in steps["train-r16"]["explained"]}
    assert causes["long inputs"]["hours"] == pytest.approx(10 * 30.0 / 3600, abs=1e-3)
    assert {"path": "runs/lora-r16-9/stdout.log", "line": 3} in causes["long inputs"]["evidence"]
    # 200 steps: 190 at 10 s and 10 at 40 s, of which the extra 300 s are long inputs, against 10 s planned.
    assert causes["throughput"]["hours"] == pytest.approx(0.0, abs=1e-3)


def test_waiting_between_steps_is_the_span_no_step_covers():
    report = prepare(SAMPLE_LOGS, SAMPLE_PLAN).report
    schedule = report["schedule"]
    between = schedule["between_steps"]
    # The pilot ended at 18:50 and the decision after it came at 19:00: the resume check waited for it.
    first = between["gaps"][0]
    assert (first["after"], first["before"], first["hours"]) == ("pilot", "resume-check", pytest.approx(10 / 60, abs=1e-4))
    assert first["evidence"] == [{"path": "campaign/events.jsonl", "line": 8}, {"path": "campaign/events.jsonl", "line": 11}]
    # Span = the union of the measured steps + the gaps between them.
    spans = sorted((datetime.fromisoformat(s["actual_start"]), datetime.fromisoformat(s["actual_end"]))
                   for s in schedule["steps"] if s["actual_hours"] is not None)
    union, reach = 0.0, None
    for start, end in spans:
        start = max(start, reach) if reach else start
        if end > start:
            union += (end - start).total_seconds() / 3600
        reach = max(reach, end) if reach else end
    assert union + between["hours"] == pytest.approx(schedule["actual_hours"], abs=1e-3)


def test_the_whole_campaign_adds_up_from_planned_span_to_actual_span(steps):
    schedule = prepare(SAMPLE_LOGS, SAMPLE_PLAN).report["schedule"]
    total = schedule["planned_hours"] + sum(c["hours"] for c in schedule["explained"]) + schedule["unexplained_hours"]
    assert total == pytest.approx(schedule["actual_hours"], abs=1e-3)
    causes = {c["cause"]: c for c in schedule["explained"]}
    # Each cause is the steps' causes summed; the gaps between steps are their own cause.
    for name in ("evaluation", "lost work", "downtime", "throughput"):
        summed = sum(c["hours"] for s in steps.values() for c in s["explained"] if c["cause"] == name)
        assert causes[name]["hours"] == pytest.approx(summed, abs=1e-3)
    assert causes["waiting between steps"]["hours"] == schedule["between_steps"]["hours"]
    assert all(c["evidence"] for c in schedule["explained"])


def test_a_stopped_run_saves_the_steps_it_did_not_run(steps, sample_plan_data, write_plan):
    stopped = {c["cause"]: c for c in steps["train-r64"]["explained"]}["stopped early"]
    # lora-r64-1 stopped at step 2,140 of the 3,000 its config names: 860 steps at the planned 10 s.
    assert stopped["hours"] == pytest.approx(-860 * 10.0 / 3600, abs=1e-4)
    assert "860 steps at 10 s (planned) not run" in stopped["note"]
    assert {"path": "runs/lora-r64-1/events.jsonl", "line": 230} in stopped["evidence"]  # the logged stop

    def no_rate(d):
        for s in d["schedule"]["steps"]:
            s.pop("steps_per_second", None)

    measured = {s["id"]: s for s in prepare(SAMPLE_LOGS, write_plan(sample_plan_data, no_rate)).report["schedule"]["steps"]}
    stopped = {c["cause"]: c for c in measured["train-r64"]["explained"]}["stopped early"]
    assert stopped["hours"] == pytest.approx(-860 * 10.4 / 3600, abs=2e-3)  # at the measured pace instead
    assert "(measured)" in stopped["note"]
