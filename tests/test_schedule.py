from __future__ import annotations

import copy

import pytest

from reportgen.analysis.schedule import (
    planned_hours,
    planned_timeline,
    reconcile,
    window,
)
from reportgen.ingest import ingest
from reportgen.plan.schema import Plan


def plan_from(data: dict, edit=None) -> Plan:
    data = copy.deepcopy(data)
    if edit:
        edit(data)
    return Plan.model_validate(data)


def steps(*specs) -> dict:
    """(id, resource, hours, depends_on) tuples as a schedule section."""
    return {"steps": [{"id": i, "resource": r, "hours": h, "depends_on": list(d)} for i, r, h, d in specs]}


def test_seed_example_48_hours_in_a_72_hour_window_leaves_24_unused(sample_plan_data):
    # R6: 48 h of sequential work inside the 72 h window of a 3-day lot leaves 24 h unused.
    plan = plan_from(sample_plan_data)
    assert window(plan).hours == 72
    assert planned_hours(planned_timeline(plan)) == 48


def test_two_steps_on_one_gpu_never_overlap_even_without_dependencies(sample_plan_data):
    plan = plan_from(sample_plan_data, lambda d: d.update(schedule=steps(("a", "gpu0", 5, ()), ("b", "gpu0", 4, ()))))
    slots = {s.step.id: (s.start_h, s.end_h) for s in planned_timeline(plan)}
    assert slots == {"a": (0, 5), "b": (5, 9)}


def test_human_steps_overlap_machine_steps(sample_plan_data):
    plan = plan_from(
        sample_plan_data,
        lambda d: d.update(schedule=steps(("train", "gpu0", 6, ()), ("write-up", "human", 4, ()), ("eval", "gpu0", 2, ("train",)))),
    )
    slots = {s.step.id: (s.start_h, s.end_h) for s in planned_timeline(plan)}
    assert slots["write-up"] == (0, 4)
    assert slots["eval"] == (6, 8)
    assert planned_hours(planned_timeline(plan)) == 8


def test_steps_on_two_gpus_run_in_parallel(sample_plan_data):
    def edit(d):
        d["order"]["lots"][0].update(gpus=2, gpu_names=["gpu0", "gpu1"])
        d["schedule"] = steps(("a", "gpu0", 5, ()), ("b", "gpu1", 4, ()))

    assert planned_hours(planned_timeline(plan_from(sample_plan_data, edit))) == 5


def test_dependencies_wait_for_the_slowest_predecessor(sample_plan_data):
    plan = plan_from(
        sample_plan_data,
        lambda d: d.update(schedule=steps(("a", "cpu", 2, ()), ("b", "human", 7, ()), ("c", "gpu0", 1, ("a", "b")))),
    )
    assert {s.step.id: s.start_h for s in planned_timeline(plan)}["c"] == 7


def test_two_lots_make_one_window_from_first_start_to_last_end(sample_plan_data):
    def edit(d):
        second = dict(d["order"]["lots"][0], gpu_names=["gpu1"], order_ref="second")
        d["order"]["lots"].append(second)

    plan = plan_from(sample_plan_data, edit)
    assert window(plan).hours == 72
    assert plan.gpu_names() == ["gpu0", "gpu1"]


def test_actual_time_comes_from_step_events_and_variance_is_actual_minus_planned(sample_plan_data, tmp_path, event_log, clock):
    plan = plan_from(sample_plan_data, lambda d: d.update(schedule=steps(("prep", "human", 3, ()), ("train", "gpu0", 10, ("prep",)))))
    log = event_log("campaign.jsonl")
    log.step_start("prep")
    clock.hours(4.5)
    log.step_end("prep")
    log.step_start("train")
    clock.hours(9)
    log.step_end("train")
    report = reconcile(plan, ingest(tmp_path / "logs"))
    by_id = {s.step.id: s for s in report.steps}
    assert by_id["prep"].actual.hours == pytest.approx(4.5)
    assert by_id["prep"].variance_hours == pytest.approx(1.5)
    assert by_id["train"].variance_hours == pytest.approx(-1)
    assert report.actual_hours == pytest.approx(13.5)
    assert report.unused_hours == pytest.approx(72 - 13.5)
    assert report.overrun_hours == 0


def test_actual_time_falls_back_to_the_runs_matched_by_glob(sample_plan_data, tmp_path, event_log, clock):
    def edit(d):
        d["schedule"] = {"steps": [{"id": "train", "resource": "gpu0", "hours": 5, "runs": ["r16-*"]}]}

    plan = plan_from(sample_plan_data, edit)
    first = event_log("r16-1.jsonl", run="r16-1")
    first.run_start()
    clock.hours(2)
    first.metric(step=10, loss=1.0)  # killed here: no run_end
    clock.hours(1)
    second = event_log("r16-2.jsonl", run="r16-2")
    second.run_start(resumes="r16-1")
    clock.hours(3)
    second.run_end()
    event_log("other.jsonl", run="other-1").run_start()
    step = reconcile(plan, ingest(tmp_path / "logs")).steps[0]
    assert step.actual.hours == pytest.approx(5)  # 2 h + 3 h, the 1 h gap is not work
    assert step.actual.basis == "runs r16-1, r16-2"
    assert step.actual.open_ended


def test_a_step_with_no_events_and_no_runs_is_not_measured(sample_plan_data, tmp_path):
    (tmp_path / "logs").mkdir()
    report = reconcile(plan_from(sample_plan_data), ingest(tmp_path / "logs"))
    assert all(s.actual.hours is None for s in report.steps)
    assert report.actual_hours is None and report.unused_hours is None


def test_a_run_that_ends_before_it_starts_counts_no_time_and_is_reported(sample_plan_data, tmp_path, event_log, clock):
    from reportgen.analysis import analyse

    plan = plan_from(sample_plan_data, lambda d: d.update(schedule={"steps": [{"id": "t", "resource": "gpu0", "hours": 2, "runs": ["r-*"]}]}))
    log = event_log("r.jsonl", run="r-1")
    clock.hours(5)
    log.run_start()
    clock.hours(-3)
    log.run_end()
    analysis = analyse(plan, ingest(tmp_path / "logs"))
    assert analysis.schedule.steps[0].actual.hours is None
    assert analysis.schedule.actual_hours is None
    assert any("ends" in p.message and "before it starts" in p.message for p in analysis.problems)


def test_the_campaign_span_counts_only_steps_with_a_measured_time(sample_plan_data, tmp_path, event_log, clock):
    plan = plan_from(sample_plan_data, lambda d: d.update(schedule=steps(("a", "cpu", 1, ()), ("b", "cpu", 1, ()))))
    log = event_log("campaign.jsonl")
    log.step_start("a")
    clock.hours(2)
    log.step_end("a")
    clock.hours(5)
    log.step_start("b")  # never ended
    report = reconcile(plan, ingest(tmp_path / "logs"))
    assert report.actual_hours == pytest.approx(2)
