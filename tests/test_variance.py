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
            assert cause["hours"] > 0 and cause["evidence"], (step["id"], cause)


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
