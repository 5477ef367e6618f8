"""Checkpoints (R11, R12): resume state and how it was decided, calendar cost, where the files are, the save interval."""

from __future__ import annotations

import copy
import math
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.analysis import analyse
from reportgen.analysis.interval import daly, save_interval, young
from reportgen.build import prepare
from reportgen.ingest import ingest
from reportgen.model import Evidence
from reportgen.plan.schema import Plan

FIXTURES = Path(__file__).parent / "fixtures" / "formats"
REQUIRED = ["model", "optimizer", "scheduler", "rng", "progress"]


@pytest.fixture(scope="module")
def sample() -> dict:
    return prepare(SAMPLE_LOGS, SAMPLE_PLAN).report


def test_young_for_30_s_saves_and_6_h_between_interruptions_is_1138_s_with_daly_beside():
    assert round(young(30, 6 * 3600)) == 1138  # about 19 minutes
    assert daly(30, 6 * 3600) == pytest.approx(1118.5, abs=0.1)  # the refinement: slightly shorter
    assert daly(7200, 3600) == 3600  # a save costing more than 2M: save once per M


def test_no_interval_is_invented_when_the_save_cost_or_the_interruption_rate_is_unknown():
    unmeasured = save_interval([], [], interruptions=1, gpu_hours=10.0, assumed_mtbi_hours=None, planned_minutes=30)
    assert unmeasured.daly_s is None and unmeasured.recommended_minutes is None
    assert "save cost was never measured" in unmeasured.uncertainties[0]
    no_rate = save_interval([30.0], [Evidence("e", 1)], interruptions=0, gpu_hours=10.0, assumed_mtbi_hours=None,
                            planned_minutes=None)
    assert no_rate.young_s is None and "none was observed in 10.0 GPU h" in no_rate.uncertainties[0]
    assumed = save_interval([30.0, 40.0, 20.0, -5.0, math.inf], [], interruptions=0, gpu_hours=10.0,
                            assumed_mtbi_hours=6.0, planned_minutes=None)
    assert assumed.save_cost_s == 30.0 and assumed.save_count == 3  # a negative or infinite time is no measurement
    assert round(assumed.young_s) == 1138 and "the plan's assumption" in assumed.mtbi_basis
    assert assumed.recommended_minutes == 19.0 and round(assumed.daly_s) == 1119
    observed = save_interval([30.0], [], interruptions=2, gpu_hours=12.0, assumed_mtbi_hours=24.0, planned_minutes=None)
    assert observed.mtbi_hours == 6.0 and "observed: 2 interruptions in 12.0 GPU h" in observed.mtbi_basis
    assert "the plan assumed 24 h" in observed.mtbi_basis and observed.uncertainties == []


def test_sample_checkpoints_carry_costs_reload_tests_and_location(sample):
    checkpoints = sample["checkpoints"]
    items = {(c["run"], c["step"]): c for c in checkpoints["items"]}
    assert len(items) == 14
    restored = items[("lora-r16-1", 1200)]
    assert restored["restore_s"] == 45.2 and restored["resumable"] is True  # restored by lora-r16-2
    # Reloaded in a new process before the resume, as the benchmark CSV records: not the killed run at work.
    assert restored["reload_tested"] and restored["reload_ok"] and restored["reload_new_process"]
    assert {"path": "campaign/checkpoint-bench.csv", "line": 2} in restored["evidence"]
    killed = next(r for r in sample["runs"] if r["id"] == "lora-r16-1")
    assert killed["last_seen_at"] == "2026-11-03T08:43:10+09:00"
    pilot = items[("pilot-1", 300)]
    assert pilot["reload_tested"] and pilot["reload_ok"] and pilot["reload_new_process"]
    assert all(c["location"]["status"] == "transferred" for c in items.values())
    assert checkpoints["not_transferred"] == [] and checkpoints["runs_without_resumable_checkpoint"] == []
    assert "listed in the state of the save logged at runs/pilot-1/events.jsonl:" in pilot["resume_basis"]["rng"]


