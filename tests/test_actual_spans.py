"""How long steps really took (R5, R6, R16), from step events or from the runs a step names, and the
actual span against the 72 h window of the sample's lot (2026-11-02 09:00 JST to 11-05 09:00)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from conftest import JST, SAMPLE_PLAN

from reportgen.build import prepare
from reportgen.events import EventLog


def at(day: int, hour: int) -> datetime:
    return datetime(2026, 11, day, hour, 0, tzinfo=JST)


class Clock:
    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def steps(report: dict) -> dict[str, dict]:
    return {s["id"]: s for s in report["schedule"]["steps"]}


@pytest.mark.parametrize(("end", "actual", "unused", "overrun"), [
    (at(5, 17), 80.0, 0.0, 8.0),  # 80 h against 72 h: 8 h over, nothing unused (never a negative unused figure)
    (at(4, 9), 48.0, 24.0, 0.0),  # counter-example: R6's 48 h leave 24 h unused
])
def test_an_actual_span_longer_than_the_window_is_an_overrun_and_leaves_nothing_unused(tmp_path, end, actual, unused, overrun):
    clock = Clock(at(2, 9))
    log = EventLog(tmp_path / "logs" / "campaign" / "events.jsonl", clock=clock)
    log.step_start("prep-env")
    clock.now = end
    log.step_end("prep-env")
    schedule = prepare(tmp_path / "logs", SAMPLE_PLAN).report["schedule"]
    assert (schedule["actual_hours"], schedule["unused_hours"], schedule["overrun_hours"]) == (actual, unused, overrun)


def test_a_run_inside_another_of_the_same_step_does_not_shorten_its_span(tmp_path):
    # control-1 runs 10:00-14:00; control-2 runs 11:00-12:00, inside it: the step took 4 h, not 1 + 2 or 2.
    logs: Path = tmp_path / "logs"
    clock = Clock(at(2, 10))
    outer = EventLog(logs / "runs" / "control-1" / "events.jsonl", run="control-1", clock=clock)
    inner = EventLog(logs / "runs" / "control-2" / "events.jsonl", run="control-2", clock=clock)
    outer.run_start(config={"prompt": "a"}, variant="control")
    clock.now = at(2, 11)
    inner.run_start(config={"prompt": "b"}, variant="control")
    clock.now = at(2, 12)
    inner.run_end(status="completed")
    clock.now = at(2, 14)
    outer.run_end(status="completed")
    step = steps(prepare(logs, SAMPLE_PLAN).report)["control-preds"]
    assert (step["actual_hours"], step["actual_basis"], step["actual_start"], step["actual_end"]) == (
        4.0, "runs control-1, control-2", "2026-11-02T10:00:00+09:00", "2026-11-02T14:00:00+09:00")
    assert step["variance_hours"] == -4.0  # 4 h against the 8 h planned


@pytest.mark.parametrize(("starts", "hours", "start"), [
    ((at(2, 9), at(2, 10)), 3.0, "2026-11-02T09:00:00+09:00"),  # a second start while open: the step began at 09:00
    ((at(2, 10),), 2.0, "2026-11-02T10:00:00+09:00"),  # counter-example: one start at 10:00
])
def test_a_step_started_twice_before_its_end_counts_from_its_first_start(tmp_path, starts, hours, start):
    clock = Clock(starts[0])
    log = EventLog(tmp_path / "logs" / "campaign" / "events.jsonl", clock=clock)
    for when in starts:
        clock.now = when
        log.step_start("prep-env")
    clock.now = at(2, 12)
    log.step_end("prep-env")
    step = steps(prepare(tmp_path / "logs", SAMPLE_PLAN).report)["prep-env"]
    assert (step["actual_hours"], step["actual_start"], step["actual_basis"]) == (hours, start, "step events")
