"""A run whose end no source records is `unknown` (docs/stops.md, "Run status", row 6): it is not
shown or counted as stopped, and its variant is `not_evaluated` — not passed on its values, not
`stopped` — until evidence says how it ended."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from conftest import JST, SAMPLE_PLAN, ticking

from reportgen.build import prepare
from reportgen.events import EventLog


def one_run(logs: Path, end: str | None) -> dict:
    """lora-r64-1 (variant lora-r64): started 10:10, metrics at 10:20, 10:30, 10:40, eval_rougeL 0.35
    (over the 0.32 threshold) at 10:50, then the given run_end (or none) at 11:00."""
    clock = ticking(datetime(2026, 11, 2, 10, 0, tzinfo=JST))
    log = EventLog(logs / "runs" / "lora-r64-1" / "events.jsonl", run="lora-r64-1", clock=clock)
    log.run_start(config={"rank": 64}, variant="lora-r64")
    for step in (10, 20, 30):
        log.metric(step=step, loss=1.0)
    log.eval(step=30, metrics={"eval_rougeL": 0.35})
    if end is not None:
        log.run_end(status=end, step=30)
    return prepare(logs, SAMPLE_PLAN).report


def run_and_variant(report: dict) -> tuple[dict, dict]:
    return (next(r for r in report["runs"] if r["id"] == "lora-r64-1"),
            next(v for v in report["variants"] if v["id"] == "lora-r64"))


def test_a_run_without_an_end_is_unknown_not_stopped(tmp_path):
    report = one_run(tmp_path / "logs", end=None)
    run, variant = run_and_variant(report)
    assert (run["status"], run["stopped_by"]) == ("unknown", None)
    assert run["status_reason"].startswith("no source records how it ended: it logged its start but no end")
    assert report["stops"] == []
    # Its GPU time (10:10 to 10:50, 40 min = 0.6667 h) is counted under unknown, not under stopped.
    assert report["run_time"]["gpu_hours_by_status"] == {"unknown": 0.6667}
    # Its variant is not decided on its values, nor as if it had stopped.
    assert (variant["verdict"], variant["value"]) == ("not_evaluated", 0.35)
    assert variant["reason"] == ("no run of it that reached its end carries a value of eval_rougeL "
                                 "(lora-r64-1: unknown)")


@pytest.mark.parametrize(("end", "status", "stopped_by", "verdict"), [
    ("completed", "completed", None, "passed"),  # the same values, once the run says it ended
    ("stopped", "stopped", "script", "not_evaluated"),  # a stopped run's values are not approved (R10)
])
def test_counter_examples_a_logged_end_decides(tmp_path, end, status, stopped_by, verdict):
    report = one_run(tmp_path / "logs", end=end)
    run, variant = run_and_variant(report)
    assert (run["status"], run["stopped_by"], variant["verdict"]) == (status, stopped_by, verdict)
    assert report["run_time"]["gpu_hours_by_status"] == {status: 0.8333}  # 10:10 to the end at 11:00


CUT_LINE = '{"ts":"2026-11-02T11:00:00+09:00","type":"metric","run":"lora-r16-1","st'


def started(path: Path, runs: list[str]) -> None:
    """Each run logs its start and one metric row in `path`; then the file is cut off mid-line."""
    clock = ticking(datetime(2026, 11, 2, 10, 0, tzinfo=JST))
    for run in runs:
        log = EventLog(path, run=run, clock=clock)
        log.run_start(config={"run": run}, variant="lora-r16")
        log.metric(step=10, loss=1.0)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(CUT_LINE)


def test_a_cut_off_file_shared_by_two_runs_interrupts_neither(tmp_path):
    """Its writer could have been either run's process: the cut tells nothing about one of them."""
    logs = tmp_path / "logs"
    started(logs / "events.jsonl", ["lora-r16-1", "lora-r16-2"])
    statuses = {r["id"]: r["status"] for r in prepare(logs, SAMPLE_PLAN).report["runs"]}
    assert statuses == {"lora-r16-1": "unknown", "lora-r16-2": "unknown"}


def test_counter_example_a_cut_off_file_of_one_run_interrupts_it(tmp_path):
    logs = tmp_path / "logs"
    started(logs / "runs" / "lora-r16-1" / "events.jsonl", ["lora-r16-1"])
    [run] = prepare(logs, SAMPLE_PLAN).report["runs"]
    assert (run["id"], run["status"], run["status_reason"]) == (
        "lora-r16-1", "interrupted", "runs/lora-r16-1/events.jsonl is cut off mid-record: its writer was stopped")