def test_sample_save_interval_comes_from_the_measured_saves_and_the_observed_interruptions(sample):
    checkpoints = sample["checkpoints"]
    interval = checkpoints["interval"]
    # The 14 saves the sample logged, in seconds: the median C is the mean of the 7th and 8th,
    # (31.7 + 32.1) / 2 = 31.9 s.
    saves = sorted(c["save_s"] for c in checkpoints["items"] if c["save_s"] is not None)
    assert saves == [30.2, 30.4, 30.7, 31.1, 31.5, 31.6, 31.7, 32.1, 32.2, 32.6, 33.0, 34.0, 34.6, 35.6]
    assert interval["saves_measured"] == 14 and interval["save_cost_s"] == 31.9
    # Two interruptions (lora-r16-1 out of memory, eval-all-1 killed) in the runs' 34.5899 GPU h:
    # M = 34.5899 / 2 = 17.29495 h = 62,261.82 s.
    assert sorted(r["id"] for r in sample["runs"] if r["status"] == "interrupted") == ["eval-all-1", "lora-r16-1"]
    assert interval["interruptions"] == 2 and sample["run_time"]["gpu_hours"] == 34.5899
    assert interval["mean_hours_between_interruptions"] == pytest.approx(17.295, abs=1e-3)
    # Young: sqrt(2 x 31.9 x 62,261.82) = sqrt(3,972,304) = 1,993.06 s = 33.2 min.
    assert interval["young_s"] == pytest.approx(1993.06, abs=0.01)
    assert checkpoints["recommended_interval_minutes"] == 33.2
    # Daly: C / 2M = 31.9 / 124,523.64 = 0.00025618; 1,993.06 x (1 + sqrt(0.00025618) / 3 + 0.00025618 / 9) - 31.9
    #     = 1,993.06 x 1.0053638 - 31.9 = 2,003.75 - 31.9 = 1,971.85 s.
    assert interval["daly_s"] == pytest.approx(1971.85, abs=0.01)
    assert checkpoints["interval_basis"].startswith("Young (1974)") and "median of 14 measured saves" in checkpoints["interval_basis"]
    assert "Daly's (2006) refinement gives" in checkpoints["interval_basis"]
    assert interval["planned_minutes"] == 30


def test_sample_calendar_adds_up_per_run_and_in_total(sample):
    calendar = sample["checkpoints"]["calendar"]
    for row in calendar["runs"]:
        parts = [row[k] for k in ("save_hours", "transfer_hours", "restore_hours", "reload_test_hours") if row[k] is not None]
        assert row["total_hours"] == pytest.approx(sum(parts), abs=1e-9)  # as shown, to the last digit
    assert calendar["total_hours"] == pytest.approx(sum(r["total_hours"] for r in calendar["runs"]), abs=1e-9)
    by_run = {r["run"]: r for r in calendar["runs"]}
    assert by_run["lora-r16-2"]["restore_hours"] == pytest.approx(45.2 / 3600, abs=1e-4)  # the resuming run spent it


def test_trainer_checkpoints_are_resumable_and_the_final_adapter_folder_is_not(sample_plan_data):
    analysis = analyse(Plan.model_validate(sample_plan_data), ingest(FIXTURES / "hf"))
    checks = {(c.step, c.final): c for c in analysis.checkpoints.by_run["hf-clean"]}
    last = checks[(30, False)]
    assert last.resumable(REQUIRED) is True
    assert last.resume_basis["optimizer"] == "optimizer.pt present"
    assert last.resume_basis["rng"].startswith("rng_state") and last.resume_basis["scaler"].startswith("no scaler.pt")
    final = checks[(30, True)]
    assert final.path == "hf-clean" and final.resume_state["model"] is True
    assert final.resumable(REQUIRED) is False and final.lacking(REQUIRED) == ["optimizer", "scheduler", "rng"]
    assert final.resume_basis["optimizer"] == "no optimizer.pt"
    # A killed run has no final folder: its last checkpoint is what resumes it.
    assert all(not c.final for c in analysis.checkpoints.by_run["hf-killed"])


def test_lightning_checkpoint_resume_state_says_what_decided_it(sample_plan_data):
    analysis = analyse(Plan.model_validate(sample_plan_data), ingest(FIXTURES / "lightning"))
    first = analysis.checkpoints.by_run["pl-clean/version_0"][0]
    assert first.resume_state["optimizer"] is True and first.resume_basis["optimizer"] == "key optimizer_states"
    assert first.resume_state["rng"] is False and "only through a callback" in first.resume_basis["rng"]
    assert first.resume_basis["data_position"] == "saved mid-epoch without the data loader's state"


def test_a_checkpoint_not_copied_off_before_the_lot_ends_is_listed(sample_plan_data, tmp_path, event_log, clock):
    log = event_log("r.jsonl", run="control-1")
    log.run_start(config={})
    clock.hours(2)
    log.checkpoint_save(step=10, path="ckpt/control-1/checkpoint-10", seconds=30.0, state=REQUIRED)
    log.checkpoint_transfer(path="ckpt/control-1/checkpoint-10", seconds=40.0, destination="bucket")
    clock.hours(1)
    log.checkpoint_save(step=20, path="ckpt/control-1/checkpoint-20", seconds=31.0, state=REQUIRED)
    clock.hours(1)
    log.checkpoint_save(step=30, path="ckpt/control-1/checkpoint-30", seconds=29.0, state=["model"])
    clock.at += timedelta(days=3)  # past the 3-day lot
    log.checkpoint_transfer(path="ckpt/control-1/checkpoint-30", seconds=45.0, destination="bucket")
    log.run_end(status="completed", step=30)
    data = copy.deepcopy(sample_plan_data)
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(data))
    report = prepare(tmp_path / "logs", plan).report
    status = {c["step"]: c["location"]["status"] for c in report["checkpoints"]["items"]}
    assert status == {10: "transferred", 20: "not_transferred", 30: "transferred_after_lot_end"}
    assert [(c["step"], c["status"]) for c in report["checkpoints"]["not_transferred"]] == [
        (20, "not_transferred"), (30, "transferred_after_lot_end")]
    assert report["checkpoints"]["items"][2]["resumable"] is False


def test_a_negative_or_non_finite_duration_is_a_damaged_line(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "e.jsonl").write_text(
        '{"ts":"2026-11-02T10:00:00Z","type":"checkpoint_save","run":"r","step":1,"path":"c/1","seconds":-3}\n'
        '{"ts":"2026-11-02T10:01:00Z","type":"checkpoint_save","run":"r","step":2,"path":"c/2","seconds":NaN}\n'
        '{"ts":"2026-11-02T10:02:00Z","type":"checkpoint_save","run":"r","step":3,"path":"c/3","seconds":31.5}\n'
        # Two of these would sum to infinity: a duration over a year is no record of a GPU rental.
        '{"ts":"2026-11-02T10:03:00Z","type":"checkpoint_save","run":"r","step":4,"path":"c/4","seconds":1.7976931348623157e308}\n')
    (logs / "bench.csv").write_text("checkpoint,operation,time,seconds,ok,host,process\n"
                                    "c/3,transfer,2026-11-02T10:05:00Z,1e300,true,a,1\nc/3,transfer,2026-11-02T10:06:00Z,40,true,a,1\n")
    campaign = ingest(logs)
    info = next(i for i in campaign.inputs if i.path == "e.jsonl")
    assert info.skipped == 3 and [p.line for p in info.problems] == [1, 2, 4]
    assert "a duration in seconds" in info.problems[0].message
    assert "over a year: not a duration from this campaign" in info.problems[2].message
    bench = next(i for i in campaign.inputs if i.path == "bench.csv")
    assert [p.line for p in bench.problems] == [2] and "over a year" in bench.problems[0].message
    assert [(op.op, op.seconds) for op in campaign.checkpoint_ops] == [("save", 31.5), ("transfer", 40.0)]


def bench_logs(tmp_path, event_log, clock, records: str, name: str) -> Path:
    log = event_log("runs/r-1/events.jsonl", run="r-1")
    log.run_start(config={})
    clock.hours(1)
    log.checkpoint_save(step=100, path="ckpt/r-1/checkpoint-100", seconds=30.0, state=REQUIRED)
    log.run_end(status="completed", step=100)
    (tmp_path / "logs" / name).write_text(records)
    return tmp_path / "logs"


def test_benchmark_records_in_csv_are_attached_to_the_checkpoint_they_name(tmp_path, event_log, clock, sample_plan_data):
    logs = bench_logs(tmp_path, event_log, clock, (
        "checkpoint,operation,time,seconds,bytes,ok,host,process\n"
        "/scratch/ckpt/r-1/checkpoint-100,save,2026-11-02T11:00:00+09:00,28.5,1342177280,,gpu-a,4121\n"
        "/scratch/ckpt/r-1/checkpoint-100,transfer,2026-11-02T11:02:00+09:00,41.0,1342177280,true,gpu-a,4121\n"
        "/scratch/ckpt/r-1/checkpoint-100,reload_test,2026-11-02T11:20:00+09:00,95.0,,true,gpu-a,5230\n"
        "/scratch/ckpt/r-1/checkpoint-100,restore,not a time,12,,,gpu-a,5230\n"
        "/scratch/ckpt/elsewhere/checkpoint-7,save,2026-11-02T11:30:00+09:00,33.0,,,gpu-a,4121\n"), "bench.csv")
    campaign = ingest(logs)
    info = next(i for i in campaign.inputs if i.path == "bench.csv")
    assert info.format == "checkpoint-bench" and info.records == 4 and info.skipped == 1
    assert info.problems[0].line == 5 and "ISO 8601" in info.problems[0].message
    analysis = analyse(Plan.model_validate(sample_plan_data), campaign)
    check = analysis.checkpoints.by_run["r-1"][0]
    assert [op.seconds for op in check.saves] == [30.0]  # the logged save; the benchmark save is the same checkpoint
    assert check.transfers[0].seconds == 41.0 and check.transfers[0].run == "r-1"
    test = check.reload_tests[0]
    assert test.ok and test.new_process is True  # process 5230 reloaded what process 4121 saved
    # The save of an unknown checkpoint is counted in the save cost but attributed to no run, and said so.
    assert analysis.checkpoints.interval.save_count == 3
    assert any("elsewhere/checkpoint-7" in p.message and "give the record a 'run'" in p.message for p in analysis.problems)


def test_benchmark_records_in_jsonl_with_bad_lines_reported(tmp_path, event_log, clock, sample_plan_data):
    logs = bench_logs(tmp_path, event_log, clock, (
        '{"checkpoint": "ckpt/r-1/checkpoint-100", "operation": "reload_test", "time": "2026-11-02T02:00:00Z", "ok": false, '
        '"seconds": 80, "new_process": true, "message": "optimizer state does not match"}\n'
        '{"checkpoint": "ckpt/r-1/checkpoint-100", "operation": "reload_test", "time": "2026-11-02T02:10:00Z"}\n'
        '{"checkpoint": "ckpt/r-1/checkpoint-100", "operation": "defrag", "time": "2026-11-02T02:10:00Z"}\n'
        '{"checkpoint": "ckpt/r-1/checkpoint-100", "operation": "restore", "time": "2026-11-02T02:20:00Z", "seconds": -1}\n'
        '{"checkpoint": "ckpt/r-1/checkpoint-100", "operation": "resto'), "bench.jsonl")
    campaign = ingest(logs)
    info = next(i for i in campaign.inputs if i.path == "bench.jsonl")
    assert info.records == 1 and info.skipped == 4
    assert [p.line for p in info.problems] == [2, 3, 4, 5]
    assert "needs 'ok'" in info.problems[0].message and "the last line is cut off" in info.problems[3].message
    analysis = analyse(Plan.model_validate(sample_plan_data), campaign)
    check = analysis.checkpoints.by_run["r-1"][0]
    assert check.resumable(REQUIRED) is False and "does not match" in check.failed_reload().message


def test_thirty_second_saves_and_a_six_hour_assumption_recommend_young_1138_s_with_daly_beside(
        tmp_path, event_log, clock, sample_plan_data, write_plan):
    log = event_log("r.jsonl", run="lora-r16-1")
    log.run_start(config={})
    for step in (100, 200, 300):
        clock.hours(0.5)
        log.checkpoint_save(step=step, path=f"ckpt/lora-r16-1/checkpoint-{step}", seconds=30.0, state=REQUIRED)
    log.run_end(status="completed", step=300)

    def edit(data):
        data["checkpoints"]["mean_hours_between_interruptions"] = 6

    report = prepare(tmp_path / "logs", write_plan(sample_plan_data, edit)).report
    unknown = prepare(tmp_path / "logs", write_plan(sample_plan_data, lambda d: d["checkpoints"].pop(
        "mean_hours_between_interruptions"), name="no-assumption.yaml")).report
    assert unknown["checkpoints"]["recommended_interval_minutes"] is None
    assert any("mean time between interruptions is unknown" in u for u in unknown["uncertainties"])
    interval = report["checkpoints"]["interval"]
    assert round(interval["young_s"]) == 1138 and round(interval["daly_s"]) == 1119
    assert report["checkpoints"]["recommended_interval_minutes"] == 19.0
    assert "no interruption was observed" in interval["mtbi_basis"]
